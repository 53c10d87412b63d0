// Starts everything the bench measures, on loopback only: one Temporal dev server, the orders
// service, the toolgate worker and the bare worker (each in its own process), a client and the
// approvals admin. `stop()` ends all of it, in reverse order, whatever failed on the way.
import type { ChildProcess } from 'node:child_process';
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client, Connection } from '@temporalio/client';
import { ordersContracts } from '../examples/orders/orders-contracts';
import type { OrdersProcess } from '../examples/orders/service/orders-process';
import { startOrdersProcess } from '../examples/orders/service/orders-process';
import type { AuditStore, LoadedPolicy, ToolRegistry } from 'toolgate';
import {
  checkPolicy,
  createToolRegistry,
  generateKeyPairFiles,
  keyPaths,
  openSqliteAuditStore,
  readPrivateKey,
  ToolGateClient,
} from 'toolgate';
import { ApprovalAdmin } from 'toolgate/admin';
import { prepareNamespace, startDevServer } from 'toolgate/testing';
import type { CleanupStack } from './cleanup-stack';
import { startWithCleanup } from './cleanup-stack';
import { benchApprover, benchCallers, benchPolicy } from './bench-policy';
import type { BenchWorkerConfig, ChildMessage, ParentMessage, WorkerUsage } from './worker-protocol';
import { benchWorkerConfigVariable } from './worker-protocol';

/** The repository root: the bench runs the code that is checked out there, whatever its state. */
export const projectRoot = resolve(__dirname, '..');

const workerReadyTimeoutMs = 180_000;
const ansiEscapes = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
const workerStopTimeoutMs = 20_000;

/** A worker process of the bench (see bench-worker.ts). */
export interface WorkerChild {
  pid: number | undefined;
  /** Starts a new usage window; resolves with the usage of the window that ends. */
  mark(): Promise<WorkerUsage>;
  /** The usage since the last mark. */
  read(): Promise<WorkerUsage>;
  /** Warnings the worker logged, by kind (first line of each kind is logged, the rest counted). */
  warnings: Map<string, number>;
  /** Asks the worker to drain and exit; SIGKILL after a grace period. */
  stop(): Promise<void>;
  /** SIGKILL at once, with no drain (a crash, for the chaos suite); resolves once the process has exited. */
  kill(): Promise<void>;
  /** Resolves when the process has exited, for whatever reason. */
  exited: Promise<void>;
}

/** Everything a bench run talks to. */
export interface BenchHarness {
  temporal: Client;
  client: ToolGateClient;
  admin: ApprovalAdmin;
  orders: OrdersProcess;
  registry: ToolRegistry;
  policy: LoadedPolicy;
  approverKey: KeyObject;
  toolgateTaskQueue: string;
  bareTaskQueue: string;
  /** The bare baseline shaped like a governed read has a worker process of its own (same code as the bare one). */
  shapedTaskQueue: string;
  toolgateWorker: WorkerChild;
  bareWorker: WorkerChild;
  shapedWorker: WorkerChild;
  /** The Temporal server's process id, when this harness started it (its CPU is read from /proc). */
  serverPid?: number;
  /** Stops everything that was started; safe to call more than once and concurrently. */
  stop(): Promise<void>;
}

/**
 * Starts the bench's parts. A failed start stops what had started before it throws; so does
 * `stop()` of the returned harness.
 */
