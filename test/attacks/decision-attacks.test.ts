import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import type { ApprovalView, DecisionEnvelope, SignedDecision, ToolCallInput } from 'toolgate/protocol';
import { keyPaths, readPrivateKey } from 'toolgate';
import { decideUpdate, signValue, toolCallWorkflowType } from 'toolgate/protocol';
import { digestOf } from 'toolgate/backend';
import { approvalHelpers } from '../support/approval-helpers';
import { caught } from '../support/caught';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Attacks on the approval gate: decisions forged, misbound, replayed, raced or sent too late. Each
// asserts the refusal code the approver (or forger) is told and the orders service's count of
// applied refunds, the effect that matters.

const { EventType } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

const proposeCriticalRefund = () => proposeRefund({ order_id: 'ORD-1003', amount_cents: 20_000 });

/** The private key of a caller: what the agent harness holds, and what no approver should be. */
const callerKey = (caller: string): KeyObject =>
  readPrivateKey(
    keyPaths({ directory: harness.keysDirectory, owner: { kind: 'caller', name: caller } }).privateKey,
  );

/** An envelope for the call's current round, as a well-behaved approver would build it. */
async function envelopeFor(
  callId: string,
  approver: string,
  overrides: Partial<DecisionEnvelope> = {},
): Promise<DecisionEnvelope> {
  const approval = (await harness.admin.show(callId))?.approval;
  if (!approval) throw new Error(`call ${callId} has no approval round`);
  return {
    callId,
    runId: approval.runId,
    nonce: approval.nonce,
    argsDigest: approval.argsDigest,
    previewDigest: approval.previewDigest,
    contractDigest: approval.contractDigest,
    decision: 'approve',
    approver,
    reason: `checked by ${approver}`,
    issuedAt: new Date().toISOString(),
    ...overrides,
  };
}

const signedWith = (envelope: DecisionEnvelope, privateKey: KeyObject): SignedDecision => ({
  envelope,
  signature: signValue({ kind: 'decision', value: envelope, privateKey }),
});

const signedBy = (envelope: DecisionEnvelope, approver: string): SignedDecision =>
  signedWith(envelope, harness.approverKey(approver));

/**
 * Sends a decision as a forger with a raw Temporal client would, past the admin side, and returns
 * the refusal code the workflow answered with.
 */
async function sendRaw(callId: string, decision: unknown, updateId: string = randomUUID()): Promise<string> {
  const error = await caught(() =>
    harness.temporal.workflow
      .getHandle(callId)
      .executeUpdate(decideUpdate, { args: [decision as SignedDecision], updateId }),
  );
  return (error as { cause?: { type?: string } }).cause?.type ?? `not a refusal: ${String(error)}`;
}

/** Every audited decision attempt on a call, as `source outcome` lines (oldest first). */
const auditedAttempts = async (callId: string) =>
  (await harness.audit.decisionAttemptsOf(callId)).map((attempt) => `${attempt.source} ${attempt.outcome}`);

/** Waits until the workflow's sink has audited the attempt with this update id (sinks run after the task). */
async function expectAuditedByWorkflow(callId: string, updateId: string, outcome: string): Promise<void> {
  await expect
    .poll(
      async () =>
        (await harness.audit.decisionAttemptsOf(callId)).find(
          (attempt) => attempt.updateId === updateId && attempt.source === 'workflow',
        )?.outcome,
      { timeout: 15_000 },
    )
    .toBe(outcome);
}

/**
 * Sends an already used or stale decision again, through the admin side and through a raw client
 * under a new update id: both refuse it with `code`, and the workflow audits the raw attempt.
 */
async function expectResendRefused(callId: string, decision: SignedDecision, code: string): Promise<void> {
  expect(await harness.admin.send({ callId, decision })).toMatchObject({ accepted: false, code });
  const updateId = `replayed-${randomUUID()}`;
  expect(await sendRaw(callId, decision, updateId)).toBe(code);
  await expectAuditedByWorkflow(callId, updateId, code);
}

/** Waits until the call has an open round matching `expected` (e.g. a round number or a run id), and returns it. */
async function openRound(callId: string, expected: Partial<ApprovalView> = {}): Promise<ApprovalView> {
  await expect
    .poll(async () => (await harness.admin.show(callId))?.approval, { timeout: 30_000 })
    .toMatchObject({ state: 'pending', ...expected });
  const approval = (await harness.admin.show(callId))?.approval;
  if (!approval) throw new Error(`call ${callId} has no open round`);
  return approval;
}

