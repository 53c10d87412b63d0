// Everything a chaos run talks to, on loopback only: a Temporal dev server whose state lives in a
// database file on a fixed port (so that it can be killed and started again with its state), the
// orders service, keys and a policy file in a temp folder, and one toolgate worker in a child
// process (bench/bench-worker.ts) for the worker chaos to SIGKILL. `stop()` ends all of it.
import type { KeyObject } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type { BenchWorkerConfig } from '../../bench/worker-protocol';
import { projectRoot } from '../../bench/bench-harness';
import type { CleanupStack } from '../../bench/cleanup-stack';
import { startWithCleanup } from '../../bench/cleanup-stack';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import type { OrdersProcess } from '../../examples/orders/service/orders-process';
import { startOrdersProcess } from '../../examples/orders/service/orders-process';
import {
  checkPolicy,
  createToolRegistry,
  generateKeyPairFiles,
  keyPaths,
  openSqliteAuditStore,
  readPrivateKey,
  ToolGateClient,
  toolGateWorkflowBundle,
} from 'toolgate';
import { ApprovalAdmin } from 'toolgate/admin';
import type { AuditStore } from 'toolgate';
import type { DevServer } from 'toolgate/testing';
import { prepareNamespace, startDevServer } from 'toolgate/testing';
import { chaosApprover, chaosCallers, chaosPolicy } from './chaos-policy';

const loopback = '127.0.0.1';
const portRetryAttempts = 20;

/** What a chaos run uses; `restartServer` and `stop` are the only ways it changes. */
export interface ChaosEnvironment {
  client: ToolGateClient;
  /** The audit store the worker processes share: sessions' state is in it. */
  audit: AuditStore;
  admin: ApprovalAdmin;
  orders: OrdersProcess;
  approverKey: KeyObject;
  /** How the worker process is started (the worker chaos restarts it with this, again and again). */
  workerConfig: BenchWorkerConfig;
  /** The errors the Temporal server logged, by message, with how often. */
  serverErrors: ReadonlyMap<string, number>;
  /** SIGKILLs the Temporal server and starts it again on the same port with the same database file. */
  restartServer(): Promise<{ downMs: number }>;
  /** Stops everything that was started; safe to call more than once and concurrently. */
  stop(): Promise<void>;
}

/**
 * Starts a chaos run's parts (the worker excepted: the worker chaos owns it). A failed start stops
 * what had started before it throws; so does `stop()` of the returned environment.
 */
