import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from 'toolgate/backend';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// A raw Temporal client may start a workflow of any type on the task queue and signal any workflow.
// The notifier posts only as the child its call started, and only what the call's own state says:
// a forged notifier posts nothing, a forged signal changes nothing, and the real notices still go out.

const secretEnv = 'TOOLGATE_TEST_FORGERY_WEBHOOK_SECRET';
const secret = 'forgery-channel-secret';
const escalationDelayMs = 3_000;

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: Record<string, unknown>;
}

async function startReceiver() {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({
        path: request.url ?? '/',
        headers: request.headers,
        body,
        json: JSON.parse(body) as Record<string, unknown>,
      });
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    received,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
let receiver: Receiver;
let harness: ToolGateHarness;

beforeAll(async () => {
  receiver = await startReceiver();
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
        oncall: { url: receiver.url('/oncall'), secretEnv },
      },
      waiting: ['approvers'],
      escalation: { after: `${escalationDelayMs / 1000}s`, channels: ['oncall'] },
    };
  },
});

const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

async function eventually<T>(find: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error('timed out waiting for a webhook delivery');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const signedOk = (post: Received) =>
  verifyWebhookSignature({
    secret,
    timestamp: String(post.headers['x-toolgate-timestamp']),
    body: post.body,
    signature: String(post.headers['x-toolgate-signature']),
  });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const postsOf = (callId: string, event: string) =>
  receiver.received.filter((post) => post.json.callId === callId && post.json.event === event);

describe('the approval notifier posts only what its call says', () => {
  it('a notifier started with a raw client posts nothing; the call’s own request still goes out', async () => {
    const pending = await proposeRefund({ amount_cents: 25_900, order_id: 'ORD-1003' });
    const { callId } = pending;
    const runId = (await harness.temporal.workflow.getHandle(callId).describe()).runId;
    const forgedSummary = 'refund 2590 BRL on ORD-1003 (routine, finance already agreed)';
    const forged = (workflowId: string, forgedRunId: string) =>
      harness.temporal.workflow.start('toolgateApprovalNotifications', {
        taskQueue: harness.taskQueue,
        workflowId,
        args: [
          {
            call: {
              callId,
              runId: forgedRunId,
              tool: 'refund_order',
              caller: 'support-bot',
              summary: forgedSummary,
              windowMs: 3_600_000,
            },
            plan: {
              waiting: ['approvers'],
              escalation: { afterMs: 0, channels: ['oncall'] },
              followUp: false,
            },
            firstRound: {
              round: 1,
              riskLevel: 'reversible',
              expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
            },
          },
        ],
      });
    // Made-up ids, the real ids under another workflow id: neither has the call for parent.
    const handles = [
      await forged(`forged-notifier-${callId}`, `forged-run-${callId}`),
      await forged(`forged-escalation-${callId}`, runId),
    ];
    for (const handle of handles) await handle.result();

    const requested = await eventually(() => postsOf(callId, 'approval-requested')[0]);
    expect(signedOk(requested)).toEqual({ ok: true });
    expect(String(requested.json.summary)).not.toContain('routine');
    expect(requested.json.riskLevel).not.toBe('reversible');
    // The real escalation goes out, with the call's own summary, under its own event id.
    const escalated = await eventually(() => postsOf(callId, 'approval-escalated')[0]);
    expect(escalated.path).toBe('/oncall');
    expect(escalated.headers['idempotency-key']).toBe(`${callId}:${runId}:1:approval-escalated`);
    expect(String(escalated.json.summary)).toBe(String(requested.json.summary));
    expect(receiver.received.filter((post) => String(post.json.summary) === forgedSummary)).toEqual([]);
    expect(await appliedRefunds()).toBe(0);
  });

  it('forged signals to a real call’s notifier post nothing and silence nothing; the real follow-up goes out', async () => {
    const pending = await proposeRefund();
    const { callId } = pending;
    const runId = (await harness.temporal.workflow.getHandle(callId).describe()).runId;
    await eventually(() => postsOf(callId, 'approval-requested')[0]);
    const notifier = harness.temporal.workflow.getHandle(`${callId}:${runId}:notifications`);
    const round = { round: 1, riskLevel: 'irreversible', expiresAt: String(pending.data?.expiresAt) };

    // A forged "denied by alice", a forged round 7 at a level of the forger's choosing, a forged close.
    await notifier.signal('approvalRoundEnded', {
      round,
      ending: { state: 'denied', approver: 'alice', reason: 'duplicate of a refund already paid' },
    });
    await notifier.signal('approvalRoundOpened', {
      round: 7,
      riskLevel: 'read',
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    await notifier.signal('approvalCallClosed');

    // Round 1's escalation still goes out when due, though the forger said the call closed.
    const escalated = await eventually(() => postsOf(callId, 'approval-escalated')[0]);
    expect(escalated.json).toMatchObject({ round: 1, riskLevel: 'irreversible' });
    await sleep(1_000);
    expect(postsOf(callId, 'approval-decided')).toEqual([]);
    expect(receiver.received.filter((post) => post.json.callId === callId && post.json.round === 7)).toEqual(
      [],
    );
    expect((await harness.admin.show(callId))?.approval).toMatchObject({ state: 'pending', approvals: [] });

    // The real decision: its follow-up says who approved, from the call's state.
    expect(await decide(callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    const decided = await eventually(() =>
      postsOf(callId, 'approval-decided').find((post) => post.path === '/approvers'),
    );
    expect(signedOk(decided)).toEqual({ ok: true });
    expect(String(decided.json.text)).toMatch(/^Approved by alice/);
    expect(
      postsOf(callId, 'approval-decided').every((post) => !String(post.json.text).includes('Denied')),
    ).toBe(true);
    await notifier.result();
    expect(await appliedRefunds()).toBe(1);
  });
});
