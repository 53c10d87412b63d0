import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';

import { Connection, isGrpcServiceError } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs, optionalTsToMs } from '@temporalio/common/lib/time';

import { searchAttributes } from '../calls/protocol';
import { resolveTemporalCli } from './temporal-cli';

const loopback = '127.0.0.1';
const startTimeoutMilliseconds = 60_000;
const stopGraceMilliseconds = 5_000;
const stderrTailLines = 40;
const millisecondsPerDay = 86_400_000;
const grpcStatusAlreadyExists = 6;

/** The search attributes every toolgate call sets, by name and Temporal type (derived from the shared keys). */
export const toolgateSearchAttributes = Object.fromEntries(
  Object.values(searchAttributes).map((key) => [key.name, key.type]),
) as Record<string, SearchAttributeType>;

/** A running local Temporal server. */
export interface DevServer {
  /** gRPC address, `127.0.0.1:<port>`. */
  address: string;
  /** Web UI address, absent when headless. */
  uiUrl?: string;
  namespace: string;
  /** The server's process id, when toolgate started the process itself (for measurements). */
  pid?: number;
  /** Stops the server and resolves once its process has exited; calling it again is harmless. */
  stop(): Promise<void>;
}

/** Options of {@link startDevServer}. */
export interface StartDevServerOptions {
  /** The repository root (where `.toolgate/` lives). */
  projectRoot: string;
  /** gRPC port; a free one when absent. */
  port?: number;
  /** Web UI port; a free one when absent. Ignored when headless. */
  uiPort?: number;
  /** No Web UI (default false). */
  headless?: boolean;
  /** SQLite file that keeps the server's state across restarts, relative to projectRoot; in memory when absent. */
  databaseFile?: string;
  /** Namespace created at start (default `default`). */
  namespace?: string;
  /** Receives one progress line at a time. */
  log: (line: string) => void;
}

/** Options of {@link prepareNamespace}. */
export interface PrepareNamespaceOptions {
  connection: Connection;
  namespace: string;
  /** How long closed calls stay visible (default 30 days). */
  retentionDays?: number;
}

/**
 * Starts a local Temporal server bound to 127.0.0.1 and resolves only once the namespace answers;
 * the server is killed when this process exits, and a failed start leaves no process behind.
 */
export async function startDevServer({
  projectRoot,
  port,
  uiPort,
  headless = false,
  databaseFile,
  namespace = 'default',
  log,
}: StartDevServerOptions): Promise<DevServer> {
  const cli = await resolveTemporalCli({ projectRoot, log });
  // A port given explicitly must be free now: otherwise another server there (an earlier run's, say)
  // could answer the readiness check while ours fails to bind.
  const grpcPort = await reservePort({ port, purpose: 'the Temporal gRPC port' });
  const webPort = headless
    ? undefined
    : await reservePort({ port: uiPort, purpose: 'the Temporal Web UI port' });
  const databasePath = databaseFile === undefined ? undefined : path.resolve(projectRoot, databaseFile);
  if (databasePath !== undefined) await mkdir(path.dirname(databasePath), { recursive: true });

  switch (cli.kind) {
    case 'path':
      return startCliServer({ cliPath: cli.path, grpcPort, webPort, databasePath, namespace, log });
    case 'sdk-download':
      return startSdkServer({ projectRoot, grpcPort, webPort, databasePath, namespace, log });
  }
}

/**
 * Registers toolgate's search attributes and sets the namespace retention; idempotent, and safe to run
 * concurrently. Throws when an attribute already exists with another type, since only an operator can fix that.
 */
export async function prepareNamespace({
  connection,
  namespace,
  retentionDays = 30,
}: PrepareNamespaceOptions): Promise<void> {
  if (!Number.isInteger(retentionDays) || retentionDays < 1) {
    throw new RangeError(`retentionDays must be a whole number of days, at least 1; got ${retentionDays}.`);
  }
  await registerSearchAttributes({ connection, namespace });

  const retentionMilliseconds = retentionDays * millisecondsPerDay;
  const description = await connection.workflowService.describeNamespace({ namespace });
  if (optionalTsToMs(description.config?.workflowExecutionRetentionTtl) !== retentionMilliseconds) {
    await connection.workflowService.updateNamespace({
      namespace,
      config: { workflowExecutionRetentionTtl: msToTs(retentionMilliseconds) },
    });
  }
}

