import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PolicyFileInput } from 'toolgate';
import { approvalHelpers } from '../support/approval-helpers';
import { deliveriesDone } from '../support/notifier';
import { approversInGroups, testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { startWebhookReceiver } from '../support/webhook-receiver';

// A chain's notifications go to the group whose turn it is: the lead's channel when the call starts
// waiting, finance's once the lead approved (the chain's escalation); the ending goes to everyone told.

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
        chains: { irreversible: [{ group: 'support-lead' }, { group: 'finance' }] },
      },
    },
  },
  approvers: approversInGroups({ alice: ['support-lead'], dave: ['finance'] }),
};

useHarness((started) => (harness = started), {
  policy,
  get notifications() {
    return {
      channels: {
        approvers: { url: receiver.url('/approvers') },
        leads: { url: receiver.url('/leads') },
        finance: { url: receiver.url('/finance') },
      },
      waiting: ['approvers'],
      groups: { 'support-lead': ['leads'], finance: ['finance'] },
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

describe('notifications along an approval chain', () => {
  it("asks the lead's channel first, finance's once the lead approved, and tells the channels told how it ended", async () => {
    const { callId } = await proposeRefund();
    await expect
      .poll(() => events(callId), { timeout: 15_000, interval: 100 })
      .toEqual(['/leads approval-requested']);
    const request = receiver.of(callId).find((post) => post.json.event === 'approval-requested');
    expect(String(request?.json.text)).toMatch(/^group support-lead \(step 1 of 2\): refund 2590 BRL/);

    expect(await decide(callId, 'alice')).toMatchObject({ accepted: true, state: 'pending' });
    await expect
      .poll(() => events(callId), { timeout: 15_000, interval: 100 })
      .toContain('/finance approval-turn');
    const turn = receiver.of(callId).find((post) => post.json.event === 'approval-turn');
    expect(turn?.json).toMatchObject({ chain: { group: 'finance', step: 2, steps: 2 } });
    expect(String(turn?.json.text)).toMatch(/^Your turn, group finance \(step 2 of 2\): refund 2590 BRL/);
    expect(await appliedRefunds()).toBe(0);

    expect(await decide(callId, 'dave')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ ok: true });
    await deliveriesDone(harness, callId);
    // Only the channels told: the waiting channel, never asked, hears nothing.
    expect(events(callId)).toEqual([
      '/finance approval-decided',
      '/finance approval-turn',
      '/leads approval-decided',
      '/leads approval-requested',
    ]);
    expect(await appliedRefunds()).toBe(1);
  });
});
