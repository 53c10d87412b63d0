import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callStateQuery } from 'toolgate/protocol';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

/** A webhook receiver that is down: it answers every POST with 503, and records when. */
async function startDownReceiver() {
  const received: { event: string; callId: string; atMs: number }[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      received.push({ event: String(json.event), callId: String(json.callId), atMs: Date.now() });
      response.writeHead(503, { 'content-type': 'text/plain' }).end('down');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    /** The attempts that reached the receiver for one call's event. */
    attempts: (callId: string, event: string) =>
      received.filter((post) => post.callId === callId && post.event === event),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let receiver: Awaited<ReturnType<typeof startDownReceiver>>;
let harness: ToolGateHarness;

beforeAll(async () => {
  receiver = await startDownReceiver();
});
afterAll(async () => {
  await receiver?.stop();
});

useHarness((started) => (harness = started), {
  get notifications() {
    return { channels: { approvers: { url: receiver.url } }, waiting: ['approvers'] };
  },
});
const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

/** The workflow the call started to deliver its notifications, found in the call's history. */
async function notifierOf(callId: string) {
  const history = await harness.temporal.workflow.getHandle(callId).fetchHistory();
  const started = history.events
    ?.map((event) => event.startChildWorkflowExecutionInitiatedEventAttributes)
    .find((attributes) => attributes);
  return harness.temporal.workflow.getHandle(String(started?.workflowId));
}

describe('a webhook channel that is down', () => {
  it("never holds the agent's answer: the call closes while its follow-up is still retried", async () => {
    const { callId } = await proposeRefund();
    await expect.poll(() => receiver.attempts(callId, 'approval-requested').length).toBeGreaterThan(0);
    await decide(callId, 'alice');
    await expect
      .poll(
        async () => (await harness.temporal.workflow.getHandle(callId).query(callStateQuery)).result?.ok,
        {
          timeout: 20_000,
        },
      )
      .toBe(true);
    const appliedAtMs = Date.now();
    expect(await appliedRefunds()).toBe(1);

    expect(await harness.client.result(callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    const answeredAtMs = Date.now();
    expect(answeredAtMs - appliedAtMs).toBeLessThan(5_000);

    // The follow-up goes on being retried after the call closed, from the notifier, which still runs.
    const attemptsAtAnswer = receiver.attempts(callId, 'approval-decided').length;
    await expect
      .poll(() => receiver.attempts(callId, 'approval-decided').length, { timeout: 15_000 })
      .toBeGreaterThan(Math.max(attemptsAtAnswer, 1));
    expect(receiver.attempts(callId, 'approval-decided').some((post) => post.atMs > answeredAtMs)).toBe(true);
    const notifier = await notifierOf(callId);
    expect((await notifier.describe()).status.name).toBe('RUNNING');
    expect((await harness.temporal.workflow.getHandle(callId).describe()).status.name).toBe('COMPLETED');

    // The request the decision made moot is audited as never delivered.
    await expect
      .poll(async () =>
        (await harness.audit.notificationDeliveriesOf(callId)).find((d) => d.event === 'approval-requested'),
      )
      .toMatchObject({
        channel: 'approvers',
        outcome: 'failed',
        reason: 'its round was decided before the channel took it',
      });
    await notifier.terminate('test: clean up');
  });

  it('audits a request it could not deliver before its round expired as failed, not only in a log', async () => {
    // hasty-bot's approvals expire after 1 s; a request is retried until then, and for at least 10 s.
    const { callId } = await proposeRefund({}, 'hasty-bot');
    expect(await harness.client.result(callId, { wait: true })).toMatchObject({ code: 'APPROVAL_EXPIRED' });
    await expect
      .poll(
        async () =>
          (await harness.audit.notificationDeliveriesOf(callId)).find(
            (d) => d.event === 'approval-requested',
          ),
        {
          timeout: 30_000,
          interval: 500,
        },
      )
      .toMatchObject({
        channel: 'approvers',
        outcome: 'failed',
        reason: expect.stringMatching(/^not delivered before its round expired \(.*HTTP 503\)$/) as unknown,
        httpStatus: 503,
      });
    const failed = (await harness.audit.notificationDeliveriesOf(callId)).find(
      (d) => d.event === 'approval-requested',
    );
    expect(failed?.attempt).toBeGreaterThanOrEqual(3);
    expect(receiver.attempts(callId, 'approval-requested').length).toBe(failed?.attempt);
    // Nothing was run: the expiry is the call's answer, whatever the channel did.
    expect(await appliedRefunds()).toBe(0);
    await (await notifierOf(callId)).terminate('test: clean up');
  }, 60_000);
});
