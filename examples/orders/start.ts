// `npm start`: a Temporal dev server with its Web UI (state kept in .toolgate/), the orders service,
// a toolgate worker running the orders tools under the default policy, the MCP server over HTTP and
// the approvals console, the last in a process of its own that is given no private key.
// Ctrl-C stops them all.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { Connection } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type { KeyObject } from 'node:crypto';
import type { LoadedPolicy, PayloadEncryptionKey } from 'toolgate';
import {
  codecKeysEnvironmentVariable,
  defaultTaskQueue,
  formatCodecKeys,
  generateKeyPairFiles,
  keyPaths,
  loadConfig,
  prepareNamespace,
  readPrivateKey,
  resolveCodecKeys,
  resolveTemporalConnection,
  startToolGateWorker,
  temporalClientOn,
  ToolGateClient,
  withoutTransportSecurity,
} from 'toolgate';
import { inviteApprover, listApproverKeys } from 'toolgate/admin';
import { createMcpToken, mcpTokenVerifier, startMcpHttpServer } from 'toolgate/mcp';
import { startDevServer } from 'toolgate/testing';
import { startOrdersProcess } from './service/orders-process';

const projectRoot = resolve(__dirname, '..', '..');
/** Where npm start keeps its state: `.toolgate/` unless TOOLGATE_STATE names another folder (toolgate.config.ts reads it too). */
const stateDirectory = resolve(projectRoot, process.env.TOOLGATE_STATE ?? '.toolgate');
const log = (line: string): void => {
  process.stderr.write(`[start] ${line}\n`);
};

