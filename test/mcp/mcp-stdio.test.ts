// `toolgate mcp --caller X` as an MCP client starts it: a child process running the CLI from source,
// spoken to over stdio by the official MCP client, against the real harness.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { runCli } from 'toolgate';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import type { McpConnection } from './governed-tool-scenarios';
import { governedToolScenarios } from './governed-tool-scenarios';
import { projectRoot } from './mcp-test-support';

const testConfig = join(projectRoot, 'test/support/test-toolgate.config.ts');
let harness: ToolGateHarness;
const connections = new Map<
  string,
  McpConnection & { transport: StdioClientTransport; stderr: () => string }
>();

/** The command line of `toolgate mcp` from source, for `caller` in `session`. */
function stdioArgs(caller: string, session: string): string[] {
  return [
    '--conditions=toolgate-source',
    '--import',
    'tsx',
    'scripts/toolgate-from-source.ts',
    'mcp',
    '--caller',
    caller,
    '--session',
    session,
    '--config',
    testConfig,
    '--address',
    temporalAddress(),
    '--task-queue',
    harness.taskQueue,
  ];
}

/** Starts `toolgate mcp` from source for `caller`, in a session of its own, and connects to it. */
async function connectStdio(
  caller: string,
): Promise<McpConnection & { transport: StdioClientTransport; stderr: () => string }> {
  const session = `mcp-stdio-${randomUUID()}`;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: stdioArgs(caller, session),
    cwd: projectRoot,
    env: { ...(process.env as Record<string, string>) },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new McpClient({ name: 'toolgate-stdio-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, session, transport, stderr: () => stderr };
}

beforeAll(async () => {
  harness = await startHarness({ address: temporalAddress() });
  // The test config reads the running harness's policy, keys and audit store from the environment;
  // the child processes inherit it.
  process.env.TOOLGATE_TEST_POLICY = harness.policyPath;
  process.env.TOOLGATE_TEST_KEYS = harness.keysDirectory;
  process.env.TOOLGATE_TEST_AUDIT = join(harness.keysDirectory, '..', 'cli-audit.sqlite');
  const [support, readonly] = await Promise.all([connectStdio('support-bot'), connectStdio('readonly-bot')]);
  connections.set('support-bot', support);
  connections.set('readonly-bot', readonly);
});

afterAll(async () => {
  for (const connection of connections.values()) await connection.client.close();
  await harness?.stop();
});

describe('toolgate mcp over stdio', () => {
  governedToolScenarios({ harness: () => harness, connection: (caller) => connections.get(caller)! });

  it('writes only the protocol to stdout and says its caller and session on stderr', async () => {
    // A raw exchange, so that every byte the server writes to stdout is seen: an MCP client reading
    // newline-delimited JSON-RPC would choke on a log line there (or skip it, and lose the message).
    const session = `mcp-stdio-${randomUUID()}`;
    const child = spawn(process.execPath, stdioArgs('support-bot', session), {
      cwd: projectRoot,
      env: process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // Whatever happens to the test, the child does not outlive it.
    onTestFinished(() => {
      if (child.exitCode === null) child.kill();
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const answered = (id: number) =>
      new Promise<void>((resolve, reject) => {
        const look = (): void => {
          if (stdout.split('\n').some((line) => line.includes(`"id":${id}`))) {
            child.stdout.off('data', look);
            resolve();
          }
        };
        child.stdout.on('data', look);
        child.once('exit', () => reject(new Error(`exited before answering ${id}; stderr: ${stderr}`)));
      });
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const send = (message: Record<string, unknown>): void => {
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    };
    try {
      send({
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      });
      await answered(1);
      send({ method: 'notifications/initialized' });
      send({ id: 2, method: 'tools/list' });
      // A governed read: the Temporal client and the session's workflow are used, and log nothing to stdout.
      send({
        id: 3,
        method: 'tools/call',
        params: { name: 'get_order', arguments: { order_id: 'ORD-1001' } },
      });
      await Promise.all([answered(2), answered(3)]);
      // A batch: each of its messages is answered on its own line, as over HTTP; an empty one is refused.
      child.stdin.write(
        `${JSON.stringify([4, 5].map((id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_order', arguments: { order_id: 'ORD-1002' } } })))}\n`,
      );
      child.stdin.write('[]\n');
      await Promise.all([answered(4), answered(5), answered(null as unknown as number)]);
    } finally {
      child.stdin.end();
    }
    expect(await exited).toBe(0);

    const lines = stdout.split('\n');
    expect(lines.pop()).toBe(''); // every message ends with a newline
    const messages = lines.map(
      (line) => JSON.parse(line) as { jsonrpc: string; id?: number | null; result?: unknown },
    );
    for (const message of messages) expect(message.jsonrpc).toBe('2.0');
    expect(messages.map((message) => message.id).sort()).toEqual([1, 2, 3, 4, 5, null]);
    const answers = messages.filter((message) => message.id !== null);
    expect(answers.every((message) => message.result !== undefined)).toBe(true);
    expect(messages.find((message) => message.id === null)).toMatchObject({
      error: { code: -32600, message: 'Invalid Request: an empty batch' },
    });
    for (const id of [4, 5]) {
      expect(JSON.stringify(messages.find((message) => message.id === id))).toContain('"code":"OK"');
    }
    expect(JSON.stringify(messages.find((message) => message.id === 3))).toContain('"code":"OK"');
    expect(stderr).toContain(`toolgate MCP server on stdio: caller support-bot, session ${session}`);
  });

  it('exits when the client closes its stdin', async () => {
    const connection = await connectStdio('readonly-bot');
    const pid = connection.transport.pid!;
    expect(isRunning(pid)).toBe(true);
    const closing = Date.now();
    await connection.client.close();
    // The client ends stdin and sends SIGTERM only if the server is still there 2 s later: it left by itself.
    expect(Date.now() - closing).toBeLessThan(2_000);
    expect(isRunning(pid)).toBe(false);
  });

  it('refuses to start for a caller the policy does not name, or without --caller, with exit 2 and the fix', async () => {
    const run = async (...argv: string[]) => {
      let error = '';
      const code = await runCli([...argv, '--config', testConfig, '--address', temporalAddress()], {
        out: () => undefined,
        error: (text) => (error += `${text}\n`),
      });
      return { code, error };
    };
    const unknown = await run('mcp', '--caller', 'nobody-bot');
    expect(unknown.code).toBe(2);
    expect(unknown.error).toContain('caller "nobody-bot" is not in the policy');
    expect(unknown.error).toContain(
      'add it under "callers" there, or use one of: test-refunder, support-bot',
    );
    const missing = await run('mcp');
    expect(missing.code).toBe(2);
    expect(missing.error).toContain('--caller <name> is required');
  });
});

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
