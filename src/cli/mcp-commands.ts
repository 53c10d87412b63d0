import { randomUUID } from 'node:crypto';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { LoadedConfig } from '../config';
import { keyPaths } from '../keys/key-files';
import { authorityOf } from '../mcp/http-access';
import { createToolGateMcpServer } from '../mcp/mcp-server';
import { splittingBatches } from '../mcp/stdio-batches';
import { startMcpHttpServer } from '../mcp/mcp-http-server';
import type { McpHttpServer } from '../mcp/mcp-http-server';
import { createMcpToken, listMcpTokens, mcpTokenVerifier, revokeMcpToken } from '../mcp/mcp-tokens';
import type { McpTokenRecord } from '../mcp/mcp-tokens';
import type { LoadedPolicy } from '../policy/load-policy';
import { loadPolicyFile } from '../policy/load-policy';
import { createToolRegistry } from '../tools/tool-registry';
import type { CliContext, CliOutput, GlobalOptions } from './cli-context';
import { commandAction, configOf, privateKeyOf, untilStopped, withClient } from './cli-context';

// `--caller` is declared on `mcp` itself, so `mcp token --caller X` reads it from there: commander
// hands a parent's option to the parent wherever it stands (the program's options are not positional).
type McpOptions = GlobalOptions & { caller?: string; session?: string };
type HttpOptions = McpOptions & { host?: string; port?: number };
type TokenOptions = McpOptions & { label?: string; onBehalfOf?: string };

/** The port `toolgate mcp http` and `npm start` listen on unless told otherwise. */
const defaultMcpPort = 4200;
/** How many hex digits of a token's hash the list shows (and a revocation usually names). */
const shownHashDigits = 12;

/** Adds `mcp` (stdio, as one caller), `mcp http` (Streamable HTTP, callers from bearer tokens) and the token commands. */
export function addMcpCommands(program: Command, context: CliContext): void {
  const mcp = program
    .command('mcp')
    .description(
      'serve the tools to an MCP client over stdio, every call governed by toolgate as --caller ' +
        '(stdout carries the protocol; logs go to stderr); `mcp http` serves them over Streamable HTTP',
    )
    .option('--caller <name>', 'the caller every call is made for, as named in the policy (also: mcp token)')
    .option(
      '--session <id>',
      'the toolgate session of every call (default: a new random id, printed to stderr)',
    )
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        stdioCommand({ options: command.optsWithGlobals<McpOptions>(), context }),
      ),
    );

  mcp
    .command('http')
    .description(
      'serve the tools over Streamable HTTP until Ctrl-C; each request acts for the caller of its bearer token ' +
        '(toolgate mcp token) and the MCP session is the toolgate session',
    )
    .option('--host <address>', 'the address to listen on (default: config mcp.host, else 127.0.0.1)')
    .option(
      '--port <n>',
      `the port (default: config mcp.port, else ${defaultMcpPort}; 0 for a free one)`,
      parsePort,
    )
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        httpCommand({ options: command.optsWithGlobals<HttpOptions>(), context }),
      ),
    );

  mcp
    .command('token')
    .description('create a bearer token for --caller; it is printed once, and only its SHA-256 is kept')
    .option('--label <text>', 'what the token is for, shown by `mcp tokens`')
    .option(
      '--on-behalf-of <end user>',
      "the end user every call with the token acts for (one customer's client)",
    )
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        tokenCommand({ options: command.optsWithGlobals<TokenOptions>(), output: context.output }),
      ),
    );

  mcp
    .command('tokens')
    .description('list the MCP tokens: caller, label, created, hash prefix (never the token)')
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        tokensCommand({ options: command.optsWithGlobals<McpOptions>(), output: context.output }),
      ),
    );

  mcp
    .command('revoke')
    .description('revoke the MCP token whose hash starts with <hash-prefix> (as `mcp tokens` shows it)')
    .argument('<hash-prefix>', 'the start of the token hash, at least 6 hex digits')
    .action(
      commandAction(context, (hashPrefix: string, _options: unknown, command: Command) =>
        revokeCommand({ hashPrefix, options: command.optsWithGlobals<McpOptions>(), output: context.output }),
      ),
    );
}