async function main(): Promise<void> {
  const temporalPort = Number(process.env.TEMPORAL_PORT ?? 7233);
  const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? 8233);
  const ordersPort = Number(process.env.ORDERS_PORT ?? 4100);
  const server = await startDevServer({
    projectRoot,
    port: temporalPort,
    uiPort,
    databaseFile: join(stateDirectory, 'temporal.sqlite'),
    log,
  });
  const stops: (() => Promise<unknown>)[] = [() => server.stop()];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.reverse())
      await stop().catch((error: unknown) => log(`while stopping: ${String(error)}`));
  };
  try {
    const connection = await Connection.connect({ address: server.address });
    await prepareNamespace({ connection, namespace: server.namespace });
    await connection.close();

    const config = loadConfig({ path: resolve(projectRoot, 'toolgate.config.ts') });
    // TOOLGATE_POLICY swaps the policy file, e.g. for examples/orders/policy.unattended.json.
    const policyPath = process.env.TOOLGATE_POLICY ? resolve(process.env.TOOLGATE_POLICY) : config.policyPath;
    // Development keys: created on first run for every caller, approver and operator the policy names,
    // and the minter.
    const named = JSON.parse(readFileSync(policyPath, 'utf8')) as {
      callers?: Record<string, unknown>;
      approvers?: Record<string, unknown>;
      operators?: Record<string, unknown>;
    };
    const owners = [
      ...Object.keys(named.callers ?? {}).map((name) => ({ kind: 'caller' as const, name })),
      ...Object.keys(named.approvers ?? {}).map((name) => ({ kind: 'approver' as const, name })),
      ...Object.keys(named.operators ?? {}).map((name) => ({ kind: 'operator' as const, name })),
      { kind: 'minter' as const },
    ];
    for (const owner of owners) {
      const written = generateKeyPairFiles({ directory: config.keysDirectory, owner });
      if (written.created) log(`generated a development key: ${relative(projectRoot, written.privateKey)}`);
    }
    const minterKeys = generateKeyPairFiles({ directory: config.keysDirectory, owner: { kind: 'minter' } });

    const orders = await startOrdersProcess({
      // No fault switches and no reset: nobody who reaches the port may arm faults or wipe the data.
      testMode: false,
      port: ordersPort,
      databasePath: join(stateDirectory, 'orders.sqlite'),
      minterPublicKeyPath: minterKeys.publicKey,
    });
    stops.push(() => orders.stop());
    process.env.ORDERS_URL = orders.url;

    const started = await startToolGateWorker({
      config,
      target: { address: server.address, namespace: server.namespace, taskQueue: defaultTaskQueue },
      policyPath,
      // The dev server started here speaks plaintext; the payload codec applies when configured.
      env: withoutTransportSecurity(process.env),
    });
    stops.push(() => started.stop());
    const { policy } = started;

    // The MCP server over HTTP, where the config says (this machine only by default; MCP_PORT overrides
    // the port), with a development token for support-bot.
    const mcpPort = Number(process.env.MCP_PORT ?? config.mcp.port ?? 4200);
    const mcpConnection = await Connection.connect({ address: server.address });
    stops.push(() => mcpConnection.close());
    const temporal = temporalClientOn({
      connection: mcpConnection,
      settings: {
        namespace: server.namespace,
        dataConverter: resolveTemporalConnection({ config, env: withoutTransportSecurity(process.env) })
          .dataConverter,
      },
    });
    const mcp = await startMcpHttpServer({
      client: new ToolGateClient({
        client: temporal,
        tools: config.tools,
        taskQueue: defaultTaskQueue,
        policy,
        callerKey: (caller) => callerKey({ keysDirectory: config.keysDirectory, caller }),
        // A proposal the server refuses for load never reaches a workflow: the MCP server audits it.
        audit: started.audit,
      }),
      tokens: mcpTokenVerifier({ path: config.mcp.tokensPath }),
      callers: Object.keys(policy.file.callers),
      host: config.mcp.host ?? '127.0.0.1',
      port: mcpPort,
      ...(config.mcp.allowedOrigins ? { allowedOrigins: config.mcp.allowedOrigins } : {}),
      log,
    });
    stops.push(() => mcp.stop());
    // The approvals console, on this machine only: approvers enrol their browser's key through an
    // operator's invite link, sign in with it and decide; the console relays what the browser signed.
    // It runs as a child process given the policy's public keys, the audit store and Temporal's
    // address: not this process's keys folder, config or environment.
    const auditUrl = process.env.TOOLGATE_AUDIT_URL || config.auditUrl;
    const codecKeys = resolveCodecKeys({ config, env: process.env });
    const approvals = await startConsoleProcess({
      plan: consoleProcessPlan({
        policy,
        directory: join(stateDirectory, 'console'),
        temporal: { address: server.address, namespace: server.namespace, taskQueue: defaultTaskQueue },
        // A PostgreSQL audit store (TOOLGATE_AUDIT_URL or the config's auditUrl) is handed over as is.
        ...(auditUrl ? { auditUrl } : { auditPath: config.auditPath }),
        // With payload encryption on, what the console shows and relays is encrypted too.
        ...(codecKeys ? { codecKeys } : {}),
        port: Number(process.env.CONSOLE_PORT ?? 4300),
        ...(process.env.CONSOLE_PUBLIC_URL ? { publicUrl: process.env.CONSOLE_PUBLIC_URL } : {}),
      }),
      log,
    });
    stops.push(() => approvals.stop());
    const operator = Object.keys(policy.operators)[0];
    const mcpCaller = 'support-bot';
    const mcpToken = policy.callerPolicy(mcpCaller)
      ? developmentMcpToken({
          tokensPath: config.mcp.tokensPath,
          keysDirectory: config.keysDirectory,
          caller: mcpCaller,
        })
      : undefined;
    if (mcpToken?.created)
      log(`created a development MCP token for ${mcpCaller}: ${relative(projectRoot, mcpToken.path)}`);
    const address = server.address === '127.0.0.1:7233' ? '' : ` --address ${server.address}`;
    // The worker polls from here on: the key registry answers the enrolment links below through it.
    // The SDK stops it on SIGINT/SIGTERM by itself; then the rest is stopped.
    const running = started.run();
    const enrolment = operator
      ? await enrolmentLinks({
          temporal,
          policy,
          operator,
          keysDirectory: config.keysDirectory,
          consoleUrl: approvals.url,
        }).catch((error: unknown) => [
          `no links (${String(error)}): npm run toolgate -- approvers invite NAME --as ${operator}`,
        ])
      : [];
    const call = (tool: string, args: Record<string, unknown>) =>
      `  npm run toolgate -- call${address} --caller support-bot --tool ${tool} --args '${JSON.stringify(args)}'`;
    const refund = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };
    process.stdout.write(
      [
        '',
        'toolgate is running.',
        `  Temporal UI:     ${server.uiUrl ?? '(headless)'}  (every call is a workflow; search by ToolName, Caller, SessionId)`,
        `  Temporal server: ${server.address}, namespace ${server.namespace}, task queue ${defaultTaskQueue}`,
        `  orders service:  ${orders.url}`,
        `  policy:          ${relative(projectRoot, policyPath)} (${policy.version})`,
        `  audit store:     ${auditUrl ? 'PostgreSQL (TOOLGATE_AUDIT_URL)' : relative(projectRoot, config.auditPath)}`,
        `  MCP server:      ${mcp.url}  (Streamable HTTP; a bearer token names the caller)`,
        `  approvals:       ${approvals.url}  (approvers sign in with the key their browser enrolled)`,
        ...(mcpToken
          ? [
              `  MCP token:       ${mcpToken.token}  (${mcpCaller}; kept in ${relative(projectRoot, mcpToken.path)})`,
            ]
          : [
              `  MCP token:       none (no ${mcpCaller} in this policy): npm run toolgate -- mcp token --caller NAME`,
            ]),
        '',
        ...(enrolment.length
          ? [
              'Enrol this browser as an approver: open a link, click once (each works once, for 24 hours):',
              ...enrolment.map((line) => `  ${line}`),
            ]
          : [
              'To approve from the browser, name an operator in the policy ("operators"), then invite an approver:',
              `  npm run toolgate -- approvers invite alice --as OPERATOR${address} --console-url ${approvals.url}`,
            ]),
        '',
        'Try, in another terminal:',
        call('get_order', { order_id: 'ORD-1001' }),
        `${call('refund_order', { ...refund, amount_cents: 25.9 })}   # INVALID_ARGUMENTS: cents are integers`,
        `${call('refund_order', refund)}   # APPROVAL_PENDING`,
        `Approve it in the console (${approvals.url}), then:`,
        `  npm run toolgate -- status${address} <call id> --wait   # OK, effect applied`,
        ...(mcpToken
          ? [
              'Or connect an MCP client, e.g. Claude Code:',
              `  claude mcp add --transport http toolgate ${mcp.url} --header "Authorization: Bearer ${mcpToken.token}"`,
            ]
          : []),
        '',
        `Ctrl-C stops everything; the server state stays in ${relative(projectRoot, stateDirectory) || '.'}/.`,
        '',
      ].join('\n'),
    );
    await running;
  } finally {
    await stopAll();
  }
}

