import { describe, expect, it, vi } from 'vitest';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Forged, misbound, replayed, raced and late decisions: test/attacks/decision-attacks.test.ts.

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

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

    const listed = await vi.waitFor(async () => {
      const all = await harness.admin.pending();
      if (!all.some((call) => call.callId === pending.callId)) throw new Error('not listed yet');
      return all;
    });
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
    const [record] = await harness.audit.recordsOf(pending.callId);
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
