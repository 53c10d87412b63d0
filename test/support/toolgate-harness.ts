import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { Worker } from '@temporalio/worker';
import { createOrdersTools } from '../../examples/orders/orders-implementations';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import type { AuditStore, CallInput, PolicyFile } from '../../src/index';
import {
  checkPolicy,
  createToolGateWorker,
  createToolRegistry,
  openSqliteAuditStore,
  ToolGateClient,
} from '../../src/index';
import type { OrdersProcess } from '../../examples/orders/service/orders-process';
import { startOrdersProcess } from '../../examples/orders/service/orders-process';
import { createTestTools } from './test-tool-implementations';
import { testPolicy } from './test-policy';
import { testContracts } from './test-tools';

/** Everything a test file needs: a real orders process, a worker on its own task queue, a client. */
export interface ToolGateHarness {
  orders: OrdersProcess;
  client: ToolGateClient;
  temporal: Client;
  audit: AuditStore;
  taskQueue: string;
  /** A fresh session id, so loop and idempotency keys never collide across tests. */
  newSession(): string;
  /** Refund arguments for ORD-1001 with overrides, as raw JSON text. */
  refundArguments(overrides?: Record<string, unknown>): string;
  call(input: Omit<CallInput, 'session'> & { session?: string }): ReturnType<ToolGateClient['call']>;
  stop(): Promise<void>;
}

let runtimeInstalled = false;

/** Starts the harness; `stop()` ends the worker, the orders process and the temp files. */
export async function startHarness(input: {
  address: string;
  policy?: PolicyFile;
}): Promise<ToolGateHarness> {
  if (!runtimeInstalled && !process.env.TOOLGATE_TEST_LOGS) {
    // Rejections close runs as failed, which the SDK logs at WARN for every one: keep test output readable.
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    runtimeInstalled = true;
  }
  const directory = mkdtempSync(join(tmpdir(), 'toolgate-test-'));
  // What started so far, stopped in reverse if a later step fails: a failed start leaves nothing running.
  const cleanups: (() => unknown)[] = [() => rmSync(directory, { recursive: true, force: true })];
  const cleanUp = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
  try {
    return await startParts();
  } catch (error) {
    await cleanUp();
    throw error;
  }

  async function startParts(): Promise<ToolGateHarness> {
    const orders = await startOrdersProcess();
    cleanups.push(() => orders.stop());
    const contracts = [...ordersContracts, ...testContracts];
    const registry = createToolRegistry({ tools: contracts });
    const policy = checkPolicy({ source: 'test policy', value: input.policy ?? testPolicy, registry });
    const audit = openSqliteAuditStore({ path: join(directory, 'audit.sqlite') });
    cleanups.push(() => audit.close());
    const taskQueue = `test-${randomUUID()}`;
    const nativeConnection = await NativeConnection.connect({ address: input.address });
    cleanups.push(() => nativeConnection.close());
    const worker: Worker = await createToolGateWorker({
      connection: nativeConnection,
      taskQueue,
      workflowsPath: join(__dirname, 'test-workflows.ts'),
      tools: [...createOrdersTools({ ordersUrl: orders.url }), ...createTestTools()],
      policy,
      audit,
    });
    const running = worker.run();
    cleanups.push(async () => {
      worker.shutdown();
      await running;
    });
    const connection = await Connection.connect({ address: input.address });
    cleanups.push(() => connection.close());
    const temporal = new Client({ connection });
    const client = new ToolGateClient({ client: temporal, tools: contracts, taskQueue, policy });
    let defaultSession = `session-${randomUUID()}`;
    return {
      orders,
      client,
      temporal,
      audit,
      taskQueue,
      newSession: () => {
        defaultSession = `session-${randomUUID()}`;
        return defaultSession;
      },
      refundArguments: (overrides = {}) =>
        JSON.stringify({
          order_id: 'ORD-1001',
          amount_cents: 2590,
          currency: 'BRL',
          reason: 'damaged',
          ...overrides,
        }),
      call: (callInput) => client.call({ session: defaultSession, ...callInput }),
      stop: cleanUp,
    };
  }
}