/**
 * One line per approver of the policy: a fresh one-time enrolment link (signed by `operator`'s
 * development key, valid 24 hours) for an approver with no enrolled key yet, else how to invite
 * another. Development only: the operator's private key is a plain file in the keys folder.
 */
async function enrolmentLinks(input: {
  temporal: Client;
  policy: LoadedPolicy;
  operator: string;
  keysDirectory: string;
  consoleUrl: string;
}): Promise<string[]> {
  const { temporal, operator } = input;
  let operatorKey: KeyObject;
  try {
    operatorKey = readPrivateKey(
      keyPaths({ directory: input.keysDirectory, owner: { kind: 'operator', name: operator } }).privateKey,
    );
  } catch {
    return [];
  }
  const { keys } = await listApproverKeys({ client: temporal, taskQueue: defaultTaskQueue });
  const width = Math.max(...Object.keys(input.policy.approvers).map((name) => name.length));
  const lines: string[] = [];
  for (const approver of Object.keys(input.policy.approvers)) {
    const label = `${approver}:`.padEnd(width + 2);
    const enrolled = keys.filter((key) => key.approver === approver && !key.revoked).length;
    if (enrolled > 0) {
      lines.push(
        `${label}enrolled (${enrolled} key${enrolled === 1 ? '' : 's'}); another device: npm run toolgate -- approvers invite ${approver} --as ${operator} --console-url ${input.consoleUrl}`,
      );
      continue;
    }
    const invite = await inviteApprover({
      client: temporal,
      taskQueue: defaultTaskQueue,
      approver,
      operator,
      operatorKey,
      consoleUrl: input.consoleUrl,
    });
    lines.push(
      invite.outcome.accepted ? `${label}${invite.link}` : `${label}no link (${invite.outcome.code})`,
    );
  }
  return lines;
}

/** A caller's development key from the keys folder, or undefined (its calls are then UNAUTHENTICATED_CALLER). */
function callerKey(input: { keysDirectory: string; caller: string }) {
  try {
    return readPrivateKey(
      keyPaths({ directory: input.keysDirectory, owner: { kind: 'caller', name: input.caller } }).privateKey,
    );
  } catch {
    return undefined;
  }
}

/**
 * The development MCP token of `caller`: kept in plain text next to the development keys (which are
 * plain files there too), made on first run, and made again when the kept one was revoked. The file
 * is rewritten readable by its owner only on every run, whatever its mode was.
 */
function developmentMcpToken(input: { tokensPath: string; keysDirectory: string; caller: string }): {
  token: string;
  path: string;
  created: boolean;
} {
  const path = join(input.keysDirectory, `mcp-${input.caller}.token`);
  const kept = existsSync(path) ? readFileSync(path, 'utf8').trim() : '';
  const valid =
    kept !== '' && mcpTokenVerifier({ path: input.tokensPath }).verify(kept)?.caller === input.caller;
  const token = valid
    ? kept
    : createMcpToken({ path: input.tokensPath, caller: input.caller, label: 'development (npm start)' })
        .token;
  // `mode` applies to a file it creates only; chmod makes an existing one its owner's again.
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return { token, path, created: !valid };
}