/** `toolgate mcp --caller X`: an MCP server on this process's stdin and stdout until the client closes it. */
async function stdioCommand(input: { options: McpOptions; context: CliContext }): Promise<number> {
  const { options, context } = input;
  const { output } = context;
  const { caller } = options;
  if (caller === undefined) {
    output.error(
      'toolgate mcp: --caller <name> is required: the caller every call is made for, as named in your policy ' +
        '(or run `toolgate mcp http` to serve callers by bearer token)',
    );
    return 2;
  }
  const config = configOf(options);
  const policy = policyOf(config);
  const problem = callerProblem({ config, policy, caller, needsKey: true });
  if (problem) {
    output.error(problem);
    return 2;
  }
  const session = options.session ?? `mcp-${randomUUID()}`;
  return withClient(
    options,
    async (client, { settings }) => {
      const server = createToolGateMcpServer({
        client,
        caller,
        session,
        log: (line) => output.error(line),
      });
      const closed = untilStopped({ signal: context.signal, stdin: true });
      server.onclose = closed.close;
      // The transport reads stdin and writes stdout; nothing else of this process may write there.
      // A batch is split into its messages, each answered on its own, as over HTTP.
      const stdin = splittingBatches({ stdin: process.stdin, refuse: (line) => process.stdout.write(line) });
      await server.connect(new StdioServerTransport(stdin, process.stdout));
      output.error(
        `toolgate MCP server on stdio: caller ${caller}, session ${session}, ` +
          `Temporal at ${settings.address} (namespace ${settings.namespace}, task queue ${settings.taskQueue})`,
      );
      await closed.promise;
      await server.close();
      return 0;
    },
    { config, policy },
  );
}

/** `toolgate mcp http`: the Streamable HTTP server, up until Ctrl-C. */
async function httpCommand(input: { options: HttpOptions; context: CliContext }): Promise<number> {
  const { options, context } = input;
  const { output } = context;
  if (options.caller !== undefined || options.session !== undefined) {
    output.error(
      'toolgate mcp http: each request acts for the caller of its bearer token, in its own MCP session; ' +
        'drop --caller and --session (create a token with `toolgate mcp token --caller NAME`)',
    );
    return 2;
  }
  const config = configOf(options);
  const policy = policyOf(config);
  const tokensPath = config.mcp.tokensPath;
  const host = options.host ?? config.mcp.host ?? '127.0.0.1';
  const port = options.port ?? config.mcp.port ?? defaultMcpPort;
  return withClient(
    options,
    async (client) => {
      let server: McpHttpServer;
      try {
        server = await startMcpHttpServer({
          client,
          tokens: mcpTokenVerifier({ path: tokensPath }),
          // Every caller's tools are checked at start-up: a schema MCP cannot carry fails here, not later.
          callers: Object.keys(policy.file.callers),
          host,
          port,
          ...(config.mcp.allowedOrigins ? { allowedOrigins: config.mcp.allowedOrigins } : {}),
          log: (line) => output.error(line),
        });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'EADDRINUSE' && code !== 'EADDRNOTAVAIL' && code !== 'EACCES') throw error;
        output.error(
          `toolgate mcp http: cannot listen on ${authorityOf({ host, port })} (${code}); pass --port or --host`,
        );
        return 2;
      }
      try {
        output.out(`toolgate MCP server (Streamable HTTP) at ${server.url}`);
        const tokens = listMcpTokens({ path: tokensPath });
        output.error(
          tokens.length
            ? `tokens from ${tokensPath}: ${tokens.length} (callers: ${[...new Set(tokens.map((token) => token.caller))].join(', ')})`
            : `no tokens in ${tokensPath} yet: create one with \`toolgate mcp token --caller NAME\``,
        );
        await untilStopped({ signal: context.signal }).promise;
        output.error('stopping the MCP server');
      } finally {
        await server.stop();
      }
      return 0;
    },
    { config, policy },
  );
}

/** `toolgate mcp token --caller X`: a new token, printed once with how to use it. */
function tokenCommand(input: { options: TokenOptions; output: CliOutput }): number {
  const { options, output } = input;
  if (options.caller === undefined) {
    output.error(
      'toolgate mcp token: --caller <name> is required: the caller the token acts for, as named in your policy',
    );
    return 2;
  }
  const config = configOf(options);
  const problem = callerProblem({
    config,
    policy: policyOf(config),
    caller: options.caller,
    needsKey: false,
  });
  if (problem) {
    output.error(problem);
    return 2;
  }
  const { token, record } = createMcpToken({
    path: config.mcp.tokensPath,
    caller: options.caller,
    ...(options.label !== undefined ? { label: options.label } : {}),
    ...(options.onBehalfOf !== undefined ? { onBehalfOf: options.onBehalfOf } : {}),
  });
  if (options.json) {
    output.out(JSON.stringify({ token, ...record }));
    return 0;
  }
  const url = `http://${authorityOf({ host: config.mcp.host ?? '127.0.0.1', port: config.mcp.port ?? defaultMcpPort })}/mcp`;
  output.out(
    [
      `MCP token for ${record.caller}${record.label !== undefined ? ` (${record.label})` : ''}, shown only now:`,
      '',
      `  ${token}`,
      '',
      `Only its SHA-256 (${record.hash.slice(0, shownHashDigits)}...) is kept, in ${config.mcp.tokensPath}.`,
      'Send it as a bearer token to `toolgate mcp http`, e.g.:',
      `  claude mcp add --transport http toolgate ${url} --header "Authorization: Bearer ${token}"`,
      `Revoke it with: toolgate mcp revoke ${record.hash.slice(0, shownHashDigits)}`,
    ].join('\n'),
  );
  return 0;
}

