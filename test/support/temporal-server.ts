// A real Temporal server, not the dev server: `go.temporal.io/server` built from source into
// .toolgate/bin with its SQL schema tool, its schema set up by that tool from the module's own schema
// files on a PostgreSQL server, and the server started on loopback with a generated config. The
// cluster test (test/cluster/) runs toolgate against it; `npx tsx test/support/temporal-server.ts` builds
// (or finds) the binaries and prints where they are, so that CI can build them before the tests.
import type { ChildProcess } from 'node:child_process';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import type { TLSConfig } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
// Run as a script too (`npx tsx test/support/temporal-server.ts`), where the package's entries do not
// resolve to the sources: the dev tooling the package itself ships (the Temporal CLI's builder, the
// process cleanup, the namespace's set-up) is imported by path.
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import { prepareNamespace } from '../../src/dev/dev-server';
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import { cleanUpOnProcessEnd } from '../../src/dev/process-cleanup';
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import { findOnPath, goInstall, isExecutableFile } from '../../src/dev/temporal-cli';

/** The Temporal server release toolgate builds: the server the Temporal CLI v1.5.1 embeds. */
export const temporalServerVersion = 'v1.29.1';
const serverModule = 'go.temporal.io/server';
const executableSuffix = process.platform === 'win32' ? '.exe' : '';
const serverBinaryName = `temporal-server${executableSuffix}`;
const sqlToolBinaryName = `temporal-sql-tool${executableSuffix}`;
const loopback = '127.0.0.1';
const startTimeoutMilliseconds = 90_000;
const stopTimeoutMilliseconds = 15_000;
const outputTailLines = 60;
const grpcStatusAlreadyExists = 6;

/** The two binaries and the module's PostgreSQL schema folder (`.../schema/postgresql/v12`). */
export interface TemporalServerBinaries {
  serverPath: string;
  sqlToolPath: string;
  /** Holds `temporal/versioned` (the default store) and `visibility/versioned`. */
  postgresSchemaDirectory: string;
}

/** Options of {@link resolveTemporalServerBinaries}. */
export interface ResolveTemporalServerOptions {
  /** The repository root; the binaries live in `<projectRoot>/.toolgate/bin`. */
  projectRoot: string;
  log: (line: string) => void;
}

/**
 * Finds `temporal-server` and `temporal-sql-tool` of {@link temporalServerVersion} in .toolgate/bin, or
 * builds them with `go install` (about 3 to 5 minutes the first time), and locates the module's schema
 * files in the Go module cache (downloading the module's source when the cache lost it).
 */
export async function resolveTemporalServerBinaries({
  projectRoot,
  log,
}: ResolveTemporalServerOptions): Promise<TemporalServerBinaries> {
  const goPath = await findOnPath({ name: `go${executableSuffix}` });
  if (goPath === undefined) {
    throw new Error(
      `No Go toolchain on PATH: the cluster test builds the Temporal server ${temporalServerVersion} from ` +
        `${serverModule} and reads its schema files from the Go module cache. Fix: install Go 1.24 or later.`,
    );
  }
  const binDirectory = path.join(projectRoot, '.toolgate', 'bin');
  const serverPath = path.join(binDirectory, serverBinaryName);
  const sqlToolPath = path.join(binDirectory, sqlToolBinaryName);
  const wanted = temporalServerVersion.replace(/^v/, '');
  const serverVersion = await readVersion({ binaryPath: serverPath });
  const sqlToolVersion = await readVersion({ binaryPath: sqlToolPath });
  if (serverVersion?.endsWith(` ${wanted}`) && sqlToolVersion?.endsWith(` ${wanted}`)) {
    log(`Temporal server from ${serverPath} (${serverVersion}), schema tool ${sqlToolPath}`);
  } else {
    await buildWithGo({ goPath, binDirectory, log });
    const built = await readVersion({ binaryPath: serverPath });
    if (!built?.endsWith(` ${wanted}`) || !(await readVersion({ binaryPath: sqlToolPath }))) {
      throw new Error(
        `go install finished, but ${serverPath} or ${sqlToolPath} does not report version ${wanted}. ` +
          `Fix: delete both and run "npx tsx test/support/temporal-server.ts" again.`,
      );
    }
    log(`Built the Temporal server ${serverPath} (${built}) and ${sqlToolPath}`);
  }
  const moduleDirectory = await moduleSourceDirectory({ goPath });
  const postgresSchemaDirectory = path.join(moduleDirectory, 'schema', 'postgresql', 'v12');
  for (const folder of ['temporal', 'visibility']) {
    if (!(await isDirectory(path.join(postgresSchemaDirectory, folder, 'versioned')))) {
      throw new Error(
        `${postgresSchemaDirectory}/${folder}/versioned is missing from the ${serverModule} module source. ` +
          'Fix: run "go clean -modcache" (or remove that module folder) and try again.',
      );
    }
  }
  return { serverPath, sqlToolPath, postgresSchemaDirectory };
}