/** How the approvals console's own process is started: its command line, environment and folder. */
export interface ConsoleProcessPlan {
  command: string;
  args: string[];
  /** Its whole environment: none of this process's variables but the few a Node program needs. */
  env: Record<string, string>;
  /** Its working folder: the one the plan wrote its policy (and its link to the audit store) to. */
  cwd: string;
}

/**
 * Plans the approvals console as a process of its own (`toolgate console --policy`): writes
 * `console-policy.json` to `directory`, the workers' policy with every key inline as its public half
 * (so the console needs no keys folder), and names only that file, the audit store (the history page
 * reads it; relayed decisions are logged to it), the Temporal address, namespace and task queue, and
 * where to listen. No config (which names the keys folder), no private key, no inherited environment;
 * and Node's permission model keeps it from reading what it is not given (`consolePermissions`).
 */
export function consoleProcessPlan(input: {
  policy: LoadedPolicy;
  directory: string;
  temporal: { address: string; namespace: string; taskQueue: string };
  auditPath?: string;
  /** A PostgreSQL audit store instead: given in the environment, never on the command line (its password). */
  auditUrl?: string;
  /**
   * The payload codec's keys, when payloads are encrypted: the console decodes what it shows and
   * encodes the decisions it relays. Given in the environment (`TOOLGATE_CODEC_KEYS`), never on the
   * command line. They encrypt; they sign nothing.
   */
  codecKeys?: readonly PayloadEncryptionKey[];
  host?: string;
  port: number;
  publicUrl?: string;
}): ConsoleProcessPlan {
  mkdirSync(input.directory, { recursive: true });
  const policyPath = join(input.directory, 'console-policy.json');
  writeFileSync(policyPath, `${JSON.stringify(publicPolicyFile(input.policy), null, 2)}\n`);
  // The CLI from source, through tsx, as `npm run toolgate` runs it; an installed toolgate runs `toolgate console`.
  const tsx = pathToFileURL(createRequire(__filename).resolve('tsx')).href;
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'TMPDIR', 'TEMP', 'TMP', 'SYSTEMROOT', 'LANG', 'TZ']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  if (input.auditUrl !== undefined) env.TOOLGATE_AUDIT_URL = input.auditUrl;
  if (input.codecKeys?.length) env[codecKeysEnvironmentVariable] = formatCodecKeys(input.codecKeys);
  const auditLink =
    input.auditUrl === undefined && input.auditPath !== undefined
      ? linkAuditStore({ directory: input.directory, auditPath: input.auditPath })
      : undefined;
  const consoleEntry = [
    `require(${JSON.stringify(join(projectRoot, 'src', 'index.ts'))})`,
    '.runCli(process.argv.slice(1))',
    '.then((code) => { process.exitCode = code; }, (error) => {',
    ' process.stderr.write(String(error && error.stack || error) + "\\n"); process.exitCode = 1; });',
  ].join('');
  // tsx compiles in memory instead of keeping a cache in the temporary folder, which it may not write.
  env.TSX_DISABLE_CACHE = '1';
  return {
    command: process.execPath,
    args: [
      ...consolePermissions({
        policyPath,
        ...(auditLink !== undefined ? { auditFolder: dirname(auditLink) } : {}),
      }),
      '--import',
      tsx,
      '--conditions=toolgate-source',
      // What scripts/toolgate-from-source.ts does, with the package entry named by its path: resolving
      // `toolgate` by name would have Node look for package.json in the repository's folder, which the
      // permission model only allows by allowing the whole repository.
      '--eval',
      consoleEntry,
      'console',
      '--policy',
      policyPath,
      ...(auditLink !== undefined ? ['--audit', auditLink] : []),
      '--address',
      input.temporal.address,
      '--namespace',
      input.temporal.namespace,
      '--task-queue',
      input.temporal.taskQueue,
      '--host',
      input.host ?? '127.0.0.1',
      '--port',
      String(input.port),
      ...(input.publicUrl !== undefined ? ['--public-url', input.publicUrl] : []),
      '--exit-with-parent',
    ],
    env,
    cwd: input.directory,
  };
}

/**
 * Node's permission model for the console process: it may read its own code (src/, node_modules/
 * and package.json), its policy and the audit store, and write the audit store only.
 * Not the keys folder, not the repository as a whole, not /proc (another process's environment).
 * A seat belt against a console bug or a compromised dependency reaching for a key, not a sandbox:
 * native addons (better-sqlite3) run outside it. A separate OS user is the boundary in production.
 */
