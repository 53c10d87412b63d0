import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { explodeSecret } from '../support/test-tool-implementations';
import type { ToolResult } from 'toolgate';
import type { OrdersApiClient } from '../../examples/orders/orders-api-client';
import { refundOrderContract } from '../../examples/orders/orders-contracts';

let harness: ToolGateHarness;

/** Keys whose execution meets another refund that emptied the order after their check passed. */
const drainedBeforeExecution = new Set<string>();

useHarness((started) => (harness = started), {
  ordersApi: (api) => ({
    ...api,
    refund: async (request) => {
      if (drainedBeforeExecution.delete(request.idempotencyKey)) await refundTheRest(api, request.orderId);
      return api.refund(request);
    },
  }),
});

const refunder = 'test-refunder';

/** Another refund, with a credential of its own, takes everything still refundable on the order. */
async function refundTheRest(api: OrdersApiClient, orderId: string): Promise<void> {
  const order = await api.getOrder({ orderId });
  const idempotencyKey = `other-${randomUUID()}`;
  const args = {
    order_id: orderId,
    amount_cents: order.refundableCents,
    currency: order.currency,
    reason: 'customer_request' as const,
  };
  const credential = await harness.minter.mint({
    contract: refundOrderContract,
    caller: refunder,
    callId: idempotencyKey,
    runId: 'another-run',
    args,
  });
  await api.refund({
    orderId,
    amountCents: args.amount_cents,
    currency: args.currency,
    reason: args.reason,
    idempotencyKey,
    credential,
  });
}

/** The run's final record in the audit store says what the model was told. */
async function expectAudited(result: ToolResult): Promise<void> {
  const records = await harness.audit.recordsOf(result.callId);
  expect(records.at(-1)).toMatchObject({ code: result.code, effect: result.effect, ok: result.ok });
}

async function appliedRefunds(orderId?: string): Promise<number> {
  return harness.orders.api.refundCount(orderId ? { orderId } : {});
}