/** Where PostgreSQL is, as the server and its schema tool reach it. */
export interface PostgresEndpoint {
  host: string;
  port: number;
  user: string;
  password: string;
}

/** The server's two databases: its default store and its visibility store. */
export interface TemporalDatabases {
  defaultStore: string;
  visibility: string;
}

/**
 * Creates the two databases (when missing) and brings their schema to the module's latest version with
 * the server's own schema tool: `setup-schema -v 0.0`, then `update-schema` from the versioned folders.
 * Running it again on an up-to-date database changes nothing.
 */
export async function setUpTemporalSchema(input: {
  binaries: TemporalServerBinaries;
  postgres: PostgresEndpoint;
  databases: TemporalDatabases;
  log: (line: string) => void;
}): Promise<void> {
  const { binaries, postgres, databases, log } = input;
  const stores = [
    { database: databases.defaultStore, folder: 'temporal' },
    { database: databases.visibility, folder: 'visibility' },
  ];
  for (const { database, folder } of stores) {
    const versioned = path.join(binaries.postgresSchemaDirectory, folder, 'versioned');
    log(`schema: ${folder} store in database "${database}" from ${versioned}`);
    const run = (args: string[]) =>
      runTool({
        binaryPath: binaries.sqlToolPath,
        // The password through the environment, not the command line.
        env: { SQL_PASSWORD: postgres.password },
        args: [
          '--plugin',
          'postgres12',
          '--endpoint',
          postgres.host,
          '--port',
          String(postgres.port),
          '--user',
          postgres.user,
          '--database',
          database,
          ...args,
        ],
      });
    const created = await run(['create-database']).catch((error: unknown) => error);
    if (created instanceof Error && !/already exists/i.test(created.message)) throw created;
    await run(['setup-schema', '--version', '0.0']);
    await run(['update-schema', '--schema-dir', versioned]);
  }
}

/** A running Temporal server that the caller may kill and start again (same ports, same databases). */
export interface TemporalServer {
  /** The frontend's gRPC address, `127.0.0.1:<port>`. */
  address: string;
  namespace: string;
  /** The server process's id while it runs. */
  pid(): number | undefined;
  /** Starts the process again after `kill` or `stop`, and resolves once the namespace answers. */
  start(): Promise<void>;
  /** Ends the process (and its process group) with `signal`, at once; resolves once it has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM, then SIGKILL after 15 s; resolves once the process has exited. Calling it again is harmless. */
  stop(): Promise<void>;
  /** The server's errors seen so far, by message, with how often. */
  errors: ReadonlyMap<string, number>;
  /** The client TLS options the server's own probe uses (CA, client certificate), when it speaks TLS. */
  tls?: TLSConfig;
}

/**
 * TLS on the frontend's gRPC port (PEM files). Internode traffic (history, matching) stays plaintext
 * on loopback; the server's system worker reaches the frontend with TLS, with the client certificate
 * under mTLS.
 */
export interface TemporalServerTls {
  /** The CA that signed the server's certificate (and, under mTLS, the clients' certificates). */
  caFile: string;
  /** The frontend's certificate (its SANs must cover `serverName`) and private key. */
  certFile: string;
  keyFile: string;
  /**
   * mTLS: the frontend requires a client certificate signed by `caFile`; this one is what the server's
   * system worker and its readiness probe present. Without it, plain TLS (no client certificate).
   */
  client?: { certFile: string; keyFile: string };
  /** The name checked against the server's certificate (default `localhost`). */
  serverName?: string;
}