async function registerSearchAttributes({
  connection,
  namespace,
}: {
  connection: Connection;
  namespace: string;
}): Promise<void> {
  const missing = await missingSearchAttributes({ connection, namespace });
  if (missing.length === 0) return;
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        missing.map((name) => [name, indexedValueType({ type: toolgateSearchAttributes[name]! })]),
      ),
    });
  } catch (error) {
    // Another process registered them between our list and our add: fine if the result is what we need.
    if (!isGrpcServiceError(error) || (error.code as number) !== grpcStatusAlreadyExists) throw error;
    const stillMissing = await missingSearchAttributes({ connection, namespace });
    if (stillMissing.length > 0) throw error;
  }
}

type ToolgateSearchAttributeName = keyof typeof toolgateSearchAttributes;

/** The toolgate attributes the namespace lacks; throws if one exists with a different type. */
async function missingSearchAttributes({
  connection,
  namespace,
}: {
  connection: Connection;
  namespace: string;
}): Promise<ToolgateSearchAttributeName[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing: ToolgateSearchAttributeName[] = [];
  for (const [name, type] of Object.entries(toolgateSearchAttributes)) {
    const existing = customAttributes[name];
    if (existing === undefined) {
      missing.push(name);
    } else if (existing !== indexedValueType({ type })) {
      const existingType =
        Object.values(SearchAttributeType).find(
          (candidate) => indexedValueType({ type: candidate }) === existing,
        ) ?? `type ${existing}`;
      throw new Error(
        `Search attribute ${name} exists in namespace "${namespace}" as ${existingType}, but toolgate needs ${type}. ` +
          `Fix: remove it (temporal operator search-attribute remove --name ${name} --namespace ${namespace}) ` +
          'or run toolgate in another namespace.',
      );
    }
  }
  return missing;
}

type IndexedValueType = NonNullable<ReturnType<typeof encodeSearchAttributeIndexedValueType>>;

function indexedValueType({ type }: { type: SearchAttributeType }): IndexedValueType {
  const encoded = encodeSearchAttributeIndexedValueType(type);
  if (encoded === undefined) throw new Error(`Unknown search attribute type ${type}.`);
  return encoded;
}

interface ServerLaunch {
  grpcPort: number;
  webPort: number | undefined;
  databasePath: string | undefined;
  namespace: string;
  log: (line: string) => void;
}

async function startCliServer({
  cliPath,
  grpcPort,
  webPort,
  databasePath,
  namespace,
  log,
}: ServerLaunch & { cliPath: string }): Promise<DevServer> {
  const address = `${loopback}:${grpcPort}`;
  const args = ['server', 'start-dev', '--ip', loopback, '--port', String(grpcPort)];
  args.push(...(webPort === undefined ? ['--headless'] : ['--ui-port', String(webPort)]));
  if (databasePath !== undefined) args.push('--db-filename', databasePath);
  args.push('--namespace', namespace, '--log-level', 'warn');

  log(`Starting Temporal dev server on ${address}${databasePath === undefined ? ' (in memory)' : ''}`);
  const child = spawn(cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const outputTail: string[] = [];
  let stopping = false;
  const remember = (line: string): void => {
    outputTail.push(line);
    if (outputTail.length > stderrTailLines) outputTail.shift();
  };
  createInterface({ input: child.stdout }).on('line', remember);
  createInterface({ input: child.stderr }).on('line', (line) => {
    remember(line);
    // Warnings are routine (and noisy at shutdown); errors while running deserve a look.
    if (!stopping && line.includes('level=ERROR')) log(`temporal: ${line}`);
  });

  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (error) => {
      spawnError = error;
      // A process that never started emits no 'exit'.
      if (child.pid === undefined) resolve();
    });
  });
  killOnParentExit({ child });

  const stop = memoize(async () => {
    stopping = true;
    await terminate({ child, exited });
    forgetOnParentExit({ child });
  });

  try {
    await waitUntilServing({ address, namespace, child, getSpawnError: () => spawnError });
  } catch (error) {
    await stop();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `The Temporal dev server (${cliPath}) did not start on ${address}: ${reason}\n` +
        `Its last output:\n${outputTail.join('\n') || '(none)'}`,
    );
  }

  const uiUrl = webPort === undefined ? undefined : `http://${loopback}:${webPort}`;
  log(`Temporal dev server ready on ${address}${uiUrl === undefined ? '' : `, Web UI ${uiUrl}`}`);
  return { address, uiUrl, namespace, stop, ...(child.pid !== undefined ? { pid: child.pid } : {}) };
}

