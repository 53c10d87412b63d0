// TLS and mTLS against the real Temporal server (test/support/temporal-server.ts), not only in unit tests:
// the frontend serves a certificate of a throwaway CA (made with the openssl CLI) and requires a client
// certificate. A worker started with TEMPORAL_TLS_CA/CERT/KEY/SERVER_NAME runs a governed read, the CLI
// reads its result with the same variables, and a client without the client certificate, or without
// TLS at all, is refused. `npm run test:cluster`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as connectTls } from 'node:tls';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import type { PolicyFileInput, ToolGateWorkerHandle } from 'toolgate';
import {
  connectTemporalClient,
  generateKeyPairFiles,
  keyPaths,
  loadConfig,
  readPrivateKey,
  resolveTemporalConnection,
  runCli,
  startToolGateWorker,
  ToolGateClient,
} from 'toolgate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { startOrdersProcess } from '../../examples/orders/service/orders-process';
// The cluster's infrastructure is test tooling (test/support/), not part of toolgate's public entries.
import { startEmbeddedPostgres } from '../support/postgres';
import type { TemporalServer } from '../support/temporal-server';
import { resolveTemporalServerBinaries, startTemporalServer } from '../support/temporal-server';

const projectRoot = resolve(__dirname, '..', '..');
const configPath = join(__dirname, 'cluster-toolgate.config.ts');
const caller = 'tls-reader';
const serverName = 'localhost';
const log = (line: string): void => {
  process.stderr.write(`[tls] ${line}\n`);
};

const cleanups: (() => unknown)[] = [];
let directory: string;
let server: TemporalServer;
let worker: ToolGateWorkerHandle;
let taskQueue: string;
/** The worker's and the CLI's TLS variables: the CA, the client certificate, the name to check. */
let tlsEnvironment: Record<string, string>;
let readCallId: string | undefined;

