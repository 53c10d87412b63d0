import { describe, expect, it } from 'vitest';
import type { PolicyFileInput } from 'toolgate';
import type { DecisionEnvelope } from 'toolgate/protocol';
import { signValue } from 'toolgate/protocol';
import { approvalHelpers } from '../support/approval-helpers';
import { approversInGroups, testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Approval chains: support-bot's refunds need support-lead first; above 5,000 cents, finance after
// the lead; critical refunds (above 10,000) ask finance of the customer's region (the context's
// claim), routed. cautious-bot's finance step waits 2 s only, so it expires in the test.

const policy: PolicyFileInput = {
  ...testPolicy,
  callers: {
    ...testPolicy.callers,
    'support-bot': {
      ...testPolicy.callers['support-bot']!,
      approval: {
        ceiling: 'critical',
        chains: {
          irreversible: [
            { group: 'support-lead' },
            { group: 'finance', when: { amountAbove: 5_000 }, window: '1h' },
          ],
          critical: [{ group: 'support-lead' }, { group: 'finance-{claims.region}' }],
        },
      },
    },
    'cautious-bot': {
      ...testPolicy.callers['cautious-bot']!,
      approval: {
        ceiling: 'irreversible',
        chains: { irreversible: [{ group: 'support-lead' }, { group: 'finance', window: '2s' }] },
      },
    },
  },
  approvers: approversInGroups({
    alice: ['support-lead'],
    bob: ['support-lead'],
    dave: ['finance', 'finance-eu'],
  }),
};

let harness: ToolGateHarness;
useHarness((started) => (harness = started), { policy });
const { appliedRefunds, decide } = approvalHelpers(() => harness);

/** A refund proposed by `caller` in a new session, waiting for approval. */
async function propose(input: {
  amount: number;
  order?: string;
  caller?: string;
  region?: string;
}): Promise<string> {
  const result = await harness.client.call({
    session: harness.newSession(),
    caller: input.caller ?? 'support-bot',
    ...(input.region ? { context: { claims: { region: input.region } } } : {}),
    tool: 'refund_order',
    arguments: harness.refundArguments({ order_id: input.order ?? 'ORD-1001', amount_cents: input.amount }),
  });
  expect(result).toMatchObject({ code: 'APPROVAL_PENDING' });
  return result.callId;
}

const chainOf = async (callId: string) => (await harness.admin.show(callId))?.approval?.chain;

describe('approval chains', () => {
  it('runs a refund above 5,000 only once the lead, then finance, approved it, in that order', async () => {
    const before = await appliedRefunds();
    const callId = await propose({ amount: 8_000 });
    expect(await chainOf(callId)).toMatchObject({
      step: 1,
      steps: [
        { group: 'support-lead', quorum: 1, approvals: [], state: 'current' },
        { group: 'finance', quorum: 1, approvals: [], state: 'waiting' },
      ],
    });

    // Finance before the lead: refused, and it counts for nothing.
    const early = await decide(callId, 'dave');
    expect(early).toMatchObject({ accepted: false, code: 'APPROVER_NOT_ALLOWED' });
    expect((early as { message: string }).message).toContain('group "support-lead"\'s turn (step 1 of 2)');

    // The lead alone: the call still waits, now for finance, with finance's own window.
    expect(await decide(callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    const status = await harness.client.callStatus({ callId, caller: 'support-bot' });
    expect(status).toMatchObject({
      code: 'APPROVAL_PENDING',
      data: {
        approvals: ['alice'],
        waitingFor: { approvals: 1, approvers: ['dave'], chain: { group: 'finance', step: 2, steps: 2 } },
      },
    });
    const afterLead = await harness.admin.show(callId);
    expect(afterLead?.approval?.chain).toMatchObject({
      step: 2,
      steps: [{ approvals: ['alice'], state: 'approved' }, { state: 'current' }],
    });
    // The finance step waits an hour from its turn, not the level's four hours from the proposal.
    const leftMs = Date.parse(afterLead!.approval!.expiresAt) - Date.now();
    expect(leftMs).toBeLessThanOrEqual(60 * 60 * 1000);
    expect(leftMs).toBeGreaterThan(50 * 60 * 1000);
    // Another lead now: not their turn any more.
    expect(await decide(callId, 'bob')).toMatchObject({ accepted: false, code: 'APPROVER_NOT_ALLOWED' });
    expect(await appliedRefunds()).toBe(before);

    // Finance, in its turn: the refund runs, once.
    expect(await decide(callId, 'dave')).toMatchObject({ accepted: true, state: 'approved' });
    const result = await harness.client.result(callId, { wait: true });
    expect(result).toMatchObject({ ok: true, code: 'OK' });
    expect(await appliedRefunds()).toBe(before + 1);
    expect((await harness.admin.show(callId))?.decisions.map((decision) => decision.approver)).toEqual([
      'alice',
      'dave',
    ]);
  });

  it('asks the lead alone for a refund at or below 5,000 (the finance step does not apply)', async () => {
    const before = await appliedRefunds();
    const callId = await propose({ amount: 2_000 });
    expect(await chainOf(callId)).toMatchObject({ steps: [{ group: 'support-lead' }] });
    expect(await decide(callId, 'dave')).toMatchObject({ accepted: false, code: 'APPROVER_NOT_ALLOWED' });
    expect(await decide(callId, 'bob')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ ok: true });
    expect(await appliedRefunds()).toBe(before + 1);
  });

  it('ends APPROVAL_EXPIRED when a later step of the chain expires, and nothing runs', async () => {
    const before = await appliedRefunds();
    const callId = await propose({ amount: 3_000, caller: 'cautious-bot' });
    expect(await decide(callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    const result = await harness.client.result(callId, { wait: true });
    expect(result).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED', effect: 'none' });
    const state = await harness.admin.show(callId);
    expect(state?.approval).toMatchObject({
      state: 'expired',
      chain: { step: 2, steps: [{ state: 'approved' }, { group: 'finance', state: 'current' }] },
    });
    // A decision after the expiry changes nothing.
    expect(await decide(callId, 'dave')).toMatchObject({ accepted: false, code: 'APPROVAL_EXPIRED' });
    expect(await appliedRefunds()).toBe(before);
  });

  it('ends at the first denial, whichever step denies', async () => {
    const before = await appliedRefunds();
    const callId = await propose({ amount: 7_000 });
    await decide(callId, 'alice');
    expect(await decide(callId, 'dave', 'deny', 'over the monthly budget')).toMatchObject({
      accepted: true,
      state: 'denied',
    });
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({
      code: 'APPROVAL_DENIED',
      data: { approver: 'dave', reason: 'over the monthly budget' },
    });
    expect(await appliedRefunds()).toBe(before);
  });

  it("routes a critical refund's finance step by the customer's region, and refuses one nobody can approve", async () => {
    const before = await appliedRefunds();
    const callId = await propose({ amount: 20_000, order: 'ORD-1003', region: 'eu' });
    expect(await chainOf(callId)).toMatchObject({
      steps: [{ group: 'support-lead' }, { group: 'finance-eu' }],
    });
    // No finance-us approver: refused at once, with what to fix, instead of waiting for nobody.
    const nobody = await harness.client.call({
      session: harness.newSession(),
      caller: 'support-bot',
      context: { claims: { region: 'us' } },
      tool: 'refund_order',
      arguments: harness.refundArguments({ order_id: 'ORD-1003', amount_cents: 20_000 }),
    });
    expect(nobody).toMatchObject({ ok: false, code: 'PERMISSION_DENIED', effect: 'none' });
    expect(nobody.message).toContain('group "finance-us"');
    // No region at all: the step cannot be routed.
    const unrouted = await harness.client.call({
      session: harness.newSession(),
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments({ order_id: 'ORD-1003', amount_cents: 20_000 }),
    });
    expect(unrouted).toMatchObject({ ok: false, code: 'PERMISSION_DENIED' });
    expect(unrouted.message).toContain('{claims.region}');

    expect(await decide(callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    expect(await decide(callId, 'dave')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ ok: true });
    expect(await appliedRefunds()).toBe(before + 1);
  });

  it('never counts a decision signed during the step before: each step has its own nonce', async () => {
    const before = await appliedRefunds();
    const callId = await propose({ amount: 6_000 });
    const stepOne = (await harness.admin.show(callId))!.approval!;
    // Finance signs while it is still the lead's turn, and holds on to it.
    const envelope: DecisionEnvelope = {
      callId,
      runId: stepOne.runId,
      nonce: stepOne.nonce,
      argsDigest: stepOne.argsDigest,
      previewDigest: stepOne.previewDigest,
      contractDigest: stepOne.contractDigest,
      decision: 'approve',
      approver: 'dave',
      reason: 'signed early',
      issuedAt: new Date().toISOString(),
    };
    const early = {
      envelope,
      signature: signValue({ kind: 'decision', value: envelope, privateKey: harness.approverKey('dave') }),
    };
    expect(await decide(callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    const stepTwo = (await harness.admin.show(callId))!.approval!;
    expect(stepTwo.nonce).not.toBe(stepOne.nonce);
    // Sent now, in finance's turn: signed for step 1, so it counts for nothing.
    expect(await harness.admin.send({ callId, decision: early })).toMatchObject({
      accepted: false,
      code: 'DIGEST_MISMATCH',
    });
    expect(await harness.client.callStatus({ callId, caller: 'support-bot' })).toMatchObject({
      code: 'APPROVAL_PENDING',
    });
    expect(await appliedRefunds()).toBe(before);
    expect(await decide(callId, 'dave')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ ok: true });
    expect(await appliedRefunds()).toBe(before + 1);
  });
});
