// `npm start`: a Temporal dev server with its Web UI (state kept in .toolgate/), the orders service,
// a toolgate worker running the orders tools under the default policy, the MCP server over HTTP and
// the approvals console.
// Ctrl-C stops them all.
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import {
  defaultTaskQueue,
  generateKeyPairFiles,
  keyPaths,
  loadConfig,
  prepareNamespace,
  readPrivateKey,
  startToolGateWorker,
  ToolGateClient,
} from 'toolgate';
import { startApprovalsConsole } from 'toolgate/console';
import { createMcpToken, mcpTokenVerifier, startMcpHttpServer } from 'toolgate/mcp';
import { startDevServer } from 'toolgate/testing';
import { startOrdersProcess } from './service/orders-process';

const projectRoot = resolve(__dirname, '..', '..');
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
    databaseFile: '.toolgate/temporal.sqlite',
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
      databasePath: resolve(projectRoot, '.toolgate/orders.sqlite'),
      minterPublicKeyPath: minterKeys.publicKey,
    });
    stops.push(() => orders.stop());
    process.env.ORDERS_URL = orders.url;

    const started = await startToolGateWorker({
      config,
      target: { address: server.address, namespace: server.namespace, taskQueue: defaultTaskQueue },
      policyPath,
    });
    stops.push(() => started.stop());
    const { policy } = started;

    // The MCP server over HTTP, where the config says (this machine only by default; MCP_PORT overrides
    // the port), with a development token for support-bot.
    const mcpPort = Number(process.env.MCP_PORT ?? config.mcp.port ?? 4200);
    const mcpConnection = await Connection.connect({ address: server.address });
    stops.push(() => mcpConnection.close());
    const mcp = await startMcpHttpServer({
      client: new ToolGateClient({
        client: new Client({ connection: mcpConnection, namespace: server.namespace }),
        tools: config.tools,
        taskQueue: defaultTaskQueue,
        policy,
        callerKey: (caller) => callerKey({ keysDirectory: config.keysDirectory, caller }),
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
    const consolePort = Number(process.env.CONSOLE_PORT ?? 4300);
    const approvals = await startApprovalsConsole({
      client: new Client({ connection: mcpConnection, namespace: server.namespace }),
      taskQueue: defaultTaskQueue,
      policy,
      audit: started.audit,
      host: '127.0.0.1',
      port: consolePort,
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
    process.stdout.write(
      [
        '',
        'toolgate is running.',
        `  Temporal UI:     ${server.uiUrl ?? '(headless)'}  (every call is a workflow; search by ToolName, Caller, SessionId)`,
        `  Temporal server: ${server.address}, namespace ${server.namespace}, task queue ${defaultTaskQueue}`,
        `  orders service:  ${orders.url}`,
        `  policy:          ${relative(projectRoot, policyPath)} (${policy.version})`,
        `  audit store:     ${relative(projectRoot, config.auditPath)}`,
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
        'Try, in another terminal:',
        `  npm run toolgate -- call${address} --caller support-bot --tool get_order --args '{"order_id":"ORD-1001"}'`,
        `  npm run toolgate -- call${address} --caller support-bot --tool refund_order --args '{"order_id":"ORD-1001","amount_cents":25.9,"currency":"BRL","reason":"damaged"}'`,
        operator
          ? 'Invite an approver to enrol this browser (open the printed link), then approve in the console:'
          : 'To approve from the browser, name an operator in the policy ("operators"), then invite an approver:',
        `  npm run toolgate -- approvers invite alice --as ${operator ?? 'OPERATOR'}${address} --console-url ${approvals.url}`,
        ...(mcpToken
          ? [
              'Or connect an MCP client, e.g. Claude Code:',
              `  claude mcp add --transport http toolgate ${mcp.url} --header "Authorization: Bearer ${mcpToken.token}"`,
            ]
          : []),
        '',
        'Ctrl-C stops everything; the server state stays in .toolgate/.',
        '',
      ].join('\n'),
    );
    // The worker stops on SIGINT/SIGTERM by itself (the SDK's shutdown signals), then we stop the rest.
    await started.run();
  } finally {
    await stopAll();
  }
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

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`npm start failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