/** `toolgate mcp tokens`: what the tokens file holds, never a token. */
function tokensCommand(input: { options: McpOptions; output: CliOutput }): number {
  const { options, output } = input;
  const config = configOf(options);
  const tokens = listMcpTokens({ path: config.mcp.tokensPath });
  if (options.json) {
    output.out(JSON.stringify(tokens.map(listed)));
    return 0;
  }
  if (!tokens.length) {
    output.out(
      `no MCP tokens in ${config.mcp.tokensPath}; create one with \`toolgate mcp token --caller NAME\``,
    );
    return 0;
  }
  const rows = [
    ['CALLER', 'LABEL', 'CREATED', 'HASH'],
    ...tokens.map((token) => Object.values(listed(token))),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  for (const row of rows) {
    output.out(
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    );
  }
  return 0;
}

/** `toolgate mcp revoke <hash-prefix>`: exit 0 revoked, 1 no such token, 2 a prefix that names several. */
function revokeCommand(input: { hashPrefix: string; options: McpOptions; output: CliOutput }): number {
  const { hashPrefix, options, output } = input;
  if (!/^[0-9a-f]{6,64}$/i.test(hashPrefix)) {
    output.error(
      'toolgate mcp revoke: <hash-prefix> is 6 to 64 hex digits of a token hash, as `toolgate mcp tokens` shows it',
    );
    return 2;
  }
  const config = configOf(options);
  const revocation = revokeMcpToken({ path: config.mcp.tokensPath, hashPrefix });
  if (revocation.ok) {
    const { revoked } = revocation;
    output.out(
      `revoked the MCP token ${revoked.hash.slice(0, shownHashDigits)} of ${revoked.caller}` +
        `${revoked.label !== undefined ? ` (${revoked.label})` : ''}; a running server refuses it from its next request`,
    );
    return 0;
  }
  if (revocation.reason === 'NOT_FOUND') {
    output.error(`no MCP token's hash starts with ${hashPrefix}; \`toolgate mcp tokens\` lists them`);
    return 1;
  }
  output.error(
    `${revocation.matches.length} tokens' hashes start with ${hashPrefix}; give more digits: ` +
      revocation.matches.map((match) => match.hash.slice(0, shownHashDigits)).join(', '),
  );
  return 2;
}

/** A token as the list shows it. */
function listed(token: McpTokenRecord): { caller: string; label: string; createdAt: string; hash: string } {
  return {
    caller: token.caller,
    label: token.label ?? '',
    createdAt: token.createdAt,
    hash: token.hash.slice(0, shownHashDigits),
  };
}

function policyOf(config: LoadedConfig): LoadedPolicy {
  const registry = createToolRegistry({ tools: config.tools });
  return loadPolicyFile({ path: config.policyPath, registry, keysDirectory: config.keysDirectory });
}

/** What stops `caller` from being served, said with its fix; undefined when nothing does. */
function callerProblem(input: {
  config: LoadedConfig;
  policy: LoadedPolicy;
  caller: string;
  needsKey: boolean;
}): string | undefined {
  const { config, policy, caller } = input;
  if (!policy.callerPolicy(caller)) {
    const known = Object.keys(policy.file.callers);
    return (
      `caller "${caller}" is not in the policy ${config.policyPath}: add it under "callers" there, ` +
      `or use one of: ${known.join(', ') || '(none)'}`
    );
  }
  if (input.needsKey && !privateKeyOf({ config, owner: { kind: 'caller', name: caller } })) {
    const path = keyPaths({
      directory: config.keysDirectory,
      owner: { kind: 'caller', name: caller },
    }).privateKey;
    return `no private key for caller "${caller}" at ${path}: create one with \`toolgate keys generate --caller ${caller}\``;
  }
  return undefined;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new InvalidArgumentError('a port is a whole number from 0 (a free one) to 65535.');
  }
  return port;
}
