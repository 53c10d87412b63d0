import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { deliveriesDone } from '../support/notifier';
import { harnessPolicy } from '../support/console-helpers';
import type { KeyObject } from 'node:crypto';
import type { DenialLifter } from 'toolgate/admin';

// Denial memory: a refund an approver denied, proposed again in the same session with the same
// arguments, is answered with that denial at once: no round, no notification, no refund.

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;
let receiver: Receiver;
let harness: ToolGateHarness;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.stop();
});

useHarness((started) => (harness = started), {
  get notifications() {
    return { channels: { approvers: { url: receiver.url('/approvers') } }, waiting: ['approvers'] };
  },
});

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);
const reason = 'the customer was refunded by bank transfer';

/** Denies a waiting refund as alice and returns its call id, once the denied run has closed. */
async function deniedRefund(overrides: Record<string, unknown> = {}): Promise<string> {
  const { callId } = await proposeRefund(overrides);
  // Alice denies once she was asked (a decision first makes the request moot: it is never posted).
  await expect
    .poll(() => receiver.of(callId).map((post) => post.json.event), { timeout: 15_000, interval: 50 })
    .toContain('approval-requested');
  await decide(callId, 'alice', 'deny', reason);
  expect(await harness.client.result(callId, { wait: true })).toMatchObject({
    ok: false,
    code: 'APPROVAL_DENIED',
    data: { approver: 'alice', reason },
  });
  return callId;
}

const proposeAgain = (overrides: Record<string, unknown> = {}): Promise<ToolResult> =>
  harness.call({
    caller: 'support-bot',
    tool: 'refund_order',
    arguments: harness.refundArguments(overrides),
  });

/** The answer a remembered denial gives: the first denial's approver, reason and call, nothing ran. */
const rememberedAnswer = (callId: string) => ({
  ok: false,
  code: 'APPROVAL_DENIED',
  effect: 'none',
  replayed: true,
  callId,
  data: { approver: 'alice', reason, deniedCallId: callId },
});

/** Waits until the denied run's notifier has delivered everything, then returns what reached the channel. */
async function eventsPosted(callId: string): Promise<unknown[]> {
  const [denied] = await harness.audit.recordsOf(callId);
  await deliveriesDone(harness, callId, denied?.runId);
  return receiver.of(callId).map((post) => post.json.event);
}

describe('denial memory', () => {
  it('answers the same refund proposed again, one after another, with the denial: no round, no refund', async () => {
    const callId = await deniedRefund();
    for (let again = 0; again < 5; again++) {
      const answer = await proposeAgain();
      expect(answer).toMatchObject(rememberedAnswer(callId));
      expect(answer.message).toContain(`alice already denied refund 2590 BRL on ORD-1001 in this session`);
    }
    expect(await appliedRefunds()).toBe(0);
    // One round was opened and decided in all: the re-proposals notified no one.
    expect(await eventsPosted(callId)).toEqual(['approval-requested', 'approval-decided']);
    // Every run is in the audit: the denied one, and five answered by its denial, each naming it.
    const records = await harness.audit.recordsOf(callId);
    expect(records.map((record) => [record.code, record.result.replayed ?? false])).toEqual([
      ['APPROVAL_DENIED', false],
      ...Array.from({ length: 5 }, () => ['APPROVAL_DENIED', true]),
    ]);
    expect(records.at(-1)?.result.data).toMatchObject({ deniedCallId: callId, approver: 'alice' });
  });

  it('answers five concurrent re-proposals with the denial', async () => {
    const callId = await deniedRefund();
    const answers = await Promise.all(Array.from({ length: 5 }, () => proposeAgain()));
    for (const answer of answers) expect(answer).toMatchObject(rememberedAnswer(callId));
    expect(await appliedRefunds()).toBe(0);
    expect(await eventsPosted(callId)).toEqual(['approval-requested', 'approval-decided']);
  });

  it('opens a round for other arguments, and for the same arguments in another session', async () => {
    await deniedRefund();
    // Another amount is another call: a person is asked.
    const other = await proposeAgain({ amount_cents: 2000 });
    expect(other).toMatchObject({ ok: false, code: 'APPROVAL_PENDING' });
    // The same refund in a new conversation: the memory is the session's.
    harness.newSession();
    const elsewhere = await proposeAgain();
    expect(elsewhere).toMatchObject({ ok: false, code: 'APPROVAL_PENDING' });
    expect(elsewhere.replayed).toBeUndefined();
    // Approved there, it runs once.
    await decide(elsewhere.callId, 'alice');
    expect(await harness.client.result(elsewhere.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
  });

  it('asks again once an approver lifted the denial; a lift nobody may give changes nothing', async () => {
    const callId = await deniedRefund();
    const policy = harnessPolicy(harness);
    const lift = (by: DenialLifter, key: KeyObject, checked = true) =>
      harness.admin.liftDenial({
        deniedCallId: callId,
        by,
        privateKey: key,
        reason: 'the customer sent the receipt',
        ...(checked ? { policy } : {}),
      });
    // Not in the policy, or signed with another's key: refused when checked, ignored by the worker when not.
    expect(await lift({ operator: 'mallory' }, harness.operatorKey('mallory'))).toMatchObject({
      accepted: false,
      code: 'LIFT_NOT_ALLOWED',
    });
    expect(await lift({ approver: 'bob' }, harness.approverKey('carol'))).toMatchObject({
      accepted: false,
      code: 'LIFT_NOT_ALLOWED',
    });
    expect(await lift({ approver: 'bob' }, harness.approverKey('carol'), false)).toMatchObject({
      accepted: true,
    });
    expect(await proposeAgain()).toMatchObject(rememberedAnswer(callId));
    expect(
      await harness.admin.liftDenial({
        deniedCallId: 'tc-refund_order-' + '0'.repeat(64),
        by: { approver: 'bob' },
        privateKey: harness.approverKey('bob'),
        reason: 'nothing to lift',
      }),
    ).toMatchObject({ accepted: false, code: 'DENIAL_NOT_FOUND' });
    // Bob lifts it: the same refund opens a round again, and a person is notified.
    expect(await lift({ approver: 'bob' }, harness.approverKey('bob'))).toMatchObject({
      accepted: true,
      liftedBy: 'bob',
    });
    const asked = await proposeAgain();
    expect(asked).toMatchObject({ ok: false, code: 'APPROVAL_PENDING', callId });
    expect(asked.replayed).toBeUndefined();
    // Denied again, it is remembered again: the lift was for the earlier denial.
    await decide(callId, 'alice', 'deny', reason);
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ code: 'APPROVAL_DENIED' });
    expect(await proposeAgain()).toMatchObject({ code: 'APPROVAL_DENIED', replayed: true });
    expect(await appliedRefunds()).toBe(0);
    // Every lift is in the audit, with its signature.
    const lifts = (await harness.audit.decisionAttemptsOf(callId)).filter(
      (attempt) => attempt.decision === 'lift',
    );
    expect(lifts.map((attempt) => attempt.approver)).toEqual(['bob', 'bob']);
  });

  it('asks again once an operator lifted it; approved, the refund runs once', async () => {
    const callId = await deniedRefund();
    const lifted = await harness.admin.liftDenial({
      deniedCallId: callId,
      by: { operator: 'olivia' },
      privateKey: harness.operatorKey('olivia'),
      reason: 'denied by mistake',
      policy: harnessPolicy(harness),
    });
    expect(lifted).toMatchObject({ accepted: true, liftedBy: 'olivia' });
    expect(await proposeAgain()).toMatchObject({ code: 'APPROVAL_PENDING', callId });
    await decide(callId, 'alice');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
  });
});
