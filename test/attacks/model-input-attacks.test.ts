import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import type { ToolResult } from 'toolgate';
import type { DecisionEnvelope } from 'toolgate/protocol';
import { ToolGateClient } from 'toolgate';
import { maxArgumentsBytes, maxArgumentsDepth, signValue } from 'toolgate/protocol';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// What a model (or a harness passing its output on) can put in a proposal: arguments nested to
// any depth, and names that a plain JavaScript object would answer from its prototype.

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

/** Names a plain object answers from Object.prototype. */
const prototypeNames = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

/** `{"order_id":…,"amount_cents":[[…1…]],…}`: a refund whose amount is nested `depth` arrays deep. */
const deepRefundText = (depth: number) =>
  `{"order_id":"ORD-1001","amount_cents":${'['.repeat(depth)}1${']'.repeat(depth)},"currency":"BRL","reason":"damaged"}`;

/** Expects a rejection that reached no backend, changed nothing, and was audited once. */
async function expectHarmlessRejection(result: ToolResult, code: string, requestsBefore: number) {
  expect(result).toMatchObject({ ok: false, code, effect: 'none' });
  expect(result.callId).toMatch(/^tc-(?:[a-zA-Z][\w-]*-)?[0-9a-f]{64}$/);
  expect(await harness.orders.api.businessRequestCount()).toBe(requestsBefore);
  expect(await harness.orders.api.refundCount()).toBe(0);
  expect(await harness.audit.recordsOf(result.callId)).toEqual([
    expect.objectContaining({ code, effect: 'none' }),
  ]);
}

describe('arguments nested to any depth', () => {
  it('answers 3,000 levels of nesting (text, about 6 KB) with INVALID_JSON naming the limit, and audits it', async () => {
    const before = await harness.orders.api.businessRequestCount();
    const result = await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: deepRefundText(3_000),
    });
    await expectHarmlessRejection(result, 'INVALID_JSON', before);
    expect(result.message).toContain(`the limit is ${maxArgumentsDepth}`);
  });

  it('answers nesting up to the byte cap with INVALID_JSON, as text and as an object', async () => {
    const before = await harness.orders.api.businessRequestCount();
    const depth = Math.floor((maxArgumentsBytes - 100) / 2);
    const text = await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: deepRefundText(depth),
    });
    await expectHarmlessRejection(text, 'INVALID_JSON', before);
    expect(text.message).toContain(`nested ${depth + 1} levels deep`);

    let amount: unknown = 1;
    for (let level = 0; level < 200_000; level++) amount = [amount];
    const object = await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: { order_id: 'ORD-1001', amount_cents: amount, currency: 'BRL', reason: 'damaged' },
    });
    await expectHarmlessRejection(object, 'INVALID_JSON', before);
    expect(object.message).toContain(`more than ${maxArgumentsDepth} levels deep`);
  });

  it(`still validates arguments ${maxArgumentsDepth} levels deep: the limit does not reject honest input early`, async () => {
    const result = await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: deepRefundText(maxArgumentsDepth - 1),
    });
    expect(result).toMatchObject({ code: 'INVALID_ARGUMENTS', effect: 'none' });
    expect(result.message).toContain('amount_cents: must be');
  });

  it('answers a cyclic arguments object with INVALID_JSON instead of throwing', async () => {
    const cyclic: Record<string, unknown> = { order_id: 'ORD-1001' };
    cyclic.self = cyclic;
    const before = await harness.orders.api.businessRequestCount();
    const result = await harness.call({ caller: 'test-refunder', tool: 'refund_order', arguments: cyclic });
    await expectHarmlessRejection(result, 'INVALID_JSON', before);
  });
});

