import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { ClientOptions } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { Logger } from '@temporalio/worker';
import { createOrdersTools } from '../../examples/orders/orders-implementations';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import type { KeyObject } from 'node:crypto';
import type { OrdersApiClient } from '../../examples/orders/orders-api-client';
import type {
  AuditStore,
  CallInput,
  CodecConfig,
  MetricsEndpointOptions,
  ToolGateTracing,
  CredentialMinter,
  ImplementedTool,
  NotificationsConfig,
  PolicyFileInput,
} from 'toolgate';
import {
  checkPolicy,
  createCredentialMinter,
  createToolRegistry,
  generateKeyPairFiles,
  keyPaths,
  openSqliteAuditStore,
  readPrivateKey,
  resolveConfig,
  resolveTemporalConnection,
  startToolGateWorker,
  ToolGateClient,
} from 'toolgate';
import { ApprovalAdmin, readApproverKeyStatus, readGrantUse } from 'toolgate/admin';
import type { OrdersProcess } from '../../examples/orders/service/orders-process';
import { startOrdersProcess } from '../../examples/orders/service/orders-process';
import { createTestTools } from './test-tool-implementations';
import { testApprovers, testCallers, testOperators, testPolicy } from './test-policy';
import { testContracts } from './test-tools';

/** Everything a test file needs: a real orders process, a worker on its own task queue, a client. */
export interface ToolGateHarness {
  orders: OrdersProcess;
  client: ToolGateClient;
  temporal: Client;
  audit: AuditStore;
  /** The audit store's SQLite file (sessions are state in it): pass it to a second harness to share it. */
  auditPath: string;
  admin: ApprovalAdmin;
  /** The worker's credential minter, so a test can send a refund of its own that the orders service accepts. */
  minter: CredentialMinter;
  taskQueue: string;
  /** The folder with every test key pair (callers/, approvers/, minter). */
  keysDirectory: string;
  /** The payload encryption keys the harness's worker and clients use, when it was started with `codec`. */
  codec?: CodecConfig;
  /** The harness's policy, written as a file (for the CLI's config). */
  policyPath: string;
  /** A test approver's private key. */
  approverKey(name: string): KeyObject;
  /** The worker's metrics endpoint (GET /metrics), when the harness was started with `metrics`. */
  metricsUrl(): string | undefined;
  /** A test operator's private key (`olivia` is in the policy, `mallory` is not). */
  operatorKey(name: string): KeyObject;
  /** A fresh session id, so loop and idempotency keys never collide across tests (`call` adds `:caller`). */
  newSession(): string;
  /** Refund arguments for ORD-1001 with overrides, as raw JSON text. */
  refundArguments(overrides?: Record<string, unknown>): string;
  call(input: Omit<CallInput, 'session'> & { session?: string }): ReturnType<ToolGateClient['call']>;
  /**
   * Stops the worker and starts a new one on the same task queue (calls in flight continue on it);
   * `whileStopped` runs in between, so what it sends waits for the new worker.
   */
  restartWorker(
    whileStopped?: () => Promise<void>,
    options?: {
      /** The new worker's tools instead of the current ones (a deploy that changes contracts). */
      tools?: (current: readonly ImplementedTool[]) => ImplementedTool[];
    },
  ): Promise<void>;
  stop(): Promise<void>;
}

let runtimeInstalled = false;