describe('validation never lets a bad proposal reach the backend', () => {
  it.each([
    [
      'a float amount',
      { amount_cents: 25.9 },
      'amount_cents: must be an integer, got 25.9 (Refund amount in minor units',
    ],
    ['an amount as a string', { amount_cents: '2590' }, 'amount_cents: must be a number, got string "2590"'],
    ['a negative amount', { amount_cents: -100 }, 'amount_cents: expected number to be >0, got -100'],
    ['a currency outside the enum', { currency: 'EUR' }, 'currency: must be one of "BRL", "USD"'],
    ['an invented order id format', { order_id: '1001' }, 'order_id: must match /^ORD-\\d{4}$/, got "1001"'],
    ['an extra field', { force: true }, 'force: unknown field; remove it'],
    ['a missing reason', { reason: undefined }, 'reason: required; it is missing'],
  ])('rejects %s with INVALID_ARGUMENTS naming the field', async (_case, overrides, expected) => {
    const result = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(overrides),
    });
    expect(result).toMatchObject({
      ok: false,
      code: 'INVALID_ARGUMENTS',
      effect: 'none',
      tool: 'refund_order',
    });
    expect(result.message).toContain(expected);
    await expectAudited(result);
    expect(await appliedRefunds()).toBe(0);
  });

  it('lists every failing field at once, with an enum’s accepted values in data', async () => {
    const result = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: '{"order_id":"ORD-1001","amount_cents":25.9,"currency":"EUR"}',
    });
    expect(result.code).toBe('INVALID_ARGUMENTS');
    const issues = (result.data as { issues: { field: string; acceptedValues?: string[] }[] }).issues;
    expect(issues.map((issue) => issue.field).sort()).toEqual(['amount_cents', 'currency', 'reason']);
    expect(issues.find((issue) => issue.field === 'currency')?.acceptedValues).toEqual(['BRL', 'USD']);
  });

  it('rejects broken JSON and a JSON array with INVALID_JSON', async () => {
    const broken = await harness.call({
      caller: refunder,
      tool: 'get_order',
      arguments: '{"order_id": "ORD-1001"',
    });
    expect(broken).toMatchObject({ ok: false, code: 'INVALID_JSON', effect: 'none' });
    const array = await harness.call({ caller: refunder, tool: 'refund_order', arguments: '[1, 2]' });
    expect(array).toMatchObject({ ok: false, code: 'INVALID_JSON', effect: 'none' });
    expect(array.message).toContain('not a JSON object');
    expect(await appliedRefunds()).toBe(0);
  });

  it('rejects arguments over 256 KiB with INVALID_JSON and still audits the proposal', async () => {
    const huge = JSON.stringify({ order_id: 'ORD-1001', padding: 'x'.repeat(300 * 1024) });
    const result = await harness.call({ caller: refunder, tool: 'get_order', arguments: huge });
    expect(result).toMatchObject({ ok: false, code: 'INVALID_JSON' });
    expect(result.message).toContain('262144');
    expect((await harness.audit.recordsOf(result.callId)).map((record) => record.code)).toEqual([
      'INVALID_JSON',
    ]);
  });

  it('answers an unknown tool with UNKNOWN_TOOL and the tools the caller may use', async () => {
    const result = await harness.call({ caller: 'readonly-bot', tool: 'delete_order', arguments: '{}' });
    expect(result).toMatchObject({
      ok: false,
      code: 'UNKNOWN_TOOL',
      effect: 'none',
      data: { available: ['get_order'] },
    });
    const longName = await harness.call({
      caller: refunder,
      tool: 'get_order'.padEnd(500, 'x'),
      arguments: '{}',
    });
    expect(longName.code).toBe('UNKNOWN_TOOL');
  });

  it('answers a tool outside the caller’s allowlist with TOOL_NOT_ALLOWED and applies nothing', async () => {
    const result = await harness.call({
      caller: 'readonly-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(result).toMatchObject({ ok: false, code: 'TOOL_NOT_ALLOWED', effect: 'none' });
    const stranger = await harness.call({
      caller: 'nobody',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1001"}',
    });
    // A caller the policy does not know has no key to sign with: refused before the allowlist.
    expect(stranger.code).toBe('UNAUTHENTICATED_CALLER');
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('policy', () => {
  it('refuses a refund over the caller’s limit with POLICY_LIMIT before any backend call', async () => {
    const before = await harness.orders.api.businessRequestCount();
    const result = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments({ order_id: 'ORD-1003', amount_cents: 60_000 }),
    });
    expect(result).toMatchObject({ ok: false, code: 'POLICY_LIMIT', effect: 'none' });
    expect(result.message).toContain('tell the user a human agent must handle it');
    expect(await harness.orders.api.businessRequestCount()).toBe(before);
    expect(await appliedRefunds('ORD-1003')).toBe(0);
  });

  it('refuses with PERMISSION_DENIED a refund above the highest level approvals may reach for the caller', async () => {
    const result = await harness.call({
      caller: 'cautious-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments({ order_id: 'ORD-1003', amount_cents: 20_000 }),
    });
    expect(result).toMatchObject({ ok: false, code: 'PERMISSION_DENIED', effect: 'none' });
    expect(result.message).toContain('approvals for cautious-bot go up to "irreversible" only');
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('business rules', () => {
  it.each([
    ['CURRENCY_MISMATCH', { currency: 'USD' }, 'is in BRL, not USD'],
    ['AMOUNT_EXCEEDS_REFUNDABLE', { amount_cents: 12_001 }, 'Only 12000 cents can still be refunded'],
    ['ORDER_NOT_FOUND', { order_id: 'ORD-9999' }, 'ORD-9999'],
  ])('rejects with %s and applies nothing', async (code, overrides, expected) => {
    const result = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(overrides),
    });
    expect(result).toMatchObject({ ok: false, code, effect: 'none' });
    expect(result.message).toContain(expected);
    await expectAudited(result);
    expect(await appliedRefunds()).toBe(0);
  });

  it('answers a read of a missing order with ORDER_NOT_FOUND', async () => {
    const result = await harness.call({
      caller: 'readonly-bot',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-9999"}',
    });
    expect(result).toMatchObject({ ok: false, code: 'ORDER_NOT_FOUND', effect: 'none' });
  });
});

describe('execution and replay', () => {
  it('runs a valid refund once', async () => {
    const result = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(result).toMatchObject({
      ok: true,
      code: 'OK',
      effect: 'applied',
      data: { remaining_refundable_cents: 9410 },
    });
    expect(result.replayed).toBeUndefined();
    expect(await appliedRefunds('ORD-1001')).toBe(1);
    expect((await harness.orders.api.getOrder({ orderId: 'ORD-1001' })).refundedCents).toBe(2590);
  });

  it('replays the same refund proposed twice in a row instead of applying it again', async () => {
    const first = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    const second = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: '{ "reason":"damaged", "currency" : "BRL", "amount_cents":2590, "order_id":"ORD-1001" }',
    });
    expect(second.callId).toBe(first.callId);
    expect(second).toMatchObject({ ok: true, effect: 'applied', replayed: true, data: first.data });
    expect(await appliedRefunds()).toBe(1);
  });

  it('applies one refund when the same proposal arrives five times at once; those past the loop limit are refused', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        harness.call({ caller: refunder, tool: 'refund_order', arguments: harness.refundArguments() }),
      ),
    );
    const applied = results.filter((result) => result.ok);
    expect(applied).toHaveLength(3); // the session's loop limit
    expect(applied.every((result) => result.effect === 'applied')).toBe(true);
    expect(applied.filter((result) => result.replayed !== true)).toHaveLength(1);
    expect(new Set(applied.map((result) => (result.data as { refund_id: string }).refund_id)).size).toBe(1);
    expect(results.filter((result) => result.code === 'LOOP_DETECTED')).toHaveLength(2);
    expect(await appliedRefunds()).toBe(1);
  });

  it('runs the same read again after a refund, and the second read sees it', async () => {
    const read = () =>
      harness.call({ caller: refunder, tool: 'get_order', arguments: '{"order_id":"ORD-1001"}' });
    const before = await read();
    await harness.call({ caller: refunder, tool: 'refund_order', arguments: harness.refundArguments() });
    const after = await read();
    expect(after.callId).toBe(before.callId);
    expect(before.data).toMatchObject({ refunded_cents: 0 });
    expect(after.data).toMatchObject({ refunded_cents: 2590 });
    expect(after.replayed).toBeUndefined();
    expect(await harness.audit.recordsOf(before.callId)).toHaveLength(2);
  });

  it('runs a rejected refund again when it is proposed after the order changed', async () => {
    const big = harness.refundArguments({ amount_cents: 11_000 });
    await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 5000 }),
    });
    const rejected = await harness.call({ caller: refunder, tool: 'refund_order', arguments: big });
    expect(rejected.code).toBe('AMOUNT_EXCEEDS_REFUNDABLE');
    await harness.orders.api.reset(); // the order changes: its refunds are gone
    const again = await harness.call({ caller: refunder, tool: 'refund_order', arguments: big });
    expect(again.callId).toBe(rejected.callId);
    expect(again).toMatchObject({ ok: true, effect: 'applied' });
    expect(again.replayed).toBeUndefined();
    expect(await appliedRefunds()).toBe(1);
  });

  it('treats a refund with a reworded reason as the same refund', async () => {
    const first = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    const reworded = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments({ reason: 'customer_request' }),
    });
    expect(reworded).toMatchObject({ ok: true, callId: first.callId, replayed: true });
    expect(await appliedRefunds()).toBe(1);
  });

  it('refuses an intent id reused with other arguments with IDEMPOTENCY_CONFLICT', async () => {
    const intentId = `confirmation-${Date.now()}`;
    const first = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(),
      intentId,
    });
    expect(first.ok).toBe(true);
    const same = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(),
      intentId,
    });
    expect(same).toMatchObject({ ok: true, replayed: true, callId: first.callId });
    const other = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 3000 }),
      intentId,
    });
    expect(other).toMatchObject({
      ok: false,
      code: 'IDEMPOTENCY_CONFLICT',
      effect: 'none',
      callId: first.callId,
    });
    expect(await appliedRefunds()).toBe(1);
  });
});

