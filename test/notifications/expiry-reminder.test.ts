import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PolicyFileInput } from 'toolgate';
import { approvalHelpers } from '../support/approval-helpers';
import { deliveriesDone } from '../support/notifier';
import { testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { startWebhookReceiver } from '../support/webhook-receiver';

// Expiry that warns: a round still undecided shortly before it expires is posted again to the
// waiting channels (and the reminder's own), and the call's status says how long is left and whose
// turn it is. support-bot's rounds last 6 s here; the reminder comes 4 s before the end.

const windowMs = 6_000;
const reminderMs = 4_000;

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;
let receiver: Receiver;
let harness: ToolGateHarness;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.stop();
});

const policy: PolicyFileInput = {
  ...testPolicy,
  callers: {
    ...testPolicy.callers,
    'support-bot': {
      ...testPolicy.callers['support-bot']!,
      approval: {
        ceiling: 'critical',
        windows: { irreversible: `${windowMs / 1000}s`, critical: `${windowMs / 1000}s` },
        quorum: { critical: 2 },
      },
    },
  },
};

useHarness((started) => (harness = started), {
  policy,
  get notifications() {
    return {
      channels: {
        approvers: { url: receiver.url('/approvers') },
        oncall: { url: receiver.url('/oncall') },
      },
      waiting: ['approvers'],
      reminder: { before: `${reminderMs / 1000}s`, channels: ['oncall'] },
    };
  },
});

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

const events = (callId: string) =>
  receiver
    .of(callId)
    .filter((post) => post.answered === 200)
    .map((post) => `${post.path} ${String(post.json.event)}`)
    .sort();

describe('expiry that warns', () => {
  it('reminds both channels before the round expires, and the status says the time left and whose turn', async () => {
    const { callId } = await proposeRefund();
    // Right away: every eligible approver (carol operates support-bot), a whole window left.
    const first = await harness.client.callStatus({ callId, caller: 'support-bot' });
    expect(first).toMatchObject({
      code: 'APPROVAL_PENDING',
      data: { round: 1, approvals: [], waitingFor: { approvals: 1, approvers: ['alice', 'bob', 'dave'] } },
    });
    expect(first.data?.timeLeftMs).toBeGreaterThan(reminderMs);
    expect(first.data?.expiringSoon).toBeUndefined();
    expect(first.message).toContain('1 more approval(s) needed from alice, bob, dave');
    const round = (await harness.admin.show(callId))?.approval;
    expect(Date.parse(round!.remindAt!)).toBe(Date.parse(round!.expiresAt) - reminderMs);

    await expect
      .poll(() => events(callId), { timeout: 15_000, interval: 100 })
      .toContain('/oncall approval-expiring');
    const reminder = receiver.of(callId).find((post) => post.json.event === 'approval-expiring');
    expect(String(reminder?.json.text)).toMatch(
      /^Expires soon, at \d\d:\d\d UTC, undecided: refund 2590 BRL/,
    );
    const requested = receiver.of(callId).find((post) => post.json.event === 'approval-requested');
    expect(reminder!.atMs - requested!.atMs).toBeGreaterThanOrEqual(windowMs - reminderMs - 1_000);
    const later = await harness.client.callStatus({ callId, caller: 'support-bot' });
    expect(later.data).toMatchObject({ expiringSoon: true });
    expect(later.data?.timeLeftMs).toBeLessThanOrEqual(reminderMs);

    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ code: 'APPROVAL_EXPIRED' });
    await deliveriesDone(harness, callId);
    expect(events(callId)).toEqual([
      '/approvers approval-expired',
      '/approvers approval-expiring',
      '/approvers approval-requested',
      '/oncall approval-expiring',
    ]);
    expect(await appliedRefunds()).toBe(0);
  });

  it('sends no reminder for a round decided before it', async () => {
    const { callId } = await proposeRefund();
    await decide(callId, 'alice');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ ok: true });
    await deliveriesDone(harness, callId);
    expect(events(callId)).toEqual(['/approvers approval-decided', '/approvers approval-requested']);
    expect(await appliedRefunds()).toBe(1);
  });
});