/** The call still waits in its round with exactly these approvals, and nothing was refunded. */
async function expectStillPending(callId: string, approvals: string[] = []): Promise<void> {
  const state = await harness.admin.show(callId);
  expect(state?.result).toBeUndefined();
  expect(state?.approval).toMatchObject({ state: 'pending', approvals });
  expect(await appliedRefunds()).toBe(0);
}

/**
 * Sends a forged decision through the admin side and again with a raw Temporal client: both are
 * refused with `code`, both attempts are audited (by the admin side, and by the workflow's sink),
 * and the call still waits with no approval.
 */
async function expectRefusedEverywhere(callId: string, decision: unknown, code: string): Promise<void> {
  expect(await harness.admin.send({ callId, decision: decision as SignedDecision })).toMatchObject({
    accepted: false,
    code,
  });
  const updateId = `forged-${randomUUID()}`;
  expect(await sendRaw(callId, decision, updateId)).toBe(code);
  await expectAuditedByWorkflow(callId, updateId, code);
  expect(await auditedAttempts(callId)).toContain(`admin ${code}`);
  await expectStillPending(callId);
}

describe('a forged decision is refused, changes nothing and is audited', () => {
  let pending: ToolResult;

  beforeEach(async () => {
    pending = await proposeCriticalRefund();
  });

  it('refuses an unsigned decision as SIGNATURE_INVALID and applies nothing', async () => {
    const envelope = await envelopeFor(pending.callId, 'alice');
    await expectRefusedEverywhere(pending.callId, { envelope, signature: '' }, 'SIGNATURE_INVALID');
    await expectRefusedEverywhere(pending.callId, { envelope }, 'SIGNATURE_INVALID');
  });

  it('refuses a mis-signed decision (garbage, or altered after signing) as SIGNATURE_INVALID and applies nothing', async () => {
    const envelope = await envelopeFor(pending.callId, 'alice');
    await expectRefusedEverywhere(
      pending.callId,
      { envelope, signature: 'A'.repeat(86) },
      'SIGNATURE_INVALID',
    );
    const genuine = signedBy(envelope, 'alice');
    const altered = { ...genuine, envelope: { ...envelope, decision: 'deny' as const } };
    await expectRefusedEverywhere(pending.callId, altered, 'SIGNATURE_INVALID');
  });

  it('refuses a decision signed with the caller’s own key as SIGNATURE_INVALID (or APPROVER_UNKNOWN in its own name) and applies nothing', async () => {
    const key = callerKey('support-bot');
    const asAlice = signedWith(await envelopeFor(pending.callId, 'alice'), key);
    await expectRefusedEverywhere(pending.callId, asAlice, 'SIGNATURE_INVALID');
    const asItself = signedWith(await envelopeFor(pending.callId, 'support-bot'), key);
    await expectRefusedEverywhere(pending.callId, asItself, 'APPROVER_UNKNOWN');
  });

  it('refuses a decision signed with another approver’s key as SIGNATURE_INVALID and applies nothing', async () => {
    const envelope = await envelopeFor(pending.callId, 'alice');
    await expectRefusedEverywhere(pending.callId, signedBy(envelope, 'dave'), 'SIGNATURE_INVALID');
  });

  it('refuses an unknown approver, whatever their name, as APPROVER_UNKNOWN and applies nothing', async () => {
    const key = generateKeyPairSync('ed25519').privateKey;
    for (const name of ['mallory', 'constructor', '__proto__', 'toString']) {
      const forged = signedWith(await envelopeFor(pending.callId, name), key);
      await expectRefusedEverywhere(pending.callId, forged, 'APPROVER_UNKNOWN');
    }
  });

  it('refuses an approver not granted the call’s risk level as APPROVER_NOT_ALLOWED, to approve or to deny', async () => {
    await expectRefusedEverywhere(
      pending.callId,
      signedBy(await envelopeFor(pending.callId, 'bob'), 'bob'),
      'APPROVER_NOT_ALLOWED',
    );
    await expectRefusedEverywhere(
      pending.callId,
      signedBy(await envelopeFor(pending.callId, 'bob', { decision: 'deny' }), 'bob'),
      'APPROVER_NOT_ALLOWED',
    );
  });

  it('refuses the caller’s own operator as SELF_APPROVAL, so a quorum cannot be made with them', async () => {
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    expect(await decide(pending.callId, 'carol')).toMatchObject({ accepted: false, code: 'SELF_APPROVAL' });
    const updateId = `forged-${randomUUID()}`;
    const carol = signedBy(await envelopeFor(pending.callId, 'carol'), 'carol');
    expect(await sendRaw(pending.callId, carol, updateId)).toBe('SELF_APPROVAL');
    await expectAuditedByWorkflow(pending.callId, updateId, 'SELF_APPROVAL');
    await expectStillPending(pending.callId, ['alice']);
  });

  it('refuses a decision for another call as DIGEST_MISMATCH and applies nothing', async () => {
    const other = await proposeRefund({ order_id: 'ORD-1003', amount_cents: 30_000 });
    const forOther = signedBy(await envelopeFor(other.callId, 'alice'), 'alice');
    await expectRefusedEverywhere(pending.callId, forOther, 'DIGEST_MISMATCH');
    // Readdressed to this call, it still names the other call's run, round and digests.
    const readdressed = signedBy({ ...forOther.envelope, callId: pending.callId }, 'alice');
    await expectRefusedEverywhere(pending.callId, readdressed, 'DIGEST_MISMATCH');
    await expectStillPending(other.callId);
  });

  it('refuses a decision for other arguments, another preview, another run or another round as DIGEST_MISMATCH', async () => {
    const envelope = await envelopeFor(pending.callId, 'alice');
    const otherArguments = digestOf({
      order_id: 'ORD-1003',
      amount_cents: 50_000,
      currency: 'BRL',
      reason: 'damaged',
    });
    const misbound: Partial<DecisionEnvelope>[] = [
      { argsDigest: otherArguments },
      { previewDigest: digestOf({ order_id: 'ORD-1003', amount_cents: 50_000 }) },
      { runId: randomUUID() },
      { nonce: digestOf(['an earlier round']) },
    ];
    for (const overrides of misbound) {
      await expectRefusedEverywhere(
        pending.callId,
        signedBy({ ...envelope, ...overrides }, 'alice'),
        'DIGEST_MISMATCH',
      );
    }
  });

  it('refuses a decision signed for another contract of the tool as CONTRACT_CHANGED: the round stays open, nothing applied', async () => {
    const round = (await harness.admin.show(pending.callId))?.approval;
    expect(round?.contractDigest).toMatch(/^[0-9a-f]{64}$/);
    const envelope = await envelopeFor(pending.callId, 'alice', {
      contractDigest: digestOf({ contract: 'refund_order as it was before a deploy' }),
    });
    await expectRefusedEverywhere(pending.callId, signedBy(envelope, 'alice'), 'CONTRACT_CHANGED');
    // Nothing superseded the round: the contract the worker holds is still the round's.
    expect((await harness.admin.show(pending.callId))?.approval).toMatchObject({
      round: 1,
      contractDigest: round?.contractDigest,
    });
    // A decision without a contract digest (signed before decisions carried one) is not a decision.
    const { contractDigest: _contractDigest, ...unbound } = await envelopeFor(pending.callId, 'alice');
    await expectRefusedEverywhere(
      pending.callId,
      signedBy(unbound as DecisionEnvelope, 'alice'),
      'SIGNATURE_INVALID',
    );
  });

  it('refuses a decision that is neither approve nor deny, even when signed, as SIGNATURE_INVALID', async () => {
    const envelope = await envelopeFor(pending.callId, 'alice', {
      decision: 'approve all' as DecisionEnvelope['decision'],
    });
    await expectRefusedEverywhere(pending.callId, signedBy(envelope, 'alice'), 'SIGNATURE_INVALID');
  });
});