describe('faults at the backend', () => {
  const refundCallId = (overrides: Record<string, unknown> = {}) =>
    harness.client.callIdOf({
      session: currentSession(),
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(overrides),
    });
  let session = '';
  const currentSession = () => session;
  const callRefund = () =>
    harness.client.call({
      session,
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });

  beforeEach(() => {
    session = harness.newSession();
  });

  it('reports a refund whose response was lost after the commit as applied, once', async () => {
    await harness.orders.api.setFaults({ idempotencyKey: refundCallId(), loseResponseAfterCommit: 1 });
    const result = await callRefund();
    expect(result).toMatchObject({ ok: true, effect: 'applied' });
    await expectAudited(result);
    expect(await appliedRefunds()).toBe(1);
  });

  it('answers UPSTREAM_UNAVAILABLE with nothing applied when 503s outlast the retries', async () => {
    await harness.orders.api.setFaults({ idempotencyKey: refundCallId(), unavailable: 100 });
    const result = await callRefund();
    expect(result).toMatchObject({ ok: false, code: 'UPSTREAM_UNAVAILABLE', effect: 'none' });
    expect(result.message).toContain('Do not retry now; tell the user');
    await expectAudited(result);
    expect(await appliedRefunds()).toBe(0);
  });

  it('reports applied, with the stored refund, when an attempt committed and later ones got 503s', async () => {
    await harness.orders.api.setFaults({
      idempotencyKey: refundCallId(),
      loseResponseAfterCommit: 1,
      unavailable: 100,
    });
    const result = await callRefund();
    const stored = await harness.orders.api.findRefundByKey({ idempotencyKey: result.callId });
    expect(result).toMatchObject({
      ok: true,
      code: 'OK',
      effect: 'applied',
      data: { refund_id: stored?.refundId },
    });
    expect(result.message).toContain('confirmed it after its response was lost');
    await expectAudited(result);
    expect(await appliedRefunds()).toBe(1);
  });

  it('says the effect is unknown when the backend cannot be asked whether the key was applied', async () => {
    await harness.orders.api.setFaults({
      idempotencyKey: refundCallId(),
      unavailable: 100,
      lookupUnavailable: 100,
    });
    const result = await callRefund();
    expect(result).toMatchObject({ ok: false, code: 'UPSTREAM_UNAVAILABLE', effect: 'unknown' });
    await expectAudited(result);
    expect(await appliedRefunds()).toBe(0);
  });

  it.each([
    ['its answer was lost on every attempt', { loseResponseAfterCommit: 100 }],
    [
      'its answer was lost, then 503s outlasted the retries',
      { loseResponseAfterCommit: 1, unavailable: 100 },
    ],
  ])(
    'answers the backend’s domain code with nothing applied when it refused the refund at execution and %s',
    async (_case, faults) => {
      const callId = refundCallId();
      await harness.orders.api.setFaults({ idempotencyKey: callId, ...faults });
      drainedBeforeExecution.add(callId);
      const result = await callRefund();
      expect(result).toMatchObject({ ok: false, code: 'AMOUNT_EXCEEDS_REFUNDABLE', effect: 'none', callId });
      expect(result.message).toContain('still refundable');
      await expectAudited(result);
      expect(await harness.orders.api.lookupRefundKey({ idempotencyKey: callId })).toMatchObject({
        status: 'refused',
        code: 'AMOUNT_EXCEEDS_REFUNDABLE',
      });
      // The only refund is the other one that emptied the order; this call applied none.
      expect(await harness.orders.api.findRefundByKey({ idempotencyKey: callId })).toBeNull();
      expect(await appliedRefunds()).toBe(1);
    },
  );

  it('succeeds when 503s stop before the retries run out', async () => {
    await harness.orders.api.setFaults({ idempotencyKey: refundCallId(), unavailable: 2 });
    const result = await callRefund();
    expect(result).toMatchObject({ ok: true, effect: 'applied' });
    await expectAudited(result);
    expect(await appliedRefunds()).toBe(1);
  });
});