export async function startChaosEnvironment(input: {
  log: (line: string) => void;
  /** Receives `stop` at once, so that an interrupt during the start can stop what has started. */
  exposeStop?: (stop: () => Promise<void>) => void;
}): Promise<ChaosEnvironment> {
  const { log } = input;
  return startWithCleanup({ log, exposeStop: input.exposeStop, start: startParts });

  async function startParts({ track, stop, stopRequested }: CleanupStack): Promise<ChaosEnvironment> {
    const directory = mkdtempSync(join(tmpdir(), 'toolgate-chaos-'));
    track(() => rmSync(directory, { recursive: true, force: true }));
    const keysDirectory = join(directory, 'keys');
    for (const name of Object.values(chaosCallers))
      generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'caller', name } });
    generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'approver', name: chaosApprover } });
    const minterKeys = generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'minter' } });
    const registry = createToolRegistry({ tools: ordersContracts });
    const policy = checkPolicy({ source: 'chaos policy', value: chaosPolicy, registry, keysDirectory });
    // The policy as a file too, next to the keys it names, for whoever inspects a run.
    writeFileSync(join(directory, 'policy.json'), `${JSON.stringify(chaosPolicy, null, 2)}\n`);

    // Bundled once, before the servers start: a worker restarted every few seconds must not spend them
    // bundling. toolgate's own bundle, cached until the sources change, so only a first run waits here.
    log('bundling the workflows once for every worker start');
    const workflowBundlePath = toolGateWorkflowBundle().codePath;

    // A fixed port and a database file: the restarted server is the same server, with its state.
    const port = await freePort();
    const databaseFile = join(directory, 'temporal.sqlite');
    const serverErrors = new Map<string, number>();
    // The server logs an error for every update a killed worker leaves unfinished: the first of each kind is shown.
    const serverLog = (line: string): void => {
      const kind = /level=ERROR msg="([^"]*)"/.exec(line)?.[1];
      if (kind === undefined) return log(`temporal: ${line}`);
      const seen = serverErrors.get(kind) ?? 0;
      serverErrors.set(kind, seen + 1);
      if (seen === 0) log(`temporal: ${line.slice(0, 400)} (further ones are counted)`);
    };
    const startServer = async (): Promise<DevServer> => {
      const server = await startDevServerOnPort({ port, databaseFile, log: serverLog });
      const connection = await Connection.connect({ address: server.address });
      try {
        await prepareNamespace({ connection, namespace: server.namespace });
      } finally {
        await connection.close();
      }
      return server;
    };
    let server = await startServer();
    // Whichever server runs when the run stops is the one stopped.
    track(() => server.stop());
    const connection = await Connection.connect({ address: server.address });
    track(() => connection.close());

    log('starting the orders service');
    const orders = await startOrdersProcess({ testMode: true, minterPublicKeyPath: minterKeys.publicKey });
    track(() => orders.stop());

    const taskQueue = `chaos-${randomUUID()}`;
    const auditPath = join(directory, 'audit.sqlite');
    const workerConfig: BenchWorkerConfig = {
      kind: 'toolgate',
      address: server.address,
      taskQueue,
      ordersUrl: orders.url,
      keysDirectory,
      policy: chaosPolicy,
      minterPrivateKeyPath: minterKeys.privateKey,
      auditPath,
      workflowBundlePath,
    };
    const audit = openSqliteAuditStore({ path: auditPath });
    track(() => audit.close());
    const temporal = new Client({ connection, namespace: server.namespace });
    const callerKeys = new Map<string, KeyObject>(
      Object.values(chaosCallers).map((name) => [
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
      keyPaths({ directory: keysDirectory, owner: { kind: 'approver', name: chaosApprover } }).privateKey,
    );

    const restartServer = async (): Promise<{ downMs: number }> => {
      const pid = server.pid;
      if (pid === undefined) {
        throw new Error(
          'the Temporal server was started by the SDK, whose process the chaos suite cannot kill; ' +
            'build the Temporal CLI (npm run temporal:cli) or set TEMPORAL_CLI',
        );
      }
      const downAt = performance.now();
      // No shutdown of any kind: the process dies as in a crash, and its state is what reached the
      // database file. The CLI's dev server is one process without children, in this process's group,
      // so SIGKILL to its pid is what SIGKILL to a group of its own would be.
      process.kill(pid, 'SIGKILL');
      await server.stop();
      log(`Temporal server (pid ${pid}) killed with SIGKILL; starting it again on port ${port}`);
      server = await startServer();
      // Stopped meanwhile (an interrupt): the cleanup stopped the old server, so stop this one here.
      if (stopRequested()) await server.stop();
      return { downMs: performance.now() - downAt };
    };

    return {
      client,
      admin,
      audit,
      orders,
      approverKey,
      workerConfig,
      serverErrors,
      restartServer,
      stop,
    };
  }
}

/** A port nobody listens on now, for a server that must come back on the same one. */
async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, loopback, () => {
      const address = probe.address();
      probe.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Starts the dev server on `port`, waiting a little while the port is still held by a killed predecessor. */
async function startDevServerOnPort(input: {
  port: number;
  databaseFile: string;
  log: (line: string) => void;
}): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServer({
        projectRoot,
        port: input.port,
        headless: true,
        databaseFile: input.databaseFile,
        log: input.log,
      });
    } catch (error) {
      const busy = error instanceof Error && error.message.startsWith('Cannot use port');
      if (!busy || attempt >= portRetryAttempts) throw error;
      await delay(500);
    }
  }
}