describe('a decision counts once', () => {
  it('refuses the same signed decision sent again as DECISION_REPLAYED, through the admin side or a raw client', async () => {
    const pending = await proposeCriticalRefund();
    const decision = signedBy(await envelopeFor(pending.callId, 'alice'), 'alice');
    const updateId = `genuine-${randomUUID()}`;
    const accepted = await harness.temporal.workflow
      .getHandle(pending.callId)
      .executeUpdate(decideUpdate, { args: [decision], updateId });
    expect(accepted).toMatchObject({ state: 'pending', approvals: ['alice'] });
    await expectResendRefused(pending.callId, decision, 'DECISION_REPLAYED');
    // Sent again under its own update id, Temporal answers from history: nothing is counted twice.
    const again = await harness.temporal.workflow
      .getHandle(pending.callId)
      .executeUpdate(decideUpdate, { args: [decision], updateId });
    expect(again).toMatchObject({ approvals: ['alice'] });
    await expectStillPending(pending.callId, ['alice']);
  });

  it('refuses a quorum faked by one approver twice as DECISION_REPLAYED, and by one key in two names as SIGNATURE_INVALID', async () => {
    const pending = await proposeCriticalRefund();
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, approvals: ['alice'] });
    // A second, freshly signed approval by the same approver.
    expect(await decide(pending.callId, 'alice')).toMatchObject({
      accepted: false,
      code: 'DECISION_REPLAYED',
    });
    const secondAlice = signedBy(await envelopeFor(pending.callId, 'alice', { reason: 'again' }), 'alice');
    const updateId = `forged-${randomUUID()}`;
    expect(await sendRaw(pending.callId, secondAlice, updateId)).toBe('DECISION_REPLAYED');
    await expectAuditedByWorkflow(pending.callId, updateId, 'DECISION_REPLAYED');
    // Alice's key signing in dave's name.
    const asDave = signedBy(await envelopeFor(pending.callId, 'dave'), 'alice');
    expect(await harness.admin.send({ callId: pending.callId, decision: asDave })).toMatchObject({
      accepted: false,
      code: 'SIGNATURE_INVALID',
    });
    await expectStillPending(pending.callId, ['alice']);
  });
});