describe('the pipeline’s own guarantees', () => {
  it('reports OUTPUT_CONTRACT_VIOLATION when a tool answers outside its output schema', async () => {
    const result = await harness.call({ caller: refunder, tool: 'echo_shape', arguments: '{"broken":true}' });
    expect(result).toMatchObject({ ok: false, code: 'OUTPUT_CONTRACT_VIOLATION', effect: 'none' });
    const fine = await harness.call({ caller: refunder, tool: 'echo_shape', arguments: '{"broken":false}' });
    expect(fine).toMatchObject({ ok: true, data: { value: 7 } });
  });

  it('hides an unexpected error’s details from the model behind INTERNAL_ERROR', async () => {
    const result = await harness.call({ caller: refunder, tool: 'explode', arguments: '{}' });
    expect(result).toMatchObject({ ok: false, code: 'INTERNAL_ERROR', effect: 'none' });
    expect(JSON.stringify(result)).not.toContain(explodeSecret);
  });
});

describe('results, audit and the Temporal UI', () => {
  it('returns the recorded result by call id, and CALL_NOT_FOUND for an unknown id', async () => {
    const done = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(await harness.client.result(done.callId, { wait: true })).toEqual(done);
    expect(await harness.client.result(done.callId, { wait: false })).toEqual(done);
    const rejected = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments({ currency: 'USD' }),
    });
    expect(await harness.client.result(rejected.callId, { wait: true })).toEqual(rejected);
    const missing = await harness.client.result('tc-does-not-exist', { wait: true });
    expect(missing).toMatchObject({ ok: false, code: 'CALL_NOT_FOUND' });
  });

  it('appends one audit record per run with the proposal, validated arguments, risk, policy version and timings', async () => {
    const result = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    await harness.call({ caller: refunder, tool: 'refund_order', arguments: harness.refundArguments() }); // replay: no new run
    const records = await harness.audit.recordsOf(result.callId);
    expect(records).toHaveLength(1);
    const [record] = records;
    expect(record).toMatchObject({
      callId: result.callId,
      caller: refunder,
      tool: 'refund_order',
      rawArguments: harness.refundArguments(),
      validatedArguments: { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' },
      riskLevel: 'irreversible',
      code: 'OK',
      ok: true,
      effect: 'applied',
      result,
    });
    expect(record?.policyVersion).toMatch(/^test-1@[0-9a-f]{12}$/);
    expect(record?.durationMs).toBeGreaterThanOrEqual(0);
    expect(await harness.audit.append(record!)).toBe(false); // idempotent on (call id, run id)
  });

  it('shows each call with a summary that names the tool and caller, search attributes and readable details', async () => {
    const result = await harness.call({
      caller: refunder,
      tool: 'refund_order',
      arguments: harness.refundArguments({ order_id: 'ORD-1003', amount_cents: 20_000 }),
    });
    const description = await harness.temporal.workflow.getHandle(result.callId).describe();
    expect(await description.staticSummary()).toBe('refund_order for test-refunder');
    const attributes = description.searchAttributes;
    expect(attributes.ToolName).toEqual(['refund_order']);
    expect(attributes.Caller).toEqual([refunder]);
    expect(attributes.ToolCode).toEqual(['OK']);
    expect(attributes.RiskLevel).toEqual([3]);
    expect(attributes.ApprovalState).toEqual(['none']);
    const metadata = await harness.temporal.workflow
      .getHandle(result.callId)
      .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toBe('refund 20000 BRL on ORD-1003: OK (effect applied)');
  });
});