export function consolePermissions(input: {
  policyPath: string;
  auditFolder?: string | undefined;
}): string[] {
  // Node 22.13 and later name it --permission; Node 20 knows it as --experimental-permission.
  const flag = process.allowedNodeEnvironmentFlags.has('--permission')
    ? '--permission'
    : '--experimental-permission';
  const auditFolder = input.auditFolder === undefined ? [] : [resolve(input.auditFolder) + sep];
  const reads = [
    join(projectRoot, 'src') + sep,
    join(projectRoot, 'node_modules') + sep,
    join(projectRoot, 'package.json'),
    resolve(input.policyPath),
    ...auditFolder,
  ];
  return [
    flag,
    // The permission model's start-up warnings (experimental; addons run outside it) are said once,
    // in docs/console.md, not on every start.
    '--disable-warning=ExperimentalWarning',
    '--disable-warning=SecurityWarning',
    // better-sqlite3, the audit store, is a native addon.
    '--allow-addons',
    // tsx's module hooks run in a worker thread, which is held to the same permissions.
    '--allow-worker',
    ...reads.map((path) => `--allow-fs-read=${path}`),
    ...auditFolder.map((path) => `--allow-fs-write=${path}`),
  ];
}

/**
 * The audit store as the console process opens it: a link in a folder of its own, `<directory>/audit`,
 * to the one the workers write. The store makes sure its folder exists, which the permission model
 * counts as writing that folder: the workers' folder (.toolgate) holds the keys, the link's holds the
 * link alone. SQLite follows the link, so its -wal and -shm files are the workers' ones.
 */
function linkAuditStore(input: { directory: string; auditPath: string }): string {
  const folder = join(input.directory, 'audit');
  mkdirSync(folder, { recursive: true });
  const link = join(folder, basename(input.auditPath));
  rmSync(link, { force: true });
  symlinkSync(resolve(input.auditPath), link);
  return link;
}

/** The workers' policy file with every key inline (`ed25519:<hex>`): public halves only, no file to read. */
function publicPolicyFile(policy: LoadedPolicy): unknown {
  const inline = (hex: string | null | undefined): string => `ed25519:${hex ?? ''}`;
  const mapped = <T extends { publicKey: string }>(
    record: Record<string, T>,
    keyOf: (name: string) => string | null | undefined,
  ) =>
    Object.fromEntries(
      Object.entries(record).map(([name, value]) => [name, { ...value, publicKey: inline(keyOf(name)) }]),
    );
  return {
    ...policy.file,
    callers: mapped(policy.file.callers, (name) => policy.snapshotFor(name).callerKeyHex),
    approvers: mapped(policy.file.approvers, (name) => policy.approvers[name]?.publicKeyHex),
    operators: mapped(policy.file.operators, (name) => policy.operators[name]),
  };
}

/** A running console process: its URL and process id; `stop()` ends it and resolves once it has exited. */
export interface ConsoleProcess {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts the console process of a plan and resolves once it prints where it listens; its log lines
 * go to `log`. It stops when `stop()` is called (SIGTERM, then SIGKILL after 10 s), and on its own
 * when this process ends however it ends: its standard input is a pipe from this process.
 */
export async function startConsoleProcess(input: {
  plan: ConsoleProcessPlan;
  log: (line: string) => void;
}): Promise<ConsoleProcess> {
  const { plan, log } = input;
  const child = spawn(plan.command, plan.args, {
    cwd: plan.cwd,
    env: plan.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  createInterface({ input: child.stderr }).on('line', (line) => log(line));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('the approvals console did not start within 60 s')),
      60_000,
    );
    createInterface({ input: child.stdout }).on('line', (line) => {
      const listening = /approvals console on (\S+)/.exec(line)?.[1];
      if (listening) {
        clearTimeout(timer);
        resolve(listening);
      } else log(`[console] ${line}`);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the approvals console exited before it listened (${signal ?? `exit ${code}`})`));
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  }).catch(async (error: unknown) => {
    // Started but not listening: it goes. (A process that never started has nothing to wait for.)
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    throw error;
  });
  child.once('exit', (code, signal) => log(`the approvals console stopped (${signal ?? `exit ${code}`})`));
  let stopping: Promise<void> | undefined;
  return {
    url,
    pid: child.pid ?? -1,
    stop: () =>
      (stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      })()),
  };
}

// Run by `npm start`; imported (by tests), it only defines what it exports.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === __filename) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`npm start failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
