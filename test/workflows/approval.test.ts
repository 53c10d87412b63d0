import { generateKeyPairSync } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { ToolGateClient } from '../../src/client';
import { signValue } from '../../src/keys/key-files';
import type { DecisionEnvelope, SignedDecision } from '../../src/shared/approval';
import { approvalNonce } from '../../src/shared/approval';
import type { ToolResult } from '../../src/index';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const appliedRefunds = () => harness.orders.api.refundCount();

/** A refund by support-bot, which always needs approval; 20,000 cents on ORD-1003 is critical (quorum 2). */
async function proposeRefund(
  overrides: Record<string, unknown> = {},
  caller = 'support-bot',
): Promise<ToolResult> {
  const result = await harness.call({
    caller,
    tool: 'refund_order',
    arguments: harness.refundArguments(overrides),
  });
  expect(result).toMatchObject({ ok: false, code: 'APPROVAL_PENDING', effect: 'none' });
  return result;
}

const decide = (
  callId: string,
  approver: string,
  decision: 'approve' | 'deny' = 'approve',
  reason = 'checked',
) => harness.admin.decide({ callId, approver, privateKey: harness.approverKey(approver), decision, reason });

/** An envelope for the call's open round, as a well-behaved approver would build it. */
async function envelopeFor(callId: string, approver: string): Promise<DecisionEnvelope> {
  const approval = (await harness.admin.show(callId))?.approval;
  if (!approval) throw new Error('no open round');
  return {
    callId,
    runId: approval.runId,
    nonce: approval.nonce,
    argsDigest: approval.argsDigest,
    previewDigest: approval.previewDigest,
    decision: 'approve',
    approver,
    reason: 'looks fine',
    issuedAt: new Date().toISOString(),
  };
}

const signedBy = (envelope: DecisionEnvelope, approver: string): SignedDecision => ({
  envelope,
  signature: signValue({ kind: 'decision', value: envelope, privateKey: harness.approverKey(approver) }),
});

/** The refused attempts the workflow itself logged for a call (through its sink). */
const workflowRefusals = (callId: string) =>
  harness.audit
    .decisionAttemptsOf(callId)
    .filter((attempt) => attempt.source === 'workflow' && attempt.outcome !== 'accepted')
    .map((attempt) => attempt.outcome);