/** Starts the harness; `stop()` ends the worker, the orders process and the temp files. */
export async function startHarness(input: {
  address: string;
  policy?: PolicyFileInput;
  /** Reuse this task queue (e.g. to restart a worker for the same calls). */
  taskQueue?: string;
  /** Reuse these keys (another harness's), so two harnesses serve the same callers. */
  keysDirectory?: string;
  /**
   * Share this audit store (another harness's `auditPath`): two workers of one deployment share one
   * store, and sessions are state in it.
   */
  auditPath?: string;
  /** The minter's own copy of the policy, when it must differ from the workers' (default: the same). */
  minterPolicy?: PolicyFileInput;
  /** The worker runtime's logger, when this process's first harness installs it (default: errors only). */
  logger?: Logger;
  /** Wraps the orders client the worker's tools talk through (e.g. so another refund lands between a check and its execution). */
  ordersApi?: (api: OrdersApiClient) => OrdersApiClient;
  /** The deployment's approval notifications (config `notifications`); none by default. */
  notifications?: NotificationsConfig;
  /** Payload encryption keys (config `codec`): the worker and the harness's clients encrypt with them. */
  codec?: CodecConfig;
  /** The worker's metrics endpoint (`startToolGateWorker`'s `metrics`); off by default. */
  metrics?: MetricsEndpointOptions;
  /** Traces the worker (`startToolGateWorker`'s `tracing`); off by default. */
  tracing?: Pick<ToolGateTracing, 'spanProcessor' | 'resource'>;
  /** Extra options of the harness's Temporal client (e.g. OpenTelemetry interceptors). */
  clientInterceptors?: ClientOptions['interceptors'];
}): Promise<ToolGateHarness> {
  if (!runtimeInstalled && !process.env.TOOLGATE_TEST_LOGS) {
    // Rejections close runs as failed, which the SDK logs at WARN for every one: keep test output readable.
    Runtime.install({ logger: input.logger ?? new DefaultLogger('ERROR') });
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
    const keysDirectory = input.keysDirectory ?? join(directory, 'keys');
    for (const name of testCallers)
      generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'caller', name } });
    for (const name of testApprovers)
      generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'approver', name } });
    for (const name of testOperators)
      generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'operator', name } });
    const minterKeys = generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'minter' } });
    const orders = await startOrdersProcess({ minterPublicKeyPath: minterKeys.publicKey });
    cleanups.push(() => orders.stop());
    const contracts = [...ordersContracts, ...testContracts];
    const registry = createToolRegistry({ tools: contracts });
    const policy = checkPolicy({
      source: 'test policy',
      value: input.policy ?? testPolicy,
      registry,
      keysDirectory,
    });
    const policyPath = join(directory, 'policy.json');
    writeFileSync(policyPath, JSON.stringify(input.policy ?? testPolicy, null, 2));
    const privateKeys = new Map<string, KeyObject>();
    const keyOf = (owner: {
      kind: 'caller' | 'approver' | 'operator';
      name: string;
    }): KeyObject | undefined => {
      const path = keyPaths({ directory: keysDirectory, owner }).privateKey;
      const cacheKey = `${owner.kind}/${owner.name}`;
      if (!privateKeys.has(cacheKey)) {
        try {
          privateKeys.set(cacheKey, readPrivateKey(path));
        } catch {
          return undefined;
        }
      }
      return privateKeys.get(cacheKey);
    };
    const auditPath = input.auditPath ?? join(directory, 'audit.sqlite');
    const audit = openSqliteAuditStore({ path: auditPath });
    cleanups.push(() => audit.close());
    const taskQueue = input.taskQueue ?? `test-${randomUUID()}`;
    // What toolgate's clients take (its failure converter, and the codec the config's `codec` makes),
    // for the harness's own clients (the worker makes its own).
    const codecOption = {
      dataConverter: resolveTemporalConnection({ config: input.codec ? { codec: input.codec } : {}, env: {} })
        .dataConverter,
    };
    const nativeConnection = await NativeConnection.connect({ address: input.address });
    cleanups.push(() => nativeConnection.close());
    const minterPolicy = input.minterPolicy
      ? checkPolicy({ source: 'test minter policy', value: input.minterPolicy, registry, keysDirectory })
      : policy;
    // The minter asks the approver-key registry through a client on the worker's connection, as a worker's does.
    const registryClient = new Client({ connection: nativeConnection, ...codecOption });
    const minter = createCredentialMinter({
      privateKey: readPrivateKey(minterKeys.privateKey),
      policy: () => minterPolicy,
      approverKeyStatus: (keyId) =>
        readApproverKeyStatus({ client: registryClient, taskQueue, keyId, audit }),
      grantUse: (use) => readGrantUse({ client: registryClient, taskQueue, ...use }),
    });
    let tools: readonly ImplementedTool[] = [
      ...createOrdersTools({
        ordersUrl: orders.url,
        ...(input.ordersApi ? { api: input.ordersApi(orders.api) } : {}),
      }),
      ...createTestTools(),
    ];
    // The harness's deployment, as a user's config would name it: fast retries so retry exhaustion
    // takes milliseconds.
    const config = resolveConfig({
      source: join(directory, 'toolgate.config.ts'),
      config: {
        tools: contracts,
        policyPath,
        keysDirectory,
        auditPath,
        implementations: () => tools,
        retry: { maximumAttempts: 3, initialIntervalMs: 20, maximumIntervalMs: 100, attemptTimeoutMs: 3_000 },
        ...(input.notifications ? { notifications: input.notifications } : {}),
        ...(input.codec ? { codec: input.codec } : {}),
      },
    });
    const startWorker = async (): Promise<() => Promise<void>> => {
      const started = await startToolGateWorker({
        config,
        target: { address: input.address, taskQueue },
        connection: nativeConnection,
        audit,
        minter,
        ...(input.metrics ? { metrics: input.metrics } : {}),
        ...(input.tracing ? { tracing: input.tracing } : {}),
      });
      metricsUrl = started.metrics?.url;
      const running = started.run();
      return async () => {
        await started.stop();
        await running;
      };
    };
    let metricsUrl: string | undefined;
    let stopWorker = await startWorker();
    cleanups.push(() => stopWorker());
    const restartWorker: ToolGateHarness['restartWorker'] = async (whileStopped, options) => {
      await stopWorker();
      try {
        await whileStopped?.();
      } finally {
        if (options?.tools) tools = options.tools(tools);
        stopWorker = await startWorker();
      }
    };
    const connection = await Connection.connect({ address: input.address });
    cleanups.push(() => connection.close());
    const temporal = new Client({
      connection,
      ...codecOption,
      ...(input.clientInterceptors ? { interceptors: input.clientInterceptors } : {}),
    });
    const client = new ToolGateClient({
      client: temporal,
      tools: contracts,
      taskQueue,
      policy,
      callerKey: (caller) => keyOf({ kind: 'caller', name: caller }),
      audit,
    });
    const admin = new ApprovalAdmin({ client: temporal, audit, taskQueue });
    let defaultSession = `session-${randomUUID()}`;
    return {
      orders,
      client,
      temporal,
      audit,
      auditPath,
      admin,
      minter,
      taskQueue,
      keysDirectory,
      ...(input.codec ? { codec: input.codec } : {}),
      policyPath,
      approverKey: (name) => {
        const key = keyOf({ kind: 'approver', name });
        if (!key) throw new Error(`no test key for approver ${name}`);
        return key;
      },
      operatorKey: (name) => {
        const key = keyOf({ kind: 'operator', name });
        if (!key) throw new Error(`no test key for operator ${name}`);
        return key;
      },
      metricsUrl: () => metricsUrl,
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
      // A session belongs to one caller: each caller of a test gets its own conversation.
      call: (callInput) => client.call({ session: `${defaultSession}:${callInput.caller}`, ...callInput }),
      restartWorker,
      stop: cleanUp,
    };
  }
}