export async function startBenchHarness(input: {
  log: (line: string) => void;
  /** Receives `stop` at once, so that an interrupt during the start can stop what has started. */
  exposeStop?: (stop: () => Promise<void>) => void;
  /** Write a V8 CPU profile of each worker process (every thread) into this folder when it stops. */
  profileDirectory?: string;
  /** Called when a worker process ends without being asked to (its calls would otherwise wait forever). */
  onWorkerExit?: (message: string) => void;
}): Promise<BenchHarness> {
  const { log } = input;
  return startWithCleanup({ log, exposeStop: input.exposeStop, start: startParts });

  async function startParts({ track, stop }: CleanupStack): Promise<BenchHarness> {
    const directory = mkdtempSync(join(tmpdir(), 'toolgate-bench-'));
    track(() => rmSync(directory, { recursive: true, force: true }));
    const keysDirectory = join(directory, 'keys');
    for (const name of Object.values(benchCallers))
      generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'caller', name } });
    generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'approver', name: benchApprover } });
    const minterKeys = generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'minter' } });
    const registry = createToolRegistry({ tools: ordersContracts });
    const policy = checkPolicy({ source: 'bench policy', value: benchPolicy, registry, keysDirectory });

    const server = await startDevServer({
      projectRoot,
      headless: true,
      log: (line) => log(`temporal: ${line}`),
    });
    track(() => server.stop());
    const connection = await Connection.connect({ address: server.address });
    track(() => connection.close());
    await prepareNamespace({ connection, namespace: server.namespace });

    log('starting the orders service');
    const orders = await startOrdersProcess({ testMode: true, minterPublicKeyPath: minterKeys.publicKey });
    track(() => orders.stop());

    const auditPath = join(directory, 'audit.sqlite');
    const toolgateTaskQueue = `bench-toolgate-${randomUUID()}`;
    const bareTaskQueue = `bench-bare-${randomUUID()}`;
    const shapedTaskQueue = `bench-shaped-${randomUUID()}`;
    log('starting the toolgate worker and two bare workers (each bundles its workflows)');
    const bareWorkerOn = (taskQueue: string) =>
      startWorkerChild({
        config: {
          kind: 'bare',
          address: server.address,
          taskQueue,
          ordersUrl: orders.url,
          minterPrivateKeyPath: minterKeys.privateKey,
        },
        log,
        profileDirectory: input.profileDirectory,
        onUnexpectedExit: input.onWorkerExit,
      });
    const workers = await Promise.allSettled([
      startWorkerChild({
        config: {
          kind: 'toolgate',
          address: server.address,
          taskQueue: toolgateTaskQueue,
          ordersUrl: orders.url,
          keysDirectory,
          policy: benchPolicy,
          minterPrivateKeyPath: minterKeys.privateKey,
          auditPath,
        },
        log,
        profileDirectory: input.profileDirectory,
        onUnexpectedExit: input.onWorkerExit,
      }),
      bareWorkerOn(bareTaskQueue),
      bareWorkerOn(shapedTaskQueue),
    ]);
    for (const started of workers) {
      if (started.status === 'fulfilled') track(() => started.value.stop());
    }
    const [toolgateWorker, bareWorker, shapedWorker] = workers.map((started) => {
      if (started.status === 'rejected') throw started.reason;
      return started.value;
    }) as [WorkerChild, WorkerChild, WorkerChild];

    const audit: AuditStore = openSqliteAuditStore({ path: auditPath });
    track(() => audit.close());
    const temporal = new Client({ connection, namespace: server.namespace });
    const privateKeys = new Map<string, KeyObject>();
    const callerKey = (caller: string): KeyObject | undefined => {
      if (!Object.values<string>(benchCallers).includes(caller)) return undefined;
      let key = privateKeys.get(caller);
      if (!key) {
        key = readPrivateKey(
          keyPaths({ directory: keysDirectory, owner: { kind: 'caller', name: caller } }).privateKey,
        );
        privateKeys.set(caller, key);
      }
      return key;
    };
    const client = new ToolGateClient({
      client: temporal,
      tools: ordersContracts,
      taskQueue: toolgateTaskQueue,
      policy,
      callerKey,
    });
    const admin = new ApprovalAdmin({ client: temporal, audit, taskQueue: toolgateTaskQueue });
    const approverKey = readPrivateKey(
      keyPaths({ directory: keysDirectory, owner: { kind: 'approver', name: benchApprover } }).privateKey,
    );
    return {
      temporal,
      client,
      admin,
      orders,
      registry,
      policy,
      approverKey,
      toolgateTaskQueue,
      bareTaskQueue,
      shapedTaskQueue,
      toolgateWorker,
      bareWorker,
      shapedWorker,
      ...(server.pid !== undefined ? { serverPid: server.pid } : {}),
      stop,
    };
  }
}