describe('a decision sent to a call that no longer waits is refused and still audited by the admin side', () => {
  /** The attempts the admin side logged for a call, as `outcome approver decision runId` lines. */
  const adminAttempts = async (callId: string) =>
    (await harness.audit.decisionAttemptsOf(callId))
      .filter((attempt) => attempt.source === 'admin')
      .map((attempt) => `${attempt.outcome} ${attempt.approver} ${attempt.decision} ${attempt.runId}`);

  it('refuses a decision after the denial as ALREADY_DECIDED, audits it, and applies nothing', async () => {
    const pending = await proposeCriticalRefund();
    const presigned = signedBy(await envelopeFor(pending.callId, 'alice'), 'alice');
    const { runId } = presigned.envelope;
    expect(await decide(pending.callId, 'dave', 'deny')).toMatchObject({ accepted: true, state: 'denied' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      code: 'APPROVAL_DENIED',
      effect: 'none',
    });

    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: false, code: 'ALREADY_DECIDED' });
    expect(await harness.admin.send({ callId: pending.callId, decision: presigned })).toMatchObject({
      accepted: false,
      code: 'ALREADY_DECIDED',
    });
    // The run has closed: Temporal itself refuses a raw client's update, and nothing changes.
    await caught(() =>
      harness.temporal.workflow.getHandle(pending.callId).executeUpdate(decideUpdate, { args: [presigned] }),
    );
    expect(await adminAttempts(pending.callId)).toEqual([
      `accepted dave deny ${runId}`,
      `ALREADY_DECIDED alice approve ${runId}`,
      `ALREADY_DECIDED alice approve ${runId}`,
    ]);
    expect(await appliedRefunds()).toBe(0);
    expect((await harness.client.result(pending.callId, { wait: true }))?.code).toBe('APPROVAL_DENIED');
  });

  it('refuses a decision after the expiry as APPROVAL_EXPIRED (never as a denial), audits it, and applies nothing', async () => {
    const pending = await proposeRefund({}, 'hasty-bot');
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      code: 'APPROVAL_EXPIRED',
      effect: 'none',
    });
    // The expired round is still readable: a decision built for it exactly, as if signed in time.
    const late = signedBy(await envelopeFor(pending.callId, 'alice'), 'alice');
    const { runId } = late.envelope;
    expect(await decide(pending.callId, 'alice')).toMatchObject({
      accepted: false,
      code: 'APPROVAL_EXPIRED',
    });
    expect(await harness.admin.send({ callId: pending.callId, decision: late })).toMatchObject({
      accepted: false,
      code: 'APPROVAL_EXPIRED',
    });
    expect(await adminAttempts(pending.callId)).toEqual([
      `APPROVAL_EXPIRED alice approve ${runId}`,
      `APPROVAL_EXPIRED alice approve ${runId}`,
    ]);
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a decision after the refund was applied as ALREADY_DECIDED, audits it, and applies it once', async () => {
    const pending = await proposeRefund();
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await decide(pending.callId, 'dave')).toMatchObject({ accepted: false, code: 'ALREADY_DECIDED' });
    expect(await adminAttempts(pending.callId)).toContainEqual(
      expect.stringMatching(/^ALREADY_DECIDED dave approve /),
    );
    expect(await appliedRefunds()).toBe(1);
  });

  it('answers CALL_NOT_FOUND for a call that does not exist, and audits the attempt', async () => {
    const callId = `tc-${'0'.repeat(64)}`;
    expect(await decide(callId, 'alice')).toMatchObject({ accepted: false, code: 'CALL_NOT_FOUND' });
    const envelope: DecisionEnvelope = {
      callId,
      runId: randomUUID(),
      nonce: digestOf(['no round']),
      argsDigest: digestOf({}),
      previewDigest: digestOf({}),
      contractDigest: digestOf({}),
      decision: 'approve',
      approver: 'alice',
      reason: 'blind',
      issuedAt: new Date().toISOString(),
    };
    expect(await harness.admin.send({ callId, decision: signedBy(envelope, 'alice') })).toMatchObject({
      accepted: false,
      code: 'CALL_NOT_FOUND',
    });
    expect(await adminAttempts(callId)).toEqual([
      'CALL_NOT_FOUND alice approve ',
      `CALL_NOT_FOUND alice approve ${envelope.runId}`,
    ]);
  });
});

