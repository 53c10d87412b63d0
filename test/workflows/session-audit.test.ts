import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AuditRecord, ToolResult } from 'toolgate';
import { keyPaths, readPrivateKey } from 'toolgate';
import { capProposal, signValue, toolCallWorkflowType } from 'toolgate/protocol';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Refusals at session admission (step 0, the call workflow's first step) are the call's own final
// record, like every other refusal; asked again under the same proposal id (a retried local
// activity, a replayed task, a raw client starting the run again), the admission answers what it
// answered and counts nothing twice.

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

interface Proposed {
  session: string;
  caller: string;
  tool: string;
  arguments: string;
}

/**
 * Starts the proposal's call workflow as a raw Temporal client would (signed with the caller's key
 * unless `signed` is false), under the given proposal id, and waits for its answer.
 */
async function startRaw(
  proposed: Proposed,
  options: { signed?: boolean; proposalId?: string } = {},
): Promise<{ proposalId: string; callId: string; result: ToolResult; runId: string }> {
  const proposal = capProposal(proposed);
  const callId = harness.client.callIdOf(proposed);
  const proposalId = options.proposalId ?? randomUUID();
  const key = readPrivateKey(
    keyPaths({ directory: harness.keysDirectory, owner: { kind: 'caller', name: proposed.caller } })
      .privateKey,
  );
  const signature =
    options.signed === false
      ? undefined
      : signValue({ kind: 'proposal', value: { callId, proposal }, privateKey: key });
  const handle = await harness.temporal.workflow.start(toolCallWorkflowType, {
    workflowId: callId,
    taskQueue: harness.taskQueue,
    args: [{ proposalId, proposal, ...(signature !== undefined ? { signature } : {}) }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const result = await handle.result().then(
    (value) => value as ToolResult,
    (error: { cause?: { details?: unknown[] } }) => error.cause?.details?.[0] as ToolResult,
  );
  return { proposalId, callId, result, runId: handle.firstExecutionRunId };
}

/** The record the store must hold for a refused admission: the call's own, for its run. */
function refusalRecord(
  proposed: Proposed,
  refused: { callId: string; runId: string; result: ToolResult },
  code: string,
): Partial<Record<keyof AuditRecord, unknown>> {
  expect(refused.result).toMatchObject({ ok: false, code, effect: 'none', callId: refused.callId });
  return {
    callId: refused.callId,
    runId: refused.runId,
    session: proposed.session,
    caller: proposed.caller,
    tool: proposed.tool,
    rawArguments: proposed.arguments,
    policyVersion: expect.stringMatching(/^test-1@[0-9a-f]{12}$/),
    code,
    ok: false,
    effect: 'none',
    result: refused.result,
  };
}

const recordsOf = (callId: string) => harness.audit.recordsOf(callId);
const codesOf = async (callId: string) => (await recordsOf(callId)).map((record) => record.code);

const getOrder = (session: string, caller: string, orderId: string): Proposed => ({
  session,
  caller,
  tool: 'get_order',
  arguments: `{"order_id":"${orderId}"}`,
});

describe('refusals at session admission are in the audit store', () => {
  it('records a STEP_LIMIT refusal as its call’s record; the same proposal asked again uses no step', async () => {
    const session = harness.newSession();
    for (const orderId of ['ORD-1001', 'ORD-1002']) {
      expect((await harness.client.call(getOrder(session, 'thrifty-bot', orderId))).ok).toBe(true);
    }
    const proposed = getOrder(session, 'thrifty-bot', 'ORD-1003');
    const refused = await startRaw(proposed);
    expect(await recordsOf(refused.callId)).toEqual([
      expect.objectContaining(refusalRecord(proposed, refused, 'STEP_LIMIT')),
    ]);
    expect((await harness.client.sessionStats(session)).steps).toBe(3);

    // A new run under the same proposal id: the recorded answer, no step, no count.
    const again = await startRaw(proposed, { proposalId: refused.proposalId });
    expect(again.result).toEqual(refused.result);
    expect(await codesOf(refused.callId)).toEqual(['STEP_LIMIT', 'STEP_LIMIT']);
    expect(await harness.client.sessionStats(session)).toMatchObject({
      steps: 3,
      codeCounts: { STEP_LIMIT: 1 },
    });
  });

  it('records a LOOP_DETECTED refusal after the records of the calls it repeats', async () => {
    const session = harness.newSession();
    const proposed = getOrder(session, 'loopy-bot', 'ORD-1001');
    expect((await harness.client.call(proposed)).ok).toBe(true);
    expect((await harness.client.call(proposed)).ok).toBe(true);
    const refused = await harness.client.call(proposed);
    const records = await recordsOf(refused.callId);
    expect(records.map((record) => record.code)).toEqual(['OK', 'OK', 'LOOP_DETECTED']);
    expect(records[2]).toMatchObject({ session, caller: 'loopy-bot', code: 'LOOP_DETECTED', effect: 'none' });
  });

  it('records a CIRCUIT_OPEN refusal, with nothing applied', async () => {
    const session = harness.newSession();
    for (let index = 0; index < 3; index++) {
      const invalid = await harness.client.call({
        session,
        caller: 'test-refunder',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 25.9 + index }),
      });
      expect(invalid.code).toBe('INVALID_ARGUMENTS');
    }
    const proposed: Proposed = {
      session,
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    };
    const refused = await startRaw(proposed);
    expect(await recordsOf(refused.callId)).toEqual([
      expect.objectContaining(refusalRecord(proposed, refused, 'CIRCUIT_OPEN')),
    ]);
    expect(await harness.orders.api.refundCount()).toBe(0);
  });

  it('records an unsigned proposal’s UNAUTHENTICATED_CALLER; the session is not touched', async () => {
    const session = harness.newSession();
    expect((await harness.client.call(getOrder(session, 'test-refunder', 'ORD-1001'))).ok).toBe(true);
    const proposed: Proposed = {
      session,
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    };
    const refused = await startRaw(proposed, { signed: false });
    expect(await recordsOf(refused.callId)).toEqual([
      expect.objectContaining(refusalRecord(proposed, refused, 'UNAUTHENTICATED_CALLER')),
    ]);
    // Audited, yet no step and no count: the refusal is the call's, not the session's.
    const stats = await harness.client.sessionStats(session);
    expect(stats).toMatchObject({ steps: 1, codeCounts: { OK: 1 } });
    expect(await harness.orders.api.refundCount()).toBe(0);
  });

  it('records a replay’s refusal once, under its proposal: a completed refund proposed past the loop limit', async () => {
    const session = harness.newSession();
    const proposed: Proposed = {
      session,
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    };
    const results = [];
    for (let index = 0; index < 4; index++) results.push(await harness.client.call(proposed));
    expect(results.map((result) => result.code)).toEqual(['OK', 'OK', 'OK', 'LOOP_DETECTED']);
    expect(results.slice(1, 3).every((result) => result.replayed === true)).toBe(true);
    // The refund's run is recorded once; the refused replay started no run: its record is the admission's.
    const records = await recordsOf(results[0]!.callId);
    expect(records.map((record) => record.code)).toEqual(['OK', 'LOOP_DETECTED']);
    expect(records[1]?.runId).toMatch(/^admission:/);
    expect(await harness.orders.api.refundCount()).toBe(1);
    expect((await harness.client.sessionStats(session)).steps).toBe(4);
  });
});