beforeAll(async () => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    throw new Error('The TLS cluster test makes its certificates with the openssl CLI: install openssl.');
  }
  directory = mkdtempSync(join(tmpdir(), 'toolgate-tls-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  const certificates = makeCertificates(join(directory, 'certs'));
  tlsEnvironment = {
    TEMPORAL_TLS_CA: certificates.ca,
    TEMPORAL_TLS_CERT: certificates.clientCert,
    TEMPORAL_TLS_KEY: certificates.clientKey,
    TEMPORAL_TLS_SERVER_NAME: serverName,
  };

  const binaries = await resolveTemporalServerBinaries({ projectRoot, log });
  const postgres = await startEmbeddedPostgres({ directory: join(directory, 'postgres') });
  cleanups.push(() => postgres.stop());
  server = await startTemporalServer({
    binaries,
    directory: join(directory, 'temporal'),
    postgres: { host: '127.0.0.1', port: postgres.port, user: postgres.user, password: postgres.password },
    namespace: 'toolgate',
    tls: {
      caFile: certificates.ca,
      certFile: certificates.serverCert,
      keyFile: certificates.serverKey,
      client: { certFile: certificates.clientCert, keyFile: certificates.clientKey },
      serverName,
    },
    log,
  });
  cleanups.push(() => server.stop());

  const keysDirectory = join(directory, 'keys');
  generateKeyPairFiles({ directory: keysDirectory, owner: { kind: 'caller', name: caller } });
  const policy: PolicyFileInput = {
    version: 'tls-1',
    callers: {
      [caller]: { publicKey: `callers/${caller}.pub`, tools: ['get_order'], autonomy: 'reversible' },
    },
    approvers: {},
  };
  const policyPath = join(directory, 'policy.json');
  writeFileSync(policyPath, `${JSON.stringify(policy, null, 2)}\n`);
  const orders = await startOrdersProcess({ testMode: true });
  cleanups.push(() => orders.stop());

  // The cluster test's config reads these when it loads (here, and in the CLI's run below).
  const configVariables = [
    'TOOLGATE_CLUSTER_POLICY',
    'TOOLGATE_CLUSTER_KEYS',
    'TOOLGATE_CLUSTER_AUDIT',
    'ORDERS_URL',
  ];
  const savedVariables = configVariables.map((name) => [name, process.env[name]] as const);
  cleanups.push(() => {
    for (const [name, value] of savedVariables) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  process.env.TOOLGATE_CLUSTER_POLICY = policyPath;
  process.env.TOOLGATE_CLUSTER_KEYS = keysDirectory;
  process.env.TOOLGATE_CLUSTER_AUDIT = join(directory, 'audit.sqlite');
  process.env.ORDERS_URL = orders.url;
  taskQueue = `tls-${randomUUID()}`;
  worker = await startToolGateWorker({
    config: loadConfig({ path: configPath }),
    target: { address: server.address, namespace: server.namespace, taskQueue },
    env: { ...withoutTemporalTls(process.env), ...tlsEnvironment },
    metrics: false,
  });
  cleanups.push(() => worker.stop());
  void worker.run();
});

afterAll(async () => {
  if (server) log(`server errors: ${JSON.stringify([...server.errors])}`);
  // Last started, first stopped; every step runs even when one fails.
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()!();
    } catch (error) {
      log(`cleanup failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
});

/** A toolgate client connection resolved from these variables alone, as a deployment's would be. */
function settingsFrom(env: Record<string, string>) {
  return resolveTemporalConnection({
    env,
    overrides: { address: server.address, namespace: server.namespace, taskQueue },
  });
}

/** Connects with `env`'s TLS variables and asks the frontend about the namespace. */
async function describeNamespaceWith(env: Record<string, string>): Promise<void> {
  const { connection } = await connectTemporalClient(settingsFrom(env), { connectTimeout: '5s' });
  try {
    await connection.withDeadline(Date.now() + 5_000, () =>
      connection.workflowService.describeNamespace({ namespace: server.namespace }),
    );
  } finally {
    await connection.close();
  }
}

describe('toolgate on a Temporal server that requires mTLS', () => {
  it('a worker and a client given TEMPORAL_TLS_CA/CERT/KEY/SERVER_NAME run a governed read', async () => {
    const { connection, client } = await connectTemporalClient(settingsFrom(tlsEnvironment));
    try {
      const callerKey = readPrivateKey(
        keyPaths({ directory: join(directory, 'keys'), owner: { kind: 'caller', name: caller } }).privateKey,
      );
      const toolGate = new ToolGateClient({
        client,
        tools: ordersContracts,
        taskQueue,
        policy: worker.policy,
        callerKey: (name) => (name === caller ? callerKey : undefined),
      });
      const result = await toolGate.call({
        session: 'tls-read',
        caller,
        tool: 'get_order',
        arguments: JSON.stringify({ order_id: 'ORD-1001' }),
      });
      expect(result).toMatchObject({ ok: true, code: 'OK', effect: 'none' });
      expect(result.data).toMatchObject({ order_id: 'ORD-1001' });
      readCallId = result.callId;
    } finally {
      await connection.close();
    }
  });

  it('refuses a client that trusts the CA but presents no client certificate', async () => {
    const { TEMPORAL_TLS_CA, TEMPORAL_TLS_SERVER_NAME } = tlsEnvironment;
    // The same request with the client certificate is answered: only the certificate is missing below.
    await describeNamespaceWith(tlsEnvironment);
    const refused = await refusalOf(
      describeNamespaceWith({
        TEMPORAL_TLS_CA: TEMPORAL_TLS_CA!,
        TEMPORAL_TLS_SERVER_NAME: TEMPORAL_TLS_SERVER_NAME!,
      }),
    );
    log(`without a client certificate: ${refused}`);
    expect(refused).toMatch(/UNAVAILABLE|certificate|handshake|Failed to connect/i);
    // Under gRPC the refusal reads as a failed connection; at the TLS layer it says why.
    const alert = await tlsAlertWithoutClientCertificate();
    log(`TLS alert without a client certificate: ${alert}`);
    expect(alert).toMatch(/CERTIFICATE_REQUIRED|BAD_CERTIFICATE|HANDSHAKE_FAILURE/);
  });

  it('refuses a plaintext client', async () => {
    const refused = await refusalOf(
      (async () => {
        const connection = await Connection.connect({ address: server.address, connectTimeout: '5s' });
        try {
          await connection.withDeadline(Date.now() + 5_000, () =>
            connection.workflowService.describeNamespace({ namespace: server.namespace }),
          );
        } finally {
          await connection.close();
        }
      })(),
    );
    log(`plaintext: ${refused}`);
    expect(refused).toMatch(/UNAVAILABLE|Failed to connect|Connection dropped|deadline/i);
  });

  it("the CLI with the TLS variables reads the call's result (toolgate status)", async () => {
    expect(readCallId).toBeDefined();
    const saved = { ...process.env };
    Object.assign(process.env, tlsEnvironment);
    let out = '';
    let error = '';
    try {
      const code = await runCli(
        [
          'status',
          readCallId!,
          '--config',
          configPath,
          '--address',
          server.address,
          '--namespace',
          server.namespace,
          '--task-queue',
          taskQueue,
          '--json',
        ],
        { out: (text) => (out += `${text}\n`), error: (text) => (error += `${text}\n`) },
      );
      expect({ code, error }).toEqual({ code: 0, error: '' });
      expect(JSON.parse(out)).toMatchObject({ callId: readCallId, ok: true, code: 'OK' });
    } finally {
      for (const name of Object.keys(tlsEnvironment)) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });
});

/**
 * Opens a TLS connection to the frontend that trusts the CA and presents no certificate, and answers
 * the code of the error the server's alert raises (TLS 1.3 sends it after the client's handshake).
 */
function tlsAlertWithoutClientCertificate(): Promise<string> {
  const [host, port] = server.address.split(':') as [string, string];
  return new Promise((resolveAlert) => {
    const socket = connectTls({
      host,
      port: Number(port),
      servername: serverName,
      ca: readFileSync(tlsEnvironment.TEMPORAL_TLS_CA!),
      ALPNProtocols: ['h2'],
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolveAlert('no alert within 5 s');
    }, 5_000);
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      resolveAlert(error.code ?? error.message);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      resolveAlert('closed without an alert');
    });
  });
}

/** The message of the error `attempt` rejects with; fails the test when it succeeds. */
async function refusalOf(attempt: Promise<unknown>): Promise<string> {
  try {
    await attempt;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('the server answered, where it should have refused the connection');
}

/** The environment without Temporal's TLS and API-key variables (the test sets its own). */
function withoutTemporalTls(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/^TEMPORAL_(TLS|API_KEY)/.test(name)));
}

/** A throwaway CA, a server certificate for 127.0.0.1 and localhost, and a client certificate. */
function makeCertificates(folder: string): {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
} {
  mkdirSync(folder, { recursive: true });
  const file = (name: string) => join(folder, name);
  const openssl = (...args: string[]) =>
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const newKey = (name: string) =>
    openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file(name));
  newKey('ca.key');
  openssl(
    'req',
    '-x509',
    '-new',
    '-key',
    file('ca.key'),
    '-sha256',
    '-days',
    '2',
    '-subj',
    '/CN=toolgate test CA',
    '-out',
    file('ca.pem'),
  );
  const issue = (name: string, extensions: string) => {
    newKey(`${name}.key`);
    openssl(
      'req',
      '-new',
      '-key',
      file(`${name}.key`),
      '-subj',
      `/CN=toolgate test ${name}`,
      '-out',
      file(`${name}.csr`),
    );
    writeFileSync(file(`${name}.ext`), extensions);
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-sha256',
      '-extfile',
      file(`${name}.ext`),
      '-out',
      file(`${name}.pem`),
    );
  };
  issue(
    'server',
    'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n',
  );
  issue(
    'client',
    'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
  );
  return {
    ca: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
  };
}