describe('racing decisions decide once', () => {
  it('applies exactly one refund when six approvals race on a quorum-2 call; the rest are refused as DECISION_REPLAYED or ALREADY_DECIDED', async () => {
    const pending = await proposeCriticalRefund();
    const approvers = ['alice', 'dave', 'alice', 'dave', 'alice', 'dave'];
    const decisions = await Promise.all(
      approvers.map(async (approver, index) =>
        signedBy(await envelopeFor(pending.callId, approver, { reason: `race ${index}` }), approver),
      ),
    );
    const outcomes = await Promise.all(
      decisions.map((decision) => harness.admin.send({ callId: pending.callId, decision })),
    );
    const acceptedFrom = outcomes.flatMap((outcome, index) => (outcome.accepted ? [approvers[index]] : []));
    expect(acceptedFrom.sort()).toEqual(['alice', 'dave']);
    for (const outcome of outcomes.filter((outcome) => !outcome.accepted)) {
      expect(['DECISION_REPLAYED', 'ALREADY_DECIDED']).toContain(
        outcome.accepted ? 'accepted' : outcome.code,
      );
    }
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
    expect(
      (await harness.audit.recordsOf(pending.callId))[0]?.decisions?.map((record) => record.approver).sort(),
    ).toEqual(['alice', 'dave']);
    expect((await auditedAttempts(pending.callId)).filter((line) => line.startsWith('admin '))).toHaveLength(
      6,
    );
  });

  it('counts one signed approval once when it is sent six times at once with a raw client; the rest are DECISION_REPLAYED', async () => {
    const pending = await proposeCriticalRefund();
    const decision = signedBy(await envelopeFor(pending.callId, 'alice'), 'alice');
    const handle = harness.temporal.workflow.getHandle(pending.callId);
    const sends = await Promise.allSettled(
      Array.from({ length: 6 }, () =>
        handle.executeUpdate(decideUpdate, { args: [decision], updateId: randomUUID() }),
      ),
    );
    expect(sends.filter((send) => send.status === 'fulfilled')).toHaveLength(1);
    const refusals = sends.flatMap((send) =>
      send.status === 'rejected' ? [(send.reason as { cause?: { type?: string } }).cause?.type] : [],
    );
    expect(refusals).toEqual(Array(5).fill('DECISION_REPLAYED'));
    await expectStillPending(pending.callId, ['alice']);
  });

  it('decides once when an approval and a denial race: denied applies nothing, approved applies one refund', async () => {
    const calls = [
      await proposeRefund({ order_id: 'ORD-1001', amount_cents: 2_590 }),
      await proposeRefund({ order_id: 'ORD-1002', amount_cents: 3_000, currency: 'USD' }),
      await proposeRefund({ order_id: 'ORD-1003', amount_cents: 5_000 }),
    ];
    await Promise.all(
      calls.map(async (pending, index) => {
        const orderId = `ORD-100${index + 1}`;
        const [approval, denial] = await Promise.all([
          decide(pending.callId, 'alice', 'approve'),
          decide(pending.callId, 'dave', 'deny'),
        ]);
        expect([approval.accepted, denial.accepted].filter(Boolean)).toHaveLength(1);
        const refused = approval.accepted ? denial : approval;
        expect(refused).toMatchObject({ accepted: false, code: 'ALREADY_DECIDED' });
        const final = await harness.client.result(pending.callId, { wait: true });
        if (approval.accepted) {
          expect(final).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
          expect(await harness.orders.api.refundCount({ orderId })).toBe(1);
        } else {
          expect(final).toMatchObject({ ok: false, code: 'APPROVAL_DENIED', effect: 'none' });
          expect(await harness.orders.api.refundCount({ orderId })).toBe(0);
        }
      }),
    );
  });
});