describe('the approval gate', () => {
  it('answers APPROVAL_PENDING at once with the expiry and the preview, then executes once when approved', async () => {
    const pending = await proposeRefund();
    expect(pending.data).toMatchObject({
      riskLevel: 'irreversible',
      quorum: 1,
      preview: {
        order_id: 'ORD-1001',
        amount_cents: 2590,
        refundable_after_cents: 9410,
        customer_id: 'CUS-1',
      },
    });
    expect(Date.parse(String(pending.data?.expiresAt)) - Date.now()).toBeGreaterThan(3.9 * 60 * 60 * 1000);
    expect(await appliedRefunds()).toBe(0);
    const again = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(again).toMatchObject({ code: 'APPROVAL_PENDING', callId: pending.callId });

    const listed = await harness.admin.pending();
    expect(listed.find((call) => call.callId === pending.callId)).toMatchObject({
      tool: 'refund_order',
      caller: 'support-bot',
    });
    const outcome = await decide(pending.callId, 'alice');
    expect(outcome).toMatchObject({ accepted: true, state: 'approved', approvals: ['alice'] });

    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    expect(await appliedRefunds()).toBe(1);
    const replay = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(replay).toMatchObject({ ok: true, replayed: true });
    expect(await appliedRefunds()).toBe(1);
    const description = await harness.temporal.workflow.getHandle(pending.callId).describe();
    expect(description.searchAttributes.ApprovalState).toEqual(['approved']);
    const [record] = harness.audit.recordsOf(pending.callId);
    expect(record?.decisions).toMatchObject([
      { approver: 'alice', decision: 'approve', outcome: 'accepted' },
    ]);
  });

  it('applies nothing when denied, and gives the model the approver’s reason', async () => {
    const pending = await proposeRefund();
    expect(await decide(pending.callId, 'bob', 'deny', 'customer already got a voucher')).toMatchObject({
      accepted: true,
      state: 'denied',
    });
    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: false, code: 'APPROVAL_DENIED', effect: 'none' });
    expect(final?.message).toContain('customer already got a voucher');
    expect(await appliedRefunds()).toBe(0);
  });

  it('expires on its durable timer as APPROVAL_EXPIRED, not a denial, and refuses a decision after it', async () => {
    const pending = await proposeRefund({}, 'hasty-bot');
    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED', effect: 'none' });
    expect(final?.message).toContain('This is not a denial');
    const late = await decide(pending.callId, 'alice');
    expect(late).toMatchObject({ accepted: false, code: 'APPROVAL_EXPIRED' });
    expect(await appliedRefunds()).toBe(0);
  });

  it('needs two distinct approvers for a critical refund: one does not run it, the same one twice does not, a second does', async () => {
    const pending = await proposeRefund({ order_id: 'ORD-1003', amount_cents: 20_000 });
    expect(pending.data).toMatchObject({ riskLevel: 'critical', quorum: 2 });
    expect(await decide(pending.callId, 'alice')).toMatchObject({
      accepted: true,
      state: 'pending',
      approvals: ['alice'],
    });
    expect(await decide(pending.callId, 'alice')).toMatchObject({
      accepted: false,
      code: 'DECISION_REPLAYED',
    });
    expect(await appliedRefunds()).toBe(0);
    expect(await decide(pending.callId, 'dave')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
  });

  it('checks again after approval: an order refunded meanwhile is rejected, not refunded twice', async () => {
    const pending = await proposeRefund({ amount_cents: 10_000 });
    const direct = await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 5_000 }),
    });
    expect(direct.ok).toBe(true);
    await decide(pending.callId, 'alice');
    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: false, code: 'AMOUNT_EXCEEDS_REFUNDABLE', effect: 'none' });
    expect(await appliedRefunds()).toBe(1);
  });

  it('starts a new round when the preview changed while waiting: the approver approves what will run', async () => {
    const pending = await proposeRefund({ amount_cents: 2_000 });
    await harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 1_000 }),
    });
    await decide(pending.callId, 'alice');
    // The workflow re-checks, sees another preview and opens round 2: nothing runs on round 1's approval.
    await expect
      .poll(async () => (await harness.admin.show(pending.callId))?.approval?.round, { timeout: 10_000 })
      .toBe(2);
    const round2 = (await harness.admin.show(pending.callId))?.approval;
    expect(round2).toMatchObject({
      state: 'pending',
      preview: { refunded_before_cents: 1_000, refundable_after_cents: 9_000 },
    });
    expect(await appliedRefunds()).toBe(1);
    await decide(pending.callId, 'alice');
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(2);
  });

  it('executes exactly once when approved after the worker was stopped and started again', async () => {
    const pending = await proposeRefund();
    await harness.restartWorker();
    await decide(pending.callId, 'alice');
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
  });
});

