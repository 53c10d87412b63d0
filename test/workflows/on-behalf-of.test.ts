import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { describe, expect, it, vi } from 'vitest';
import type { CallContext, ToolResult } from 'toolgate';
import type { ProposeRequest } from 'toolgate/protocol';
import { anthropicTools, inputJsonSchema, keyPaths, openAIChatTools, readPrivateKey } from 'toolgate';
import { capProposal, deriveCallId, proposeUpdate, signValue, toolCallWorkflowType } from 'toolgate/protocol';
import { aiSdkTools } from 'toolgate/ai-sdk';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// On whose behalf: the harness attaches the end user (and tenant, channel) to a session; the orders
// tools bind `customer_id` to it, so a refund or a read of another customer's order is refused by
// code (ORDER_NOT_OWNED) before any approval round, whatever the model was told. The orders service's
// refunds and the audit store are the proof.

let harness: ToolGateHarness;

useHarness((started) => (harness = started));
const { decide } = approvalHelpers(() => harness);

const appliedRefunds = () => harness.orders.api.refundCount();
const cus = (onBehalfOf: string): CallContext => ({ onBehalfOf, channel: 'end-user-chat' });
const refundOf = (order: 'ORD-1001' | 'ORD-1002') =>
  order === 'ORD-1001'
    ? { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' }
    : { order_id: 'ORD-1002', amount_cents: 4500, currency: 'USD', reason: 'customer_request' };

const callerKey = (caller: string): KeyObject =>
  readPrivateKey(
    keyPaths({ directory: harness.keysDirectory, owner: { kind: 'caller', name: caller } }).privateKey,
  );

describe('a conversation acts for one end user', () => {
  it("refuses a refund of another customer's order with ORDER_NOT_OWNED, before any approval round: nothing applied", async () => {
    const session = harness.newSession();
    const refund = await harness.client.call({
      session,
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: refundOf('ORD-1002'),
      context: cus('CUS-1'),
    });
    expect(refund).toMatchObject({ ok: false, code: 'ORDER_NOT_OWNED', effect: 'none' });
    const state = await harness.admin.show(refund.callId);
    expect(state?.approval).toBeUndefined();
    expect(state?.context).toEqual(cus('CUS-1'));
    expect((await harness.admin.pending()).filter((call) => call.callId === refund.callId)).toEqual([]);
    expect(await appliedRefunds()).toBe(0);
    const [record] = await harness.audit.recordsOf(refund.callId);
    expect(record).toMatchObject({
      code: 'ORDER_NOT_OWNED',
      context: cus('CUS-1'),
      validatedArguments: { order_id: 'ORD-1002', customer_id: 'CUS-1' },
    });
  });

  it("refuses a read of another customer's order, and reads one's own", async () => {
    const session = harness.newSession();
    const conversation = harness.client.session({
      id: session,
      caller: 'support-bot',
      context: cus('CUS-1'),
    });
    expect(
      await conversation.call({ tool: 'get_order', arguments: '{"order_id":"ORD-1002"}' }),
    ).toMatchObject({
      ok: false,
      code: 'ORDER_NOT_OWNED',
      effect: 'none',
    });
    expect(
      await conversation.call({ tool: 'get_order', arguments: '{"order_id":"ORD-1001"}' }),
    ).toMatchObject({
      ok: true,
      data: { order_id: 'ORD-1001', customer_id: 'CUS-1' },
    });
  });

  it("sends the same refund in its owner's conversation to approval, shown with whom it acts for, then applies it once", async () => {
    const refund = await harness.client.call({
      session: harness.newSession(),
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: refundOf('ORD-1002'),
      context: cus('CUS-2'),
    });
    expect(refund).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    // The approvers' list shows the call once the server's visibility has indexed it (a moment).
    const pending = await vi.waitFor(async () => {
      const found = (await harness.admin.pending()).find((call) => call.callId === refund.callId);
      if (!found) throw new Error(`${refund.callId} is not listed yet`);
      return found;
    });
    expect(pending).toMatchObject({ callId: refund.callId, context: cus('CUS-2') });
    expect(await decide(refund.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(refund.callId, { wait: true })).toMatchObject({
      code: 'OK',
      effect: 'applied',
    });
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1002' })).toBe(1);
  });

  it('refuses a model that sends the bound customer_id itself with BOUND_PARAMETER_SENT: nothing applied', async () => {
    const refund = await harness.client.call({
      session: harness.newSession(),
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: { ...refundOf('ORD-1002'), customer_id: 'CUS-2' },
      context: cus('CUS-1'),
    });
    expect(refund).toMatchObject({ ok: false, code: 'BOUND_PARAMETER_SENT', effect: 'none' });
    expect(refund.message).toContain('customer_id');
    expect(refund.data).toEqual({ fields: ['customer_id'] });
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a proposal for another end user in the same session with CONTEXT_MISMATCH, using no step', async () => {
    const session = harness.newSession();
    const read = (context: CallContext) =>
      harness.client.call({
        session,
        caller: 'test-refunder',
        tool: 'get_order',
        arguments: '{"order_id":"ORD-1001"}',
        context,
      });
    expect((await read(cus('CUS-1'))).code).toBe('OK');
    const before = await harness.client.sessionStats(session);
    expect(before.context).toEqual(cus('CUS-1'));
    expect(await read(cus('CUS-2'))).toMatchObject({ ok: false, code: 'CONTEXT_MISMATCH', effect: 'none' });
    expect(await read({ onBehalfOf: 'CUS-1', channel: 'internal-console' })).toMatchObject({
      code: 'CONTEXT_MISMATCH',
    });
    expect((await harness.client.sessionStats(session)).steps).toBe(before.steps);
    expect((await read(cus('CUS-1'))).code).toBe('OK');
  });

  it('refuses a malformed context in the client with CONTEXT_INVALID before anything starts', async () => {
    const refund = await harness.client.call({
      session: harness.newSession(),
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: refundOf('ORD-1001'),
      // A claim named like a prototype member, as JSON from outside would carry it (an own property).
      context: { onBehalfOf: 'CUS-1', claims: JSON.parse('{"__proto__":"x"}') as Record<string, string> },
    });
    expect(refund).toMatchObject({ ok: false, code: 'CONTEXT_INVALID', effect: 'none' });
    expect(refund.callId).toMatch(/^tc-refund_order-/);
    const oversized = await harness.client.call({
      session: harness.newSession(),
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: refundOf('ORD-1001'),
      context: { onBehalfOf: 'x'.repeat(10_000) },
    });
    expect(oversized.code).toBe('CONTEXT_INVALID');
    expect(await appliedRefunds()).toBe(0);
  });

  it('runs a refund for its own customer unattended when the caller may, with the customer in the credential', async () => {
    const refund = await harness.client.call({
      session: harness.newSession(),
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: refundOf('ORD-1001'),
      context: cus('CUS-1'),
    });
    expect(refund).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1001' })).toBe(1);
  });
});

describe('the context is covered by the signature and the session', () => {
  /** Delivers a proposal straight to its call workflow, as a raw Temporal client can. */
  async function proposeRaw(input: { callId: string; request: ProposeRequest }): Promise<ToolResult> {
    const response = await harness.temporal.workflow.executeUpdateWithStart(proposeUpdate, {
      args: [input.request],
      updateId: input.request.proposalId,
      startWorkflowOperation: new WithStartWorkflowOperation(toolCallWorkflowType, {
        workflowId: input.callId,
        taskQueue: harness.taskQueue,
        args: [input.request],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      }),
    });
    return response.result;
  }

  const refundContract = ordersContracts.find((contract) => contract.name === 'refund_order')!;
  const proposalFor = (context: CallContext, session: string) => {
    const proposal = capProposal({
      session,
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: JSON.stringify(refundOf('ORD-1002')),
      context,
    });
    const callId = deriveCallId({
      proposal,
      idempotencyFields: refundContract.idempotencyFields,
      boundParameters: refundContract.boundParameters,
    });
    return { proposal, callId };
  };

  it('refuses a context edited after signing (UNAUTHENTICATED_CALLER) and a signed one sent into a session of another end user (CONTEXT_MISMATCH)', async () => {
    const session = harness.newSession();
    // The harness opens the session for CUS-1: its context is fixed at that first admission.
    const opened = await harness.client.call({
      session,
      caller: 'test-refunder',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1001"}',
      context: cus('CUS-1'),
    });
    expect(opened.ok).toBe(true);
    const signedFor = proposalFor(cus('CUS-1'), session);
    const signature = signValue({
      kind: 'proposal',
      value: { callId: signedFor.callId, proposal: signedFor.proposal },
      privateKey: callerKey('test-refunder'),
    });
    // The signature was made for CUS-1; the raw client says CUS-2, whose order it is.
    const edited = { ...signedFor.proposal, context: cus('CUS-2') };
    const forged = await proposeRaw({
      callId: signedFor.callId,
      request: { proposalId: randomUUID(), proposal: edited, signature },
    });
    expect(forged).toMatchObject({ ok: false, code: 'UNAUTHENTICATED_CALLER', effect: 'none' });

    // Signed for CUS-2 with the caller's own key, started straight into CUS-1's session: the call's
    // own admission finds the session fixed to another end user.
    const direct = proposalFor(cus('CUS-2'), session);
    const unadmitted = await proposeRaw({
      callId: direct.callId,
      request: {
        proposalId: randomUUID(),
        proposal: direct.proposal,
        signature: signValue({
          kind: 'proposal',
          value: { callId: direct.callId, proposal: direct.proposal },
          privateKey: callerKey('test-refunder'),
        }),
      },
    });
    expect(unadmitted).toMatchObject({ ok: false, code: 'CONTEXT_MISMATCH', effect: 'none' });
    expect(await appliedRefunds()).toBe(0);
  });

  it('gives the same refund for two end users two call ids', () => {
    const session = harness.newSession();
    expect(proposalFor(cus('CUS-1'), session).callId).not.toBe(proposalFor(cus('CUS-2'), session).callId);
  });
});

describe('the credential names the end user and what the write rests on', () => {
  it('mints for the end user the call acts for, and the orders service refuses it for another customer', async () => {
    const contract = ordersContracts.find((candidate) => candidate.name === 'refund_order')!;
    const args = { ...refundOf('ORD-1002'), customer_id: 'CUS-1' };
    const callId = `tc-refund_order-${'a'.repeat(64)}`;
    const credential = await harness.minter.mint({
      contract,
      caller: 'test-refunder',
      callId,
      runId: randomUUID(),
      args,
      context: { onBehalfOf: 'CUS-1' },
    });
    const claims = JSON.parse(Buffer.from(credential.split('.')[0]!, 'base64url').toString('utf8')) as {
      onBehalfOf?: string;
    };
    expect(claims.onBehalfOf).toBe('CUS-1');
    await expect(
      harness.orders.api.refund({
        orderId: 'ORD-1002',
        amountCents: 4500,
        currency: 'USD',
        reason: 'customer_request',
        customerId: 'CUS-1',
        idempotencyKey: callId,
        credential,
      }),
    ).rejects.toMatchObject({ code: 'CREDENTIAL_SCOPE_MISMATCH' });
    // Nor does the minter sign a customer_id that is not the end user it names.
    await expect(
      harness.minter.mint({
        contract,
        caller: 'test-refunder',
        callId,
        runId: randomUUID(),
        args,
        context: { onBehalfOf: 'CUS-2' },
      }),
    ).rejects.toThrow(/customer_id is not the end user/);
    expect(await appliedRefunds()).toBe(0);
  });

  it('records the approver a customer-bound refund ran on, and binds the refund tool to the end user', async () => {
    const contract = ordersContracts.find((candidate) => candidate.name === 'refund_order')!;
    const pending = await harness.client.call({
      session: harness.newSession(),
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: refundOf('ORD-1001'),
      context: cus('CUS-1'),
    });
    expect(pending.code).toBe('APPROVAL_PENDING');
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true });
    expect((await harness.client.result(pending.callId, { wait: true }))?.code).toBe('OK');
    const [record] = await harness.audit.recordsOf(pending.callId);
    expect(record?.decisions?.map((decision) => decision.approver)).toEqual(['alice']);
    expect(contract.boundParameters).toEqual({ customer_id: 'onBehalfOf' });
  });
});

describe('what the model sees', () => {
  it('never shows a bound parameter in any tool format', () => {
    const { client } = harness;
    const formats: [string, unknown][] = [
      ['definitions', client.definitions('support-bot')],
      ['openai strict', openAIChatTools({ client, caller: 'support-bot' })],
      ['openai non-strict', openAIChatTools({ client, caller: 'support-bot', strict: false })],
      ['anthropic', anthropicTools({ client, caller: 'support-bot' })],
      [
        'ai sdk',
        Object.values(aiSdkTools({ client, session: 's', caller: 'support-bot' })).map(
          (tool) => (tool.inputSchema as { jsonSchema: unknown }).jsonSchema,
        ),
      ],
      ['mcp (inputJsonSchema)', ordersContracts.map((contract) => inputJsonSchema(contract))],
    ];
    for (const [name, format] of formats) {
      const text = JSON.stringify(format);
      expect(text, name).toContain('order_id');
      expect(text, name).not.toContain('customer_id');
    }
  });
});