describe('the approver approves what runs', () => {
  it('opens a new round when the order is partly refunded while waiting; round 1’s approvals do not count in it (DIGEST_MISMATCH)', async () => {
    const pending = await proposeCriticalRefund();
    const round1 = [
      signedBy(await envelopeFor(pending.callId, 'alice'), 'alice'),
      signedBy(await envelopeFor(pending.callId, 'dave'), 'dave'),
    ];
    const direct = await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments({ order_id: 'ORD-1003', amount_cents: 1_000 }),
    });
    expect(direct).toMatchObject({ ok: true, effect: 'applied' });
    for (const decision of round1) {
      expect(await harness.admin.send({ callId: pending.callId, decision })).toMatchObject({
        accepted: true,
      });
    }
    // The quorum approved a preview that is no longer what would run: the workflow opens round 2.
    expect(await openRound(pending.callId, { round: 2 })).toMatchObject({
      approvals: [],
      preview: { order_id: 'ORD-1003', amount_cents: 20_000, refunded_before_cents: 1_000 },
    });
    for (const decision of round1) await expectResendRefused(pending.callId, decision, 'DIGEST_MISMATCH');
    expect(await decide(pending.callId, 'dave')).toMatchObject({ accepted: true, approvals: ['dave'] });
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1003' })).toBe(1);
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    const refunds = await harness.orders.api.listRefunds({ orderId: 'ORD-1003' });
    expect(refunds.map((refund) => refund.amountCents).sort()).toEqual([1_000, 20_000]);
  });
});

