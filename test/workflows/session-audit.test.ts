import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import type { AdmissionDecision, AuditRecord } from 'toolgate';
import {
  admitUpdate,
  capProposal,
  keyPaths,
  readPrivateKey,
  sessionWorkflowId,
  sessionWorkflowType,
  signValue,
} from 'toolgate';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Refusals at session admission (step 0) start no call workflow; they reach the audit store like
// every other refusal, once per proposal, however often its admission is asked again.

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

interface Proposed {
  session: string;
  caller: string;
  tool: string;
  arguments: string;
}

interface Admission {
  proposalId: string;
  callId: string;
  decision: AdmissionDecision;
}

/**
 * Asks the proposal's session to admit it as the client does (signed with the caller's key unless
 * `signed` is false), under the given proposal id and update id when a test asks again.
 */
async function admit(
  proposed: Proposed,
  options: { signed?: boolean; proposalId?: string; updateId?: string } = {},
): Promise<Admission> {
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
  const decision = await harness.temporal.workflow.executeUpdateWithStart(admitUpdate, {
    args: [{ proposalId, callId, proposal, ...(signature !== undefined ? { signature } : {}) }],
    updateId: options.updateId ?? `admit-${proposalId}`,
    startWorkflowOperation: new WithStartWorkflowOperation(sessionWorkflowType, {
      workflowId: sessionWorkflowId(proposed.session),
      taskQueue: harness.taskQueue,
      args: [{ session: proposed.session }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    }),
  });
  return { proposalId, callId, decision };
}

/** The admission again, as a client retrying it would: the same update, then the same proposal under a new update id. */
async function admitAgain(proposed: Proposed, first: Admission, options: { signed?: boolean } = {}) {
  for (const updateId of [`admit-${first.proposalId}`, `admit-${first.proposalId}-again`]) {
    const again = await admit(proposed, { ...options, proposalId: first.proposalId, updateId });
    expect(again.decision).toEqual(first.decision);
  }
}

/** The one record the store must hold for a refused admission (times and policy version as patterns). */
function refusalRecord(
  proposed: Proposed,
  admission: Admission,
  code: string,
): Partial<Record<keyof AuditRecord, unknown>> {
  if (admission.decision.admitted) throw new Error(`expected ${code}, the proposal was admitted`);
  const { result } = admission.decision;
  expect(result).toMatchObject({ ok: false, code, effect: 'none', callId: admission.callId });
  return {
    callId: admission.callId,
    runId: `admission:${admission.proposalId}`,
    session: proposed.session,
    caller: proposed.caller,
    tool: proposed.tool,
    rawArguments: proposed.arguments,
    policyVersion: expect.stringMatching(/^test-1@[0-9a-f]{12}$/),
    code,
    ok: false,
    effect: 'none',
    result,
    startedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    finishedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    durationMs: 0,
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

describe('refusals at session admission are in the audit store, once per proposal', () => {
  it('records a STEP_LIMIT refusal once, with the proposal as the model sent it', async () => {
    const session = harness.newSession();
    for (const orderId of ['ORD-1001', 'ORD-1002']) {
      expect((await harness.client.call(getOrder(session, 'thrifty-bot', orderId))).ok).toBe(true);
    }
    const proposed = getOrder(session, 'thrifty-bot', 'ORD-1003');
    const refused = await admit(proposed);
    expect(await recordsOf(refused.callId)).toEqual([refusalRecord(proposed, refused, 'STEP_LIMIT')]);
    const [record] = await recordsOf(refused.callId);
    expect(record?.finishedAt).toBe(record?.startedAt);

    await admitAgain(proposed, refused);
    expect(await codesOf(refused.callId)).toEqual(['STEP_LIMIT']);
    expect((await harness.client.sessionStats(session)).steps).toBe(3);
  });

  it('records a LOOP_DETECTED refusal once, after the records of the calls it repeats', async () => {
    const session = harness.newSession();
    const proposed = getOrder(session, 'loopy-bot', 'ORD-1001');
    expect((await harness.client.call(proposed)).ok).toBe(true);
    expect((await harness.client.call(proposed)).ok).toBe(true);
    const refused = await admit(proposed);
    const records = await recordsOf(refused.callId);
    expect(records.map((record) => record.code)).toEqual(['OK', 'OK', 'LOOP_DETECTED']);
    expect(records[2]).toEqual(refusalRecord(proposed, refused, 'LOOP_DETECTED'));

    await admitAgain(proposed, refused);
    expect(await codesOf(refused.callId)).toEqual(['OK', 'OK', 'LOOP_DETECTED']);
  });

  it('records a CIRCUIT_OPEN refusal once', async () => {
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
    const refused = await admit(proposed);
    expect(await recordsOf(refused.callId)).toEqual([refusalRecord(proposed, refused, 'CIRCUIT_OPEN')]);

    await admitAgain(proposed, refused);
    expect(await codesOf(refused.callId)).toEqual(['CIRCUIT_OPEN']);
    expect(await harness.orders.api.refundCount()).toBe(0);
  });

  it('records an unsigned proposal’s UNAUTHENTICATED_CALLER once, though the session checks it again when asked again', async () => {
    const session = harness.newSession();
    expect((await harness.client.call(getOrder(session, 'test-refunder', 'ORD-1001'))).ok).toBe(true);
    const proposed: Proposed = {
      session,
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    };
    const refused = await admit(proposed, { signed: false });
    expect(await recordsOf(refused.callId)).toEqual([
      refusalRecord(proposed, refused, 'UNAUTHENTICATED_CALLER'),
    ]);

    await admitAgain(proposed, refused, { signed: false });
    expect(await codesOf(refused.callId)).toEqual(['UNAUTHENTICATED_CALLER']);
    // Audited, yet still no step and no count: the refusal is the store's, not the session's.
    const stats = await harness.client.sessionStats(session);
    expect(stats).toMatchObject({ steps: 1, codeCounts: { OK: 1 } });
    expect(await harness.orders.api.refundCount()).toBe(0);
  });

  it('records a SESSION_CLOSED refusal once when the session ends just before it decides the admission', async () => {
    const session = harness.newSession();
    expect((await harness.client.call(getOrder(session, 'test-refunder', 'ORD-1001'))).ok).toBe(true);
    const proposed = getOrder(session, 'test-refunder', 'ORD-1002');
    let admission: Promise<Admission> | undefined;
    let ended: Promise<unknown> | undefined;
    // With no worker, the end and the admission wait at the server and reach the session together;
    // the session takes them in arrival order, so the end closes it before the admission is decided.
    await harness.restartWorker(async () => {
      ended = harness.client.endSession(session, { reason: 'user left' });
      await sleep(1_000);
      admission = admit(proposed);
      await sleep(1_000);
    });
    const refused = await admission!;
    await ended;
    expect(await recordsOf(refused.callId)).toEqual([refusalRecord(proposed, refused, 'SESSION_CLOSED')]);
    expect(await harness.client.sessionStats(session)).toMatchObject({ closed: true, steps: 1 });
  });
});