describe('refused decisions change nothing and are audited', () => {
  let pending: ToolResult;

  beforeEach(async () => {
    pending = await proposeRefund({ order_id: 'ORD-1003', amount_cents: 20_000 });
  });

  const expectRefused = async (decision: SignedDecision, code: string) => {
    const outcome = await harness.admin.send({ callId: pending.callId, decision });
    expect(outcome).toMatchObject({ accepted: false, code });
    expect(await appliedRefunds()).toBe(0);
    expect((await harness.admin.show(pending.callId))?.approval).toMatchObject({
      state: 'pending',
      approvals: [],
    });
    expect(workflowRefusals(pending.callId)).toContain(code);
  };

  it('refuses an unknown approver', async () => {
    const envelope = { ...(await envelopeFor(pending.callId, 'mallory')) };
    const key = generateKeyPairSync('ed25519').privateKey;
    await expectRefused(
      { envelope, signature: signValue({ kind: 'decision', value: envelope, privateKey: key }) },
      'APPROVER_UNKNOWN',
    );
  });

  it('refuses an approver not granted the call’s risk level', async () => {
    await expectRefused(signedBy(await envelopeFor(pending.callId, 'bob'), 'bob'), 'APPROVER_NOT_ALLOWED');
  });

  it('refuses an approver who operates the calling agent', async () => {
    await expectRefused(signedBy(await envelopeFor(pending.callId, 'carol'), 'carol'), 'SELF_APPROVAL');
  });

  it('refuses a decision for other arguments, another preview or an earlier round’s nonce', async () => {
    const envelope = await envelopeFor(pending.callId, 'alice');
    await expectRefused(signedBy({ ...envelope, argsDigest: '0'.repeat(64) }, 'alice'), 'DIGEST_MISMATCH');
    await expectRefused(signedBy({ ...envelope, previewDigest: '1'.repeat(64) }, 'alice'), 'DIGEST_MISMATCH');
    const earlier = approvalNonce({ runId: envelope.runId, round: 0, previewDigest: envelope.previewDigest });
    await expectRefused(signedBy({ ...envelope, nonce: earlier }, 'alice'), 'DIGEST_MISMATCH');
  });

  it('refuses a decision signed with someone else’s key', async () => {
    await expectRefused(signedBy(await envelopeFor(pending.callId, 'alice'), 'dave'), 'SIGNATURE_INVALID');
  });

  it('refuses a forged decision sent with a raw Temporal client, and audits it from the workflow', async () => {
    const envelope = await envelopeFor(pending.callId, 'alice');
    const forged: SignedDecision = { envelope, signature: 'A'.repeat(86) };
    await expect(
      harness.temporal.workflow
        .getHandle(pending.callId)
        .executeUpdate('decide', { args: [forged], updateId: 'forged-1' }),
    ).rejects.toThrow();
    expect(await appliedRefunds()).toBe(0);
    expect(harness.audit.decisionAttemptsOf(pending.callId)).toContainEqual(
      expect.objectContaining({ updateId: 'forged-1', source: 'workflow', outcome: 'SIGNATURE_INVALID' }),
    );
  });

  it('counts the same signed decision once, and refuses any decision once the call is decided', async () => {
    const decision = signedBy(await envelopeFor(pending.callId, 'alice'), 'alice');
    expect(await harness.admin.send({ callId: pending.callId, decision })).toMatchObject({ accepted: true });
    expect(await harness.admin.send({ callId: pending.callId, decision })).toMatchObject({
      accepted: false,
      code: 'DECISION_REPLAYED',
    });
    expect(await appliedRefunds()).toBe(0);
    await decide(pending.callId, 'dave', 'deny', 'no');
    await harness.client.result(pending.callId, { wait: true });
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: false, code: 'ALREADY_DECIDED' });
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('authentication of proposals', () => {
  it('refuses an unsigned proposal, or one signed with another caller’s key, with UNAUTHENTICATED_CALLER', async () => {
    const unsigned = new ToolGateClient({
      client: harness.temporal,
      tools: ordersContracts,
      taskQueue: harness.taskQueue,
      callerKey: () => undefined,
    });
    const result = await unsigned.call({
      session: 's',
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(result).toMatchObject({ ok: false, code: 'UNAUTHENTICATED_CALLER', effect: 'none' });
    const impostor = new ToolGateClient({
      client: harness.temporal,
      tools: ordersContracts,
      taskQueue: harness.taskQueue,
      callerKey: () => generateKeyPairSync('ed25519').privateKey,
    });
    const forged = await impostor.call({
      session: 's2',
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(forged.code).toBe('UNAUTHENTICATED_CALLER');
    expect(await appliedRefunds()).toBe(0);
  });
});
