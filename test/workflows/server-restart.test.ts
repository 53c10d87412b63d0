import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, describe, expect, it } from 'vitest';
import type { DevServer } from 'toolgate/testing';
import { prepareNamespace, startDevServer } from 'toolgate/testing';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import { testPolicy } from '../support/test-policy';

const projectRoot = resolve(__dirname, '..', '..');
const directory = mkdtempSync(join(tmpdir(), 'toolgate-restart-'));
const databaseFile = join(directory, 'temporal.sqlite');
// Two windows, so that no load can make the test race its own timers: a critical refund waits 4 h,
// far longer than any restart, to be seen still pending afterwards; an irreversible one waits 30 s,
// longer than it takes to stop the server after proposing it, to be seen expiring after the restart.
const policy = {
  ...testPolicy,
  callers: {
    ...testPolicy.callers,
    'hasty-bot': {
      ...testPolicy.callers['hasty-bot']!,
      approval: { ceiling: 'critical' as const, windows: { irreversible: '30s', critical: '4h' } },
    },
  },
};
const { EventType } = temporal.api.enums.v1;
let server: DevServer | undefined;
let harness: ToolGateHarness | undefined;

afterAll(async () => {
  await harness?.stop();
  await server?.stop();
  rmSync(directory, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function startServer(port: number): Promise<DevServer> {
  const started = await startDevServer({
    projectRoot,
    port,
    headless: true,
    databaseFile,
    log: () => undefined,
  });
  const connection = await Connection.connect({ address: started.address });
  await prepareNamespace({ connection, namespace: started.namespace });
  await connection.close();
  return started;
}

describe('calls waiting for approval across a server restart (state on disk)', () => {
  it('are still pending after the restart with the same window, and a durable timer set before it fires after it', async () => {
    const port = await freePort();
    server = await startServer(port);
    harness = await startHarness({ address: server.address, policy });
    const taskQueue = harness.taskQueue;
    const longWait = await harness.call({
      caller: 'hasty-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 12_000 }),
    });
    const shortWait = await harness.call({
      caller: 'hasty-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments({ order_id: 'ORD-1002', amount_cents: 2590, currency: 'USD' }),
    });
    expect([longWait.code, shortWait.code]).toEqual(['APPROVAL_PENDING', 'APPROVAL_PENDING']);
    const before = await harness.admin.show(longWait.callId);
    expect(before?.approval).toMatchObject({ state: 'pending', round: 1, riskLevel: 'critical' });
    // The short window's timer is in history and has not fired: what fires later was set before the restart.
    const timerEvents = async () =>
      ((await harness!.temporal.workflow.getHandle(shortWait.callId).fetchHistory()).events ?? [])
        .map((event) => event.eventType)
        .filter(
          (type) => type === EventType.EVENT_TYPE_TIMER_STARTED || type === EventType.EVENT_TYPE_TIMER_FIRED,
        );
    expect(await timerEvents()).toEqual([EventType.EVENT_TYPE_TIMER_STARTED]);

    await harness.stop();
    harness = undefined;
    await server.stop();
    server = await startServer(port);
    harness = await startHarness({ address: server.address, policy, taskQueue });

    // The window survived: same round, same expiry, still waiting.
    const after = await harness.admin.show(longWait.callId);
    expect(after?.approval).toMatchObject({ state: 'pending', round: 1 });
    expect(after?.approval?.expiresAt).toBe(before?.approval?.expiresAt);
    // The expiry fires durably: the timer set before the restart closes the call as expired.
    const final = await harness.client.result(shortWait.callId, { wait: true });
    expect(final).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED', effect: 'none' });
    expect(await timerEvents()).toEqual([
      EventType.EVENT_TYPE_TIMER_STARTED,
      EventType.EVENT_TYPE_TIMER_FIRED,
    ]);
    expect(await harness.orders.api.refundCount()).toBe(0);
  }, 240_000);
});