/** Options of {@link startTemporalServer}. */
export interface StartTemporalServerOptions {
  binaries: TemporalServerBinaries;
  /** The server's folder: its config and dynamic config are written there. */
  directory: string;
  postgres: PostgresEndpoint;
  databases?: TemporalDatabases;
  /** Registered when missing, with its retention and toolgate's search attributes (default `default`). */
  namespace?: string;
  retentionDays?: number;
  numHistoryShards?: number;
  /** TLS (mTLS with `tls.client`) on the frontend; plaintext when absent. */
  tls?: TemporalServerTls;
  log: (line: string) => void;
}

/**
 * Sets up the schema, writes the server's config (PostgreSQL default and visibility stores, one cluster,
 * every service on loopback on a free port) and starts the four services in one process; resolves once
 * the namespace exists with toolgate's search attributes. A failed start leaves no process behind.
 */
export async function startTemporalServer(input: StartTemporalServerOptions): Promise<TemporalServer> {
  const { binaries, directory, postgres, log } = input;
  const databases = input.databases ?? { defaultStore: 'temporal', visibility: 'temporal_visibility' };
  const namespace = input.namespace ?? 'default';
  const retentionDays = input.retentionDays ?? 1;
  await setUpTemporalSchema({ binaries, postgres, databases, log });

  const ports = await distinctFreePorts(10);
  const [frontend, frontendHttp, history, matching, worker, ...membership] = ports as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const address = `${loopback}:${frontend}`;
  const clientTls = input.tls === undefined ? undefined : clientTlsOf(input.tls);
  const configDirectory = path.join(directory, 'config');
  await mkdir(configDirectory, { recursive: true });
  await writeFile(path.join(configDirectory, 'dynamicconfig.yaml'), dynamicConfigYaml);
  await writeFile(
    path.join(configDirectory, 'development.yaml'),
    serverConfigYaml({
      postgres,
      databases,
      numHistoryShards: input.numHistoryShards ?? 4,
      dynamicConfigPath: path.join(configDirectory, 'dynamicconfig.yaml'),
      ...(input.tls ? { tls: input.tls } : {}),
      services: {
        frontend: { grpcPort: frontend, membershipPort: membership[0], httpPort: frontendHttp },
        history: { grpcPort: history, membershipPort: membership[1] },
        matching: { grpcPort: matching, membershipPort: membership[2] },
        worker: { grpcPort: worker, membershipPort: membership[3] },
      },
    }),
  );

  const errors = new Map<string, number>();
  const outputTail: string[] = [];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let stopping = false;

  const onLine = (line: string): void => {
    // Without the stack traces: the message says what failed.
    outputTail.push(line.replace(/,"stacktrace":.*$/, '}').slice(0, 1_000));
    if (outputTail.length > outputTailLines) outputTail.shift();
    // The server logs JSON lines; errors while running deserve a look, the first of each kind is shown.
    const record = parseLogLine(line);
    if (record?.level !== 'error' || stopping) return;
    const seen = errors.get(record.msg) ?? 0;
    errors.set(record.msg, seen + 1);
    if (seen === 0)
      log(
        `temporal-server: ${line.replace(/,"stacktrace":.*$/, '}').slice(0, 500)} (further ones are counted)`,
      );
  };

  const killGroup = (signal: NodeJS.Signals): void => {
    const pid = child?.pid;
    if (pid === undefined || child?.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-pid, signal);
    } catch {
      child.kill(signal);
    }
  };
  const killOnExit = (): void => killGroup('SIGKILL');
  let forgetKillOnExit: (() => void) | undefined;

  const launch = async (): Promise<void> => {
    stopping = false;
    outputTail.length = 0;
    const started = spawn(
      binaries.serverPath,
      ['--root', directory, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'],
      // A process group of its own, so that a kill reaches everything it started.
      { cwd: directory, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = started;
    createInterface({ input: started.stdout }).on('line', onLine);
    createInterface({ input: started.stderr }).on('line', onLine);
    let spawnError: Error | undefined;
    exited = new Promise<void>((resolve) => {
      started.once('exit', () => resolve());
      started.once('error', (error) => {
        spawnError = error;
        if (started.pid === undefined) resolve();
      });
    });
    forgetKillOnExit = cleanUpOnProcessEnd(killOnExit);
    try {
      await waitUntilServing({ address, tls: clientTls, child: started, getSpawnError: () => spawnError });
      await ensureNamespace({ address, tls: clientTls, namespace, retentionDays });
    } catch (error) {
      killGroup('SIGKILL');
      await exited;
      forgetKillOnExit?.();
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(
        `The Temporal server (${binaries.serverPath}) did not start on ${address}: ${reason}\n` +
          `Its last output:\n${outputTail.join('\n') || '(none)'}`,
      );
    }
  };

  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    stopping = true;
    killGroup(signal);
    await exited;
    forgetKillOnExit?.();
  };

  const stop = async (): Promise<void> => {
    stopping = true;
    killGroup('SIGTERM');
    const inTime = await Promise.race([exited.then(() => true), delay(stopTimeoutMilliseconds, false)]);
    if (!inTime) killGroup('SIGKILL');
    await exited;
    forgetKillOnExit?.();
  };

  log(
    `Starting the Temporal server ${temporalServerVersion} on ${address}${input.tls ? (input.tls.client ? ' (mTLS)' : ' (TLS)') : ''} (PostgreSQL ${postgres.host}:${postgres.port})`,
  );
  await launch();
  log(`Temporal server ready on ${address}, namespace "${namespace}"`);
  return {
    address,
    namespace,
    pid: () => (child?.exitCode === null && child.signalCode === null ? child.pid : undefined),
    start: launch,
    kill,
    stop,
    errors,
    ...(clientTls ? { tls: clientTls } : {}),
  };
}

/** What a client of this server passes as `tls`: the CA, the client certificate (mTLS), the name. */
function clientTlsOf(tls: TemporalServerTls): TLSConfig {
  return {
    serverRootCACertificate: readFileSync(tls.caFile),
    serverNameOverride: tls.serverName ?? 'localhost',
    ...(tls.client
      ? { clientCertPair: { crt: readFileSync(tls.client.certFile), key: readFileSync(tls.client.keyFile) } }
      : {}),
  };
}

/** Registers the namespace when missing, then sets its retention and toolgate's search attributes. */
async function ensureNamespace(input: {
  address: string;
  tls: TLSConfig | undefined;
  namespace: string;
  retentionDays: number;
}) {
  const connection = await Connection.connect({
    address: input.address,
    ...(input.tls ? { tls: input.tls } : {}),
  });
  try {
    const deadline = Date.now() + startTimeoutMilliseconds;
    for (;;) {
      try {
        await connection.workflowService.registerNamespace({
          namespace: input.namespace,
          workflowExecutionRetentionPeriod: msToTs(input.retentionDays * 24 * 60 * 60 * 1000),
        });
      } catch (error) {
        if (!isGrpcServiceError(error) || (error.code as number) !== grpcStatusAlreadyExists) {
          // The history service may still be joining the ring: try again until the deadline.
          if (Date.now() > deadline) throw error;
          await delay(500);
          continue;
        }
      }
      try {
        // The frontend learns of a new namespace through its cache: wait until it answers for it.
        await connection.workflowService.describeNamespace({ namespace: input.namespace });
        await prepareNamespace({
          connection,
          namespace: input.namespace,
          retentionDays: input.retentionDays,
        });
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await delay(500);
      }
    }
  } finally {
    await connection.close();
  }
}

async function waitUntilServing(input: {
  address: string;
  tls: TLSConfig | undefined;
  child: ChildProcess;
  getSpawnError: () => Error | undefined;
}): Promise<void> {
  const deadline = Date.now() + startTimeoutMilliseconds;
  let lastError: unknown;
  for (;;) {
    const spawnError = input.getSpawnError();
    if (spawnError !== undefined) throw spawnError;
    if (input.child.exitCode !== null || input.child.signalCode !== null) {
      throw new Error(`the process exited (${String(input.child.exitCode ?? input.child.signalCode)}).`);
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? ` Last attempt: ${lastError.message}` : '';
      throw new Error(`it did not answer within ${startTimeoutMilliseconds / 1000} s.${detail}`);
    }
    const attemptDeadline = Math.min(deadline, Date.now() + 2_000);
    const connection = Connection.lazy({
      address: input.address,
      ...(input.tls ? { tls: input.tls } : {}),
      connectTimeout: attemptDeadline - Date.now(),
    });
    try {
      await connection.ensureConnected();
      await connection.withDeadline(attemptDeadline, () => connection.workflowService.getSystemInfo({}));
      return;
    } catch (error) {
      lastError = error;
    } finally {
      await connection.close();
    }
    await delay(250);
  }
}

interface ServicePorts {
  grpcPort: number;
  membershipPort: number;
  httpPort?: number;
}

/** The server's static config: the shape of the module's config/development-postgres12.yaml, on loopback. */
function serverConfigYaml(input: {
  postgres: PostgresEndpoint;
  databases: TemporalDatabases;
  numHistoryShards: number;
  dynamicConfigPath: string;
  tls?: TemporalServerTls;
  services: Record<'frontend' | 'history' | 'matching' | 'worker', ServicePorts>;
}): string {
  const { postgres, databases, services } = input;
  const quoted = (value: string) => JSON.stringify(value);
  const store = (database: string, maxConns: number) => `
      sql:
        pluginName: "postgres12"
        databaseName: ${quoted(database)}
        connectAddr: ${quoted(`${postgres.host}:${postgres.port}`)}
        connectProtocol: "tcp"
        user: ${quoted(postgres.user)}
        password: ${quoted(postgres.password)}
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: "1h"`;
  const service = (ports: ServicePorts) => `
    rpc:
      grpcPort: ${ports.grpcPort}
      membershipPort: ${ports.membershipPort}
      bindOnIP: "${loopback}"${ports.httpPort === undefined ? '' : `\n      httpPort: ${ports.httpPort}`}`;
  return `# Written by toolgate's cluster tooling (test/support/temporal-server.ts).
log:
  stdout: true
  level: warn

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: ${input.numHistoryShards}
  datastores:
    postgres-default:${store(databases.defaultStore, 20)}
    postgres-visibility:${store(databases.visibility, 5)}

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "${loopback}"${input.tls ? tlsYaml(input.tls) : ''}

services:
  frontend:${service(services.frontend)}
  history:${service(services.history)}
  matching:${service(services.matching)}
  worker:${service(services.worker)}

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "${loopback}:${services.frontend.grpcPort}"

dcRedirectionPolicy:
  policy: "noop"

dynamicConfigClient:
  filepath: ${quoted(input.dynamicConfigPath)}
  pollInterval: "10s"
`;
}

/**
 * \`global.tls\`: the frontend's server certificate (and the client CA it requires under mTLS), and the
 * system worker's way to the frontend (its root CA, the name to check, its client certificate).
 * Internode (history, matching) stays plaintext: it is not configured.
 */
function tlsYaml(tls: TemporalServerTls): string {
  const quoted = (value: string) => JSON.stringify(value);
  const serverName = tls.serverName ?? 'localhost';
  const mutual = tls.client !== undefined;
  return `
  tls:
    frontend:
      server:
        certFile: ${quoted(tls.certFile)}
        keyFile: ${quoted(tls.keyFile)}
        requireClientAuth: ${mutual}${mutual ? `\n        clientCaFiles:\n          - ${quoted(tls.caFile)}` : ''}
    systemWorker:${
      tls.client
        ? `\n      certFile: ${quoted(tls.client.certFile)}\n      keyFile: ${quoted(tls.client.keyFile)}`
        : ''
    }
      client:
        serverName: ${quoted(serverName)}
        rootCaFiles:
          - ${quoted(tls.caFile)}`;
}

/** What toolgate needs of the server (update-with-start), and search attributes usable as soon as added. */
const dynamicConfigYaml = `# Written by toolgate's cluster tooling (test/support/temporal-server.ts).
frontend.enableExecuteMultiOperation:
  - value: true
frontend.enableUpdateWorkflowExecution:
  - value: true
frontend.enableUpdateWorkflowExecutionAsyncAccepted:
  - value: true
system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
`;

function parseLogLine(line: string): { level?: string; msg: string } | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as { level?: unknown; msg?: unknown };
    return {
      ...(typeof parsed.level === 'string' ? { level: parsed.level } : {}),
      msg: typeof parsed.msg === 'string' ? parsed.msg : '',
    };
  } catch {
    return undefined;
  }
}