/** Forks bench-worker.ts and resolves once its worker polls; a failed start leaves no process. */
export async function startWorkerChild(input: {
  config: BenchWorkerConfig;
  log: (line: string) => void;
  profileDirectory?: string | undefined;
  onUnexpectedExit?: ((message: string) => void) | undefined;
}): Promise<WorkerChild> {
  const { config, log } = input;
  const name = `${config.kind} worker${config.taskQueue.startsWith('bench-shaped-') ? ' (shaped)' : ''}`;
  const child: ChildProcess = fork(join(__dirname, 'bench-worker.ts'), [], {
    cwd: projectRoot,
    // `node --require tsx/cjs`, as the `toolgate worker` command loads TypeScript, so that the pid is the
    // worker itself (no wrapper between us) and no ESM loader thread (about 24 MB) is counted.
    execArgv: [
      // `toolgate` and its entries resolve to src/, as in every process this repository runs.
      '--conditions=toolgate-source',
      '--require',
      'tsx/cjs',
      ...(input.profileDirectory === undefined
        ? []
        : ['--cpu-prof', `--cpu-prof-dir=${join(input.profileDirectory, `${config.kind}-worker`)}`]),
    ],
    env: { ...process.env, [benchWorkerConfigVariable]: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolveExit) => {
    if (child.exitCode !== null || child.signalCode !== null) resolveExit();
    child.once('exit', () => resolveExit());
    child.once('error', () => {
      if (child.pid === undefined) resolveExit();
    });
  });
  // The SDK core warns once per slow workflow task: log the first of each kind, count the rest.
  const warnings = new Map<string, number>();
  const forward = (line: string): void => {
    const plain = line.replace(ansiEscapes, '');
    const code = /\[(TMPRL\d+)\]/.exec(plain)?.[1];
    // A warning without a code is known by where it comes from (`WARN temporalio_client::retry: ...`).
    const kind = code ?? /\bWARN\s+([\w:]+)/.exec(plain)?.[1];
    if (kind === undefined) return log(`${name}: ${plain}`);
    const seen = warnings.get(kind) ?? 0;
    warnings.set(kind, seen + 1);
    if (seen === 0) log(`${name}: ${plain.slice(0, 300)} (further ones are counted)`);
  };
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) createInterface({ input: stream }).on('line', forward);
  }

  let nextId = 1;
  const waiting = new Map<number, (usage: WorkerUsage) => void>();
  child.on('message', (message: ChildMessage) => {
    if (message.type !== 'usage') return;
    waiting.get(message.id)?.(message.usage);
    waiting.delete(message.id);
  });
  const ask = (type: 'mark' | 'read') =>
    new Promise<WorkerUsage>((resolveAnswer, reject) => {
      if (!child.connected) return reject(new Error(`the ${name} is not running`));
      const id = nextId++;
      waiting.set(id, resolveAnswer);
      child.send({ type, id } satisfies ParentMessage);
    });

  let stopping: Promise<void> | undefined;
  let ready = false;
  void exited.then(() => {
    if (ready && stopping === undefined) {
      input.onUnexpectedExit?.(
        `the ${name} exited unexpectedly (code ${String(child.exitCode)}, signal ${String(child.signalCode)})`,
      );
    }
  });
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (child.connected) child.send({ type: 'stop' } satisfies ParentMessage);
      else child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), workerStopTimeoutMs);
      await exited;
      clearTimeout(timer);
      process.removeListener('exit', killOnExit);
    })());
  const kill = (): Promise<void> =>
    (stopping ??= (async () => {
      child.kill('SIGKILL');
      await exited;
      process.removeListener('exit', killOnExit);
    })());

  try {
    await new Promise<void>((resolveReady, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the ${name} was not ready within ${workerReadyTimeoutMs / 1000} s`)),
        workerReadyTimeoutMs,
      );
      child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          resolveReady();
        } else if (message.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(`the ${name} failed to start: ${message.message}`));
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`the ${name} exited before it was ready (code ${String(child.exitCode)})`));
      });
    });
  } catch (error) {
    await stop();
    throw error;
  }
  ready = true;
  log(`${name} ready (pid ${String(child.pid)})`);
  return {
    pid: child.pid,
    mark: () => ask('mark'),
    read: () => ask('read'),
    warnings,
    stop,
    kill,
    exited,
  };
}
