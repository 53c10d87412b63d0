import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import type { DevServer } from '../../src/dev/dev-server';
import { prepareNamespace, startDevServer } from '../../src/dev/dev-server';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import { testPolicy } from '../support/test-policy';

const projectRoot = resolve(__dirname, '..', '..');
const directory = mkdtempSync(join(tmpdir(), 'toolgate-restart-'));
const databaseFile = join(directory, 'temporal.sqlite');
// An approval window long enough to restart the server inside it, short enough to watch it fire.
const policy = {
  ...testPolicy,
  callers: {
    ...testPolicy.callers,
    'hasty-bot': {
      ...testPolicy.callers['hasty-bot']!,
      approval: { ceiling: 'critical' as const, windows: { irreversible: '12s' } },
    },
  },
};
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

describe('a call waiting for approval across a server restart (state on disk)', () => {
  it('is still pending after the restart, and its durable timer still fires', async () => {
    const port = await freePort();
    server = await startServer(port);
    harness = await startHarness({ address: server.address, policy });
    const taskQueue = harness.taskQueue;
    const pending = await harness.call({
      caller: 'hasty-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(pending.code).toBe('APPROVAL_PENDING');

    await harness.stop();
    harness = undefined;
    await server.stop();
    server = await startServer(port);
    harness = await startHarness({ address: server.address, policy, taskQueue });

    expect((await harness.admin.show(pending.callId))?.approval).toMatchObject({
      state: 'pending',
      round: 1,
    });
    const final = await harness.client.result(pending.callId, { wait: true });
    expect(final).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED', effect: 'none' });
  });
});