describe('a run tampered with through a raw Temporal client', () => {
  /** The input a call's current run was started with, as anyone with access to Temporal can read it. */
  async function startInputOf(callId: string): Promise<ToolCallInput> {
    const history = await harness.temporal.workflow.getHandle(callId).fetchHistory();
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!payload) throw new Error(`no start input for ${callId}`);
    return defaultPayloadConverter.fromPayload<ToolCallInput>(payload);
  }

  /**
   * Terminates the call's pending run and starts another under its id with `input` (copied from a
   * start event, then altered), as anyone with access to Temporal could.
   */
  async function restartWith(callId: string, input: ToolCallInput): Promise<void> {
    await harness.temporal.workflow.getHandle(callId).terminate('attack: restart with other input');
    await harness.temporal.workflow.start(toolCallWorkflowType, {
      workflowId: callId,
      taskQueue: harness.taskQueue,
      args: [input],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
  }

  it('refuses a pending call restarted with other arguments under the caller’s signature as UNAUTHENTICATED_CALLER, and refunds nothing', async () => {
    const pending = await proposeRefund();
    const genuine = await startInputOf(pending.callId);
    await restartWith(pending.callId, {
      ...genuine,
      proposal: { ...genuine.proposal, rawArguments: harness.refundArguments({ amount_cents: 9_000 }) },
    });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: false,
      code: 'UNAUTHENTICATED_CALLER',
      effect: 'none',
    });
    expect((await harness.admin.show(pending.callId))?.approval).toBeUndefined();
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a pending call restarted with another call’s genuinely signed proposal as UNAUTHENTICATED_CALLER, and refunds nothing', async () => {
    const pending = await proposeRefund();
    const larger = await proposeRefund({ amount_cents: 9_000 });
    const other = await startInputOf(larger.callId);
    await restartWith(pending.callId, other);
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      code: 'UNAUTHENTICATED_CALLER',
      effect: 'none',
    });
    expect(await appliedRefunds()).toBe(0);
    await expectStillPending(larger.callId);
  });

  // The session's ticket covers the proposal it admitted (its digest): other arguments under it, even
  // signed by the caller, are a call its session never admitted.
  it('refuses a pending call restarted with other arguments signed by the caller itself for that id as SESSION_REQUIRED, and refunds nothing', async () => {
    const pending = await proposeRefund();
    const genuine = await startInputOf(pending.callId);
    const proposal = { ...genuine.proposal, rawArguments: harness.refundArguments({ amount_cents: 9_000 }) };
    const signature = signValue({
      kind: 'proposal',
      value: { callId: pending.callId, proposal },
      privateKey: callerKey('support-bot'),
    });
    await restartWith(pending.callId, { ...genuine, proposal, signature });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      code: 'SESSION_REQUIRED',
      effect: 'none',
    });
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses the terminated run’s approval in a restarted run as DIGEST_MISMATCH, and applies the refund once when approved again', async () => {
    const pending = await proposeRefund();
    const genuine = await startInputOf(pending.callId);
    const earlier = signedBy(await envelopeFor(pending.callId, 'alice'), 'alice');
    await restartWith(pending.callId, genuine);
    const round = await openRound(pending.callId);
    expect(round.runId).not.toBe(earlier.envelope.runId);
    expect(await harness.admin.send({ callId: pending.callId, decision: earlier })).toMatchObject({
      accepted: false,
      code: 'DIGEST_MISMATCH',
    });
    await expectStillPending(pending.callId);
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
  });

  /**
   * Resets the call's completed run to the workflow task that `pick` chooses among its
   * completed ones (the task runs again in a new run), as an operator with Temporal access could.
   */
  async function resetTo(
    callId: string,
    pick: (input: { tasks: HistoryEvent[]; events: HistoryEvent[] }) => HistoryEvent | undefined,
  ): Promise<string> {
    const handle = harness.temporal.workflow.getHandle(callId);
    const { runId } = await handle.describe();
    const events = (await handle.fetchHistory()).events ?? [];
    const tasks = events.filter((event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    const task = pick({ tasks, events });
    if (!task) throw new Error(`no workflow task to reset ${callId} to`);
    const reset = await harness.temporal.workflowService.resetWorkflowExecution({
      namespace: harness.temporal.options.namespace,
      workflowExecution: { workflowId: callId, runId },
      reason: 'attack: run an applied refund again',
      workflowTaskFinishEventId: task.eventId,
      requestId: randomUUID(),
    });
    return reset.runId;
  }

  it('applies an approved refund once when its completed run is reset to its first workflow task', async () => {
    const pending = await proposeRefund();
    const approval = signedBy(await envelopeFor(pending.callId, 'alice'), 'alice');
    expect(await harness.admin.send({ callId: pending.callId, decision: approval })).toMatchObject({
      accepted: true,
      state: 'approved',
    });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);

    const resetRunId = await resetTo(pending.callId, ({ tasks }) => tasks[0]);
    // The reset run starts over: its round is bound to the new run, and the old run's approval,
    // sent again, counts for nothing there.
    expect(await openRound(pending.callId, { runId: resetRunId })).toMatchObject({ approvals: [] });
    expect(await harness.admin.send({ callId: pending.callId, decision: approval })).toMatchObject({
      accepted: false,
      code: 'DIGEST_MISMATCH',
    });
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    // Executed again under the same idempotency key: the orders service answers with the refund it stored.
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
  });

  it('applies a critical refund once when its completed run is reset between its two approvals', async () => {
    const pending = await proposeCriticalRefund();
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    expect(await decide(pending.callId, 'dave')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);

    // The task after alice's approval was accepted: the reset run keeps alice's, not dave's.
    const resetRunId = await resetTo(pending.callId, ({ tasks, events }) => {
      const firstDecision = events.find(
        (event) =>
          event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name ===
          decideUpdate.name,
      );
      return tasks.find((task) => Number(task.eventId) > Number(firstDecision?.eventId));
    });
    await openRound(pending.callId, { runId: resetRunId });
    expect(await decide(pending.callId, 'dave')).toMatchObject({ accepted: true });
    // The refund the first run applied changed the preview: approvers are asked again, on what would run now.
    expect(await openRound(pending.callId, { round: 2 })).toMatchObject({
      approvals: [],
      preview: { refunded_before_cents: 20_000 },
    });
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    expect(await decide(pending.callId, 'dave')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
  });
});