describe('names that a plain object would answer from its prototype', () => {
  it.each(prototypeNames)(
    'answers a tool named %s with UNKNOWN_TOOL, and it opens no circuit',
    async (name) => {
      const session = harness.newSession();
      const before = await harness.orders.api.businessRequestCount();
      const result = await harness.call({ session, caller: 'support-bot', tool: name, arguments: '{}' });
      await expectHarmlessRejection(result, 'UNKNOWN_TOOL', before);
      expect(result.message).toContain(`no tool named "${name}"`);
      const stats = await harness.client.sessionStats(session);
      expect(stats).toMatchObject({ steps: 1, openCircuits: {} });
      expect(stats.codeCounts).toEqual({ UNKNOWN_TOOL: 1 });
      // A read right after it is admitted and runs: nothing of the session was disturbed.
      const read = await harness.call({
        session,
        caller: 'support-bot',
        tool: 'get_order',
        arguments: '{"order_id":"ORD-1001"}',
      });
      expect(read.code).toBe('OK');
    },
  );

  it('opens a circuit for a tool named __proto__ only after three failures, like any other name', async () => {
    const session = harness.newSession();
    const codes: string[] = [];
    for (const body of ['{}', '{"a":1}', '{"b":2}', '{"c":3}']) {
      codes.push(
        (await harness.call({ session, caller: 'support-bot', tool: '__proto__', arguments: body })).code,
      );
    }
    expect(codes).toEqual(['UNKNOWN_TOOL', 'UNKNOWN_TOOL', 'UNKNOWN_TOOL', 'CIRCUIT_OPEN']);
    const stats = await harness.client.sessionStats(session);
    expect(Object.keys(stats.openCircuits)).toEqual(['__proto__']);
    expect(stats.openCircuits.__proto__).toMatchObject({ code: 'UNKNOWN_TOOL', count: 3 });
  });

  it.each(prototypeNames)(
    'answers a caller named %s with UNAUTHENTICATED_CALLER, even signing with a key of its own',
    async (name) => {
      const own = new ToolGateClient({
        client: harness.temporal,
        tools: ordersContracts,
        taskQueue: harness.taskQueue,
        callerKey: () => generateKeyPairSync('ed25519').privateKey,
      });
      const before = await harness.orders.api.businessRequestCount();
      for (const client of [harness.client, own]) {
        const result = await client.call({
          session: harness.newSession(),
          caller: name,
          tool: 'get_order',
          arguments: '{"order_id":"ORD-1001"}',
        });
        expect(result).toMatchObject({ ok: false, code: 'UNAUTHENTICATED_CALLER', effect: 'none' });
      }
      expect(await harness.orders.api.businessRequestCount()).toBe(before);
    },
  );

  it.each(prototypeNames)('refuses a decision by an approver named %s as APPROVER_UNKNOWN', async (name) => {
    const pending = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(pending.code).toBe('APPROVAL_PENDING');
    const approval = (await harness.admin.show(pending.callId))?.approval;
    if (!approval) throw new Error('the refund has no open approval round');
    const envelope: DecisionEnvelope = {
      callId: pending.callId,
      runId: approval.runId,
      nonce: approval.nonce,
      argsDigest: approval.argsDigest,
      previewDigest: approval.previewDigest,
      contractDigest: approval.contractDigest,
      decision: 'approve',
      approver: name,
      reason: 'looks fine',
      issuedAt: new Date().toISOString(),
    };
    const privateKey = generateKeyPairSync('ed25519').privateKey;
    const outcome = await harness.admin.send({
      callId: pending.callId,
      decision: { envelope, signature: signValue({ kind: 'decision', value: envelope, privateKey }) },
    });
    expect(outcome).toMatchObject({ accepted: false, code: 'APPROVER_UNKNOWN' });
    expect((await harness.admin.show(pending.callId))?.approval).toMatchObject({
      state: 'pending',
      approvals: [],
    });
    expect(await harness.orders.api.refundCount()).toBe(0);
  });

  it('answers argument fields named like prototype members as unknown fields', async () => {
    const before = await harness.orders.api.businessRequestCount();
    const result = await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments:
        '{"order_id":"ORD-1001","amount_cents":100,"currency":"BRL","reason":"damaged","__proto__":{"amount_cents":1},"constructor":1}',
    });
    await expectHarmlessRejection(result, 'INVALID_ARGUMENTS', before);
    expect(result.message).toContain('__proto__: unknown field');
    expect(result.message).toContain('constructor: unknown field');
  });

  it('treats session ids and intent ids named like prototype members as ordinary ids', async () => {
    for (const name of prototypeNames) {
      const read = await harness.client.call({
        session: `${name}-${harness.newSession()}`,
        caller: 'support-bot',
        tool: 'get_order',
        arguments: '{"order_id":"ORD-1002"}',
      });
      expect(read.code).toBe('OK');
    }
    const refund = await harness.client.call({
      session: '__proto__',
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 100 }),
      intentId: `constructor-${harness.newSession()}`,
    });
    expect(refund).toMatchObject({ ok: true, effect: 'applied' });
    expect(await harness.orders.api.refundCount()).toBe(1);
  });
});