/** Fallback for machines without a CLI or Go: the SDK downloads the CLI and runs it. */
async function startSdkServer({
  projectRoot,
  grpcPort,
  webPort,
  databasePath,
  namespace,
  log,
}: ServerLaunch & { projectRoot: string }): Promise<DevServer> {
  log('Starting a Temporal dev server through the SDK (it downloads the CLI the first time)');
  // Loaded only here: the testing package pulls in the native worker runtime.
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  const environment = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'cached-download', downloadDir: path.join(projectRoot, '.toolgate', 'downloads') },
      ip: loopback,
      port: grpcPort,
      ui: webPort !== undefined,
      uiPort: webPort,
      dbFilename: databasePath,
      namespace,
      log: { format: 'pretty', level: 'warn' },
    },
  });
  const uiUrl = webPort === undefined ? undefined : `http://${loopback}:${webPort}`;
  log(`Temporal dev server ready on ${environment.address}${uiUrl === undefined ? '' : `, Web UI ${uiUrl}`}`);
  return { address: environment.address, uiUrl, namespace, stop: memoize(() => environment.teardown()) };
}

async function waitUntilServing({
  address,
  namespace,
  child,
  getSpawnError,
}: {
  address: string;
  namespace: string;
  child: ChildProcess;
  getSpawnError: () => Error | undefined;
}): Promise<void> {
  const deadline = Date.now() + startTimeoutMilliseconds;
  let lastError: unknown;
  for (;;) {
    const spawnError = getSpawnError();
    if (spawnError !== undefined) throw spawnError;
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `the process exited (${String(child.exitCode ?? child.signalCode)}) before it served requests.`,
      );
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? ` Last attempt: ${lastError.message}` : '';
      throw new Error(`it did not answer within ${startTimeoutMilliseconds / 1000} s.${detail}`);
    }
    const attemptDeadline = Math.min(deadline, Date.now() + 2_000);
    const connection = Connection.lazy({ address, connectTimeout: attemptDeadline - Date.now() });
    try {
      await connection.ensureConnected();
      await connection.withDeadline(attemptDeadline, () =>
        connection.workflowService.describeNamespace({ namespace }),
      );
      return;
    } catch (error) {
      lastError = error;
    } finally {
      await connection.close();
    }
    await delay(250);
  }
}

async function terminate({ child, exited }: { child: ChildProcess; exited: Promise<void> }): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const stoppedInTime = await Promise.race([
    exited.then(() => true),
    delay(stopGraceMilliseconds).then(() => false),
  ]);
  if (!stoppedInTime) {
    child.kill('SIGKILL');
    await exited;
  }
}

/** The given port if nothing listens on it (else a clear error), or a free one when none is given. */
async function reservePort({
  port,
  purpose,
}: {
  port: number | undefined;
  purpose: string;
}): Promise<number> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port ?? 0, loopback, () => resolve());
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `Cannot use port ${String(port)} on ${loopback} for ${purpose}: ${reason}. ` +
        'Fix: stop what listens there (an earlier toolgate or Temporal server?) or choose another port.',
    );
  }
  const bound = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (bound === null || typeof bound === 'string')
    throw new Error(`Could not find a free port for ${purpose}.`);
  return bound.port;
}

function memoize(action: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => (running ??= action());
}

// Servers still running when this process goes away. 'exit' covers normal ends and process.exit();
// the signal handlers cover a parent stopped on its own (a terminal's Ctrl-C reaches the server anyway).
const liveServers = new Set<ChildProcess>();
const forwardedSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let parentHooksInstalled = false;

function killOnParentExit({ child }: { child: ChildProcess }): void {
  liveServers.add(child);
  if (parentHooksInstalled) return;
  parentHooksInstalled = true;
  process.on('exit', () => {
    for (const server of liveServers) server.kill('SIGKILL');
  });
  for (const signal of forwardedSignals) {
    process.once(signal, () => {
      for (const server of liveServers) server.kill('SIGTERM');
      // Keep the default behaviour (exit) unless someone else handles this signal.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

function forgetOnParentExit({ child }: { child: ChildProcess }): void {
  liveServers.delete(child);
}
