import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { searchAttributes } from 'toolgate/protocol';
import { verifyWebhookSignature } from 'toolgate/backend';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { deliveriesDone as notifierDone, notifierOf as notifierOfRun } from '../support/notifier';

const secretEnv = 'TOOLGATE_TEST_APPROVERS_WEBHOOK_SECRET';
const secret = 'approvers-channel-secret';
const escalationDelayMs = 3_000;

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;
let receiver: Receiver;
let harness: ToolGateHarness;

// The receiver must listen before the harness's worker reads the config; beforeAll hooks run in order.
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  process.env[secretEnv] = secret;
});
afterAll(async () => {
  await receiver?.stop();
});

useHarness((started) => (harness = started), {
  get notifications() {
    return {
      consoleUrl: 'https://console.example',
      channels: {
        approvers: { url: receiver.url('/approvers'), secretEnv },
        oncall: { url: receiver.url('/oncall') },
      },
      waiting: ['approvers'],
      escalation: { after: `${escalationDelayMs / 1000}s`, channels: ['oncall'] },
    };
  },
});

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

/** Polls until `find` returns something (the deliveries run beside the call, not before its answer). */
async function eventually<T>(find: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error('timed out waiting for a webhook delivery');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The accepted (200) posts of one event for a call on one channel path. */
const accepted = (callId: string, path: string, event: string) =>
  receiver.of(callId).filter((r) => r.path === path && r.json.event === event && r.answered === 200);

const delivered = (callId: string, path: string, event: string) =>
  eventually(() => accepted(callId, path, event)[0]);

async function runIdOf(callId: string): Promise<string> {
  return (await harness.temporal.workflow.getHandle(callId).describe()).runId;
}

const notifierOf = (callId: string) => notifierOfRun(harness, callId);
const deliveriesDone = (callId: string) => notifierDone(harness, callId);

describe('approval notifications', () => {
  it('posts one signed Slack-compatible message when a refund waits, and one follow-up when it is approved', async () => {
    const pending = await proposeRefund();
    const { callId } = pending;
    const requested = await delivered(callId, '/approvers', 'approval-requested');
    const runId = await runIdOf(callId);
    const expiresAt = String(pending.data?.expiresAt);
    expect(requested.json).toMatchObject({
      text:
        `refund 2590 BRL on ORD-1001 by support-bot waits for approval (irreversible), ` +
        `expires ${expiresAt.slice(11, 16)} UTC — https://console.example/calls/${callId}`,
      event: 'approval-requested',
      eventId: `${callId}:${runId}:1:approval-requested`,
      callId,
      tool: 'refund_order',
      caller: 'support-bot',
      riskLevel: 'irreversible',
      expiresAt,
      summary: 'refund 2590 BRL on ORD-1001',
      consoleUrl: `https://console.example/calls/${callId}`,
    });
    expect(requested.json.blocks).toHaveLength(1);
    expect(requested.headers['idempotency-key']).toBe(`${callId}:${runId}:1:approval-requested`);
    const timestamp = String(requested.headers['x-toolgate-timestamp']);
    const signature = String(requested.headers['x-toolgate-signature']);
    expect(verifyWebhookSignature({ secret, timestamp, body: requested.body, signature })).toEqual({
      ok: true,
    });
    expect(
      verifyWebhookSignature({ secret, timestamp, body: requested.body.replace('2590', '25900'), signature }),
    ).toEqual({ ok: false, reason: 'signature-mismatch' });
    expect(
      verifyWebhookSignature({
        secret,
        timestamp,
        body: requested.body,
        signature,
        nowMs: Date.now() + 600_000,
      }),
    ).toEqual({ ok: false, reason: 'timestamp-out-of-range' });

    await decide(callId, 'alice');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);

    // The follow-up may reach the receiver after the answer: once the notifier finished, it is final.
    await deliveriesDone(callId);
    const posts = receiver.of(callId);
    expect(posts.map((post) => [post.path, post.json.event, post.answered])).toEqual([
      ['/approvers', 'approval-requested', 200],
      ['/approvers', 'approval-decided', 200],
    ]);
    expect(posts[1]?.json).toMatchObject({ outcome: 'approved', approvers: ['alice'] });
    expect(String(posts[1]?.json.text)).toMatch(
      /^Approved by alice: refund 2590 BRL on ORD-1001 by support-bot/,
    );
    expect(posts[1]?.headers['idempotency-key']).toBe(`${callId}:${runId}:1:approval-decided`);
    // Decided before the escalation delay: its timer was cancelled, the on-call channel heard nothing.
    expect(await harness.audit.notificationDeliveriesOf(callId)).toMatchObject([
      { event: 'approval-requested', channel: 'approvers', outcome: 'delivered', httpStatus: 200 },
      { event: 'approval-decided', channel: 'approvers', outcome: 'delivered', httpStatus: 200 },
    ]);
  });

  it('posts each event once across a worker restart while the call waits', async () => {
    const { callId } = await proposeRefund();
    await delivered(callId, '/approvers', 'approval-requested');
    await harness.restartWorker();
    await decide(callId, 'alice', 'deny', 'approve 2590, not 25900');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ code: 'APPROVAL_DENIED' });
    await harness.restartWorker();
    await deliveriesDone(callId);
    const events = receiver
      .of(callId)
      .filter((post) => post.path === '/approvers')
      .map((post) => post.json.event);
    expect(events.sort()).toEqual(['approval-decided', 'approval-requested']);
    expect(accepted(callId, '/approvers', 'approval-decided')[0]?.json).toMatchObject({
      outcome: 'denied',
      approvers: ['alice'],
      reason: 'approve 2590, not 25900',
    });
    expect(await appliedRefunds()).toBe(0);
  });

  it('escalates to the second channel after its delay when nobody decided, then follows up on both', async () => {
    const { callId } = await proposeRefund();
    const requested = await delivered(callId, '/approvers', 'approval-requested');
    const escalated = await delivered(callId, '/oncall', 'approval-escalated');
    expect(escalated.atMs - requested.atMs).toBeGreaterThanOrEqual(escalationDelayMs - 1_000);
    expect(String(escalated.json.text)).toMatch(
      /^Still undecided: refund 2590 BRL on ORD-1001 by support-bot/,
    );
    expect(escalated.headers['x-toolgate-signature']).toBeUndefined(); // the on-call channel has no secret
    await decide(callId, 'bob', 'deny', 'not today');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ code: 'APPROVAL_DENIED' });
    await deliveriesDone(callId);
    const summary = receiver.of(callId).map((post) => `${post.path} ${String(post.json.event)}`);
    expect(summary.sort()).toEqual([
      '/approvers approval-decided',
      '/approvers approval-requested',
      '/oncall approval-decided',
      '/oncall approval-escalated',
    ]);
  });

  it('delivers once to a receiver that fails three times, with the same Idempotency-Key on every attempt', async () => {
    receiver.failNext({ path: '/approvers', event: 'approval-requested', times: 3 });
    const { callId } = await proposeRefund();
    await delivered(callId, '/approvers', 'approval-requested');
    const attempts = receiver
      .of(callId)
      .filter((post) => post.path === '/approvers' && post.json.event === 'approval-requested');
    expect(attempts.map((attempt) => attempt.answered)).toEqual([500, 500, 500, 200]);
    const runId = await runIdOf(callId);
    expect(new Set(attempts.map((attempt) => attempt.headers['idempotency-key']))).toEqual(
      new Set([`${callId}:${runId}:1:approval-requested`]),
    );
    for (const attempt of attempts) {
      const verification = verifyWebhookSignature({
        secret,
        timestamp: String(attempt.headers['x-toolgate-timestamp']),
        body: attempt.body,
        signature: String(attempt.headers['x-toolgate-signature']),
      });
      expect(verification).toEqual({ ok: true });
    }
    await decide(callId, 'alice', 'deny', 'testing a flaky channel');
    await harness.client.result(callId, { wait: true });
    await deliveriesDone(callId);
    expect(accepted(callId, '/approvers', 'approval-requested')).toHaveLength(1);
    expect(
      (await harness.audit.notificationDeliveriesOf(callId)).filter(
        (delivery) => delivery.event === 'approval-requested' && delivery.channel === 'approvers',
      ),
    ).toMatchObject([{ outcome: 'delivered', attempt: 4 }]);
  });

  it('follows up on an expired call as expired, never as denied', async () => {
    // hasty-bot's approvals expire after 1 s, before the escalation delay: no escalation either.
    const { callId } = await proposeRefund({}, 'hasty-bot');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ code: 'APPROVAL_EXPIRED' });
    await deliveriesDone(callId);
    const posts = receiver.of(callId);
    expect(posts.map((post) => `${post.path} ${String(post.json.event)}`)).toEqual([
      '/approvers approval-requested',
      '/approvers approval-expired',
    ]);
    expect(posts[1]?.json).toMatchObject({ outcome: 'expired' });
    expect(String(posts[1]?.json.text)).toMatch(
      /^Expired without a decision: refund 2590 BRL on ORD-1001 by hasty-bot/,
    );
    expect(posts[1]?.body).not.toMatch(/denied/i);
  });

  it("escapes an approver's reason in the follow-up's Slack text, so it can ping nobody", async () => {
    const { callId } = await proposeRefund();
    await delivered(callId, '/approvers', 'approval-requested');
    await decide(callId, 'bob', 'deny', '<!channel> see <https://evil.example|Open in the console> & more');
    const followUp = await delivered(callId, '/approvers', 'approval-decided');
    const escaped = '&lt;!channel&gt; see &lt;https://evil.example|Open in the console&gt; &amp; more';
    const mrkdwn = (followUp.json.blocks as { text: { text: string } }[])[0]?.text.text;
    expect(mrkdwn).toBe(
      `Denied by bob: refund 2590 BRL on ORD-1001 by support-bot (irreversible), reason: ${escaped}\n` +
        `<https://console.example/calls/${callId}|Open in the console>`,
    );
    expect(String(followUp.json.text)).toContain(`reason: ${escaped} — https://console.example/calls/`);
    // toolgate's own field keeps the reason as the approver wrote it.
    expect(followUp.json.reason).toBe('<!channel> see <https://evil.example|Open in the console> & more');
  });

  it("says on whose behalf a refund waits, and sends nothing for another customer's order", async () => {
    const context = { onBehalfOf: 'CUS-1', channel: 'end-user-chat' };
    const session = harness.newSession();
    const before = await appliedRefunds();
    // In CUS-1's conversation, a refund of CUS-2's order is refused by code: no round, no post.
    const notOwned = await harness.call({
      caller: 'support-bot',
      session,
      context,
      tool: 'refund_order',
      arguments: harness.refundArguments({ order_id: 'ORD-1002', amount_cents: 4500, currency: 'USD' }),
    });
    expect(notOwned).toMatchObject({ ok: false, code: 'ORDER_NOT_OWNED', effect: 'none' });
    const own = await harness.call({
      caller: 'support-bot',
      session,
      context,
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(own).toMatchObject({ code: 'APPROVAL_PENDING' });
    const requested = await delivered(own.callId, '/approvers', 'approval-requested');
    expect(requested.json).toMatchObject({ caller: 'support-bot', actingFor: 'for CUS-1 (end-user-chat)' });
    expect(String(requested.json.text)).toContain(
      'by support-bot for CUS-1 (end-user-chat) waits for approval',
    );
    // The refused call started no notifier (it is the call's child), so nothing was or will be posted.
    const history = await harness.temporal.workflow.getHandle(notOwned.callId).fetchHistory();
    expect(
      history.events?.filter((event) => event.startChildWorkflowExecutionInitiatedEventAttributes),
    ).toEqual([]);
    expect(receiver.of(notOwned.callId)).toEqual([]);
    expect(await harness.audit.notificationDeliveriesOf(notOwned.callId)).toEqual([]);
    await decide(own.callId, 'alice', 'deny');
    await deliveriesDone(own.callId);
    expect(await appliedRefunds()).toBe(before);
  });

  it('delivers from a workflow of its own that outlives the call and that no list of calls shows', async () => {
    const { callId } = await proposeRefund();
    await delivered(callId, '/approvers', 'approval-requested');
    const notifier = await notifierOf(callId);
    // The approvers' queue lists the call, never its notifier; asked for by id, the notifier is no call.
    const pending = await harness.admin.pending();
    expect(pending.map((entry) => entry.callId)).toContain(callId);
    expect(pending.map((entry) => entry.callId)).not.toContain(notifier.workflowId);
    expect(
      await harness.client.callStatus({ callId: notifier.workflowId, caller: 'support-bot' }),
    ).toMatchObject({ ok: false, code: 'CALL_NOT_FOUND' });
    // It carries none of the search attributes calls are listed by (visibility counts stay calls only).
    const attributes = (await notifier.describe()).typedSearchAttributes;
    for (const key of Object.values(searchAttributes)) expect(attributes.get(key)).toBeUndefined();
    // An operator terminates the call: the notifier is abandoned, not terminated with it.
    await harness.temporal.workflow.getHandle(callId).terminate('test: the call vanishes');
    expect((await notifier.describe()).status.name).toBe('RUNNING');
    await notifier.terminate('test: clean up');
  });
});