/**
 * Ports free on loopback now, below 32768: the PostgreSQL schema keeps a membership port in a
 * `smallint` column, and the system's ephemeral ports (where a port 0 bind lands) lie above it.
 */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  for (let attempt = 0; ports.size < count; attempt++) {
    if (attempt > 1_000) throw new Error(`found only ${ports.size} free ports below 32768 on ${loopback}`);
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    if (!ports.has(candidate) && (await isPortFree(candidate))) ports.add(candidate);
  }
  return [...ports];
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, loopback, () => probe.close(() => resolve(true)));
  });
}

/** Runs the schema tool; rejects with its output when it fails. */
function runTool(input: {
  binaryPath: string;
  args: string[];
  env: Record<string, string>;
}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      input.binaryPath,
      input.args,
      { env: { ...process.env, ...input.env }, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          reject(
            new Error(
              `${path.basename(input.binaryPath)} ${input.args.at(-2) ?? ''} ${input.args.at(-1) ?? ''} failed: ${error.message}\n${stdout}${stderr}`,
            ),
          );
          return;
        }
        resolve(`${stdout}${stderr}`);
      },
    );
  });
}

/** The module's source folder in the Go module cache (`go mod download` fetches it when absent). */
async function moduleSourceDirectory({ goPath }: { goPath: string }): Promise<string> {
  const output = await new Promise<string>((resolve, reject) => {
    execFile(
      goPath,
      ['mod', 'download', '-json', `${serverModule}@${temporalServerVersion}`],
      // Outside any module: the module's own source, nothing else.
      { cwd: path.parse(process.cwd()).root, timeout: 600_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        error
          ? reject(
              new Error(
                `go mod download ${serverModule}@${temporalServerVersion} failed: ${stderr || error.message}`,
              ),
            )
          : resolve(stdout),
    );
  });
  const directory = (JSON.parse(output) as { Dir?: unknown }).Dir;
  if (typeof directory !== 'string' || directory === '') {
    throw new Error(
      `go mod download ${serverModule}@${temporalServerVersion} named no source folder: ${output}`,
    );
  }
  return directory;
}

async function buildWithGo(input: { goPath: string; binDirectory: string; log: (line: string) => void }) {
  const { goPath, binDirectory, log } = input;
  const packages = [`${serverModule}/cmd/server`, `${serverModule}/cmd/tools/sql`].map(
    (name) => `${name}@${temporalServerVersion}`,
  );
  log(
    `Building the Temporal server ${temporalServerVersion} and its schema tool with ${goPath} into ${binDirectory}; ` +
      'the first build downloads modules and takes about 3 to 5 minutes.',
  );
  await mkdir(binDirectory, { recursive: true });
  // `go install` names the binaries after their package folders (server, sql): build into a folder of
  // their own, then give them their names.
  const buildDirectory = await mkdtemp(path.join(binDirectory, '.temporal-server-build-'));
  const startedAt = Date.now();
  try {
    await goInstall({
      goPath,
      packages,
      gobin: buildDirectory,
      what: 'the Temporal server',
      cwd: path.parse(process.cwd()).root,
      log,
    });
    await rename(
      path.join(buildDirectory, `server${executableSuffix}`),
      path.join(binDirectory, serverBinaryName),
    );
    await rename(
      path.join(buildDirectory, `sql${executableSuffix}`),
      path.join(binDirectory, sqlToolBinaryName),
    );
    log(`built in ${Math.round((Date.now() - startedAt) / 1000)} s`);
  } finally {
    await rm(buildDirectory, { recursive: true, force: true });
  }
}

async function isDirectory(directory: string): Promise<boolean> {
  try {
    return (await stat(directory)).isDirectory();
  } catch {
    return false;
  }
}

/** The first line of `<binary> --version`, or undefined when it does not run. */
async function readVersion({ binaryPath }: { binaryPath: string }): Promise<string | undefined> {
  if (!(await isExecutableFile({ filePath: binaryPath }))) return undefined;
  return new Promise((resolve) => {
    execFile(binaryPath, ['--version'], { timeout: 15_000 }, (error, stdout) => {
      resolve(error ? undefined : stdout.split('\n')[0]?.trim() || undefined);
    });
  });
}

async function main(): Promise<void> {
  const projectRoot = path.resolve(__dirname, '..', '..');
  const binaries = await resolveTemporalServerBinaries({
    projectRoot,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${binaries.serverPath}\n`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(
      `Could not provide the Temporal server: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
