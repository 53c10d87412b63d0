// `toolgate mcp token | tokens | revoke | http`, run in-process as the CLI tests do, against the real
// harness: a token made by the CLI opens an MCP session on the server the CLI started.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from 'toolgate';
import { mcpTokenHash } from 'toolgate/mcp';
import { acceptsConnections } from '../support/accepts-connections';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import { callTool } from './mcp-test-support';

let harness: ToolGateHarness;
let directory: string;
let tokensPath: string;

beforeAll(async () => {
  harness = await startHarness({ address: temporalAddress() });
  directory = mkdtempSync(join(tmpdir(), 'toolgate-mcp-cli-'));
  tokensPath = join(directory, 'mcp-tokens.json');
  process.env.TOOLGATE_TEST_POLICY = harness.policyPath;
  process.env.TOOLGATE_TEST_KEYS = harness.keysDirectory;
  process.env.TOOLGATE_TEST_AUDIT = join(directory, 'cli-audit.sqlite');
  process.env.TOOLGATE_TEST_MCP_TOKENS = tokensPath;
});

afterAll(async () => {
  await harness?.stop();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

/** Runs the CLI in-process with the MCP test config and the harness's Temporal. */
async function run(argv: string[], options: { signal?: AbortSignal; onOut?: (text: string) => void } = {}) {
  let out = '';
  let error = '';
  const common = ['--config', join(__dirname, 'mcp-test.config.ts'), '--address', temporalAddress()];
  const code = await runCli(
    [...argv, ...common, '--task-queue', harness.taskQueue],
    {
      out: (text) => {
        out += `${text}\n`;
        options.onOut?.(text);
      },
      error: (text) => (error += `${text}\n`),
    },
    options.signal ? { signal: options.signal } : {},
  );
  return { code, out, error };
}

describe('toolgate mcp token, tokens and revoke', () => {
  it('creates a token shown once with how to use it, keeps only its hash, lists and revokes it', async () => {
    const created = await run(['mcp', 'token', '--caller', 'support-bot', '--label', 'laptop']);
    expect(created.code).toBe(0);
    const token = /(tgmcp_[A-Za-z0-9_-]{43})/.exec(created.out)?.[1];
    expect(token).toBeDefined();
    expect(created.out).toContain(`--header "Authorization: Bearer ${token}"`);
    const hash = mcpTokenHash(token!);
    expect(readFileSync(tokensPath, 'utf8')).not.toContain(token);
    expect(readFileSync(tokensPath, 'utf8')).toContain(hash);

    const listed = await run(['mcp', 'tokens']);
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(new RegExp(`support-bot\\s+laptop\\s+\\S+\\s+${hash.slice(0, 12)}`));
    expect(listed.out).not.toContain(token);
    const json = await run(['mcp', 'tokens', '--json']);
    const rows = JSON.parse(json.out) as Record<string, string>[];
    expect(rows).toEqual([
      { caller: 'support-bot', label: 'laptop', createdAt: rows[0]?.createdAt, hash: hash.slice(0, 12) },
    ]);
    expect(Date.parse(rows[0]!.createdAt!)).toBeGreaterThan(Date.now() - 60_000);

    expect(await run(['mcp', 'revoke', hash.slice(0, 10)])).toMatchObject({ code: 0 });
    const again = await run(['mcp', 'revoke', hash.slice(0, 10)]);
    expect(again.code).toBe(1);
    expect(again.error).toContain('`toolgate mcp tokens` lists them');
    expect(await run(['mcp', 'revoke', 'xyz'])).toMatchObject({ code: 2 });
  });

  it('refuses a token for a caller the policy does not name, with exit 2 and the fix', async () => {
    const refused = await run(['mcp', 'token', '--caller', 'nobody-bot']);
    expect(refused.code).toBe(2);
    expect(refused.error).toContain('caller "nobody-bot" is not in the policy');
    expect(refused.error).toContain('add it under "callers" there');
    expect((await run(['mcp', 'token'])).code).toBe(2);
  });
});

describe('toolgate mcp http', () => {
  it('serves a token made by the CLI until it is stopped, then frees its port', async () => {
    const created = await run(['mcp', 'token', '--caller', 'readonly-bot', '--json']);
    const { token } = JSON.parse(created.out) as { token: string };
    const stop = new AbortController();
    let announced: (url: string) => void = () => undefined;
    const url = new Promise<string>((resolve) => (announced = resolve));
    const serving = run(['mcp', 'http', '--port', '0'], {
      signal: stop.signal,
      onOut: (text) => {
        const found = /at (http:\/\/\S+)/.exec(text)?.[1];
        if (found) announced(found);
      },
    });
    const endpoint = await url;
    expect(endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const client = new McpClient({ name: 'toolgate-cli-test', version: '1.0.0' });
    await client.connect(transport);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
      'get_order',
      'toolgate_call_status',
    ]);
    const read = await callTool(client, 'get_order', { order_id: 'ORD-1002' });
    expect(read.result).toMatchObject({ ok: true, data: { order_id: 'ORD-1002', currency: 'USD' } });

    stop.abort();
    const finished = await serving;
    expect(finished.code).toBe(0);
    expect(finished.error).toContain(`MCP session ${transport.sessionId} opened for readonly-bot`);
    expect(await acceptsConnections(new URL(endpoint).host)).toBe(false);
    await client.close();
  });

  it('exits 2 for --caller (over HTTP the token names the caller) and for a port already taken', async () => {
    const refused = await run(['mcp', 'http', '--caller', 'support-bot']);
    expect(refused.code).toBe(2);
    expect(refused.error).toContain('drop --caller and --session');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = String((taken.address() as AddressInfo).port);
      const busy = await run(['mcp', 'http', '--port', port]);
      expect(busy.code).toBe(2);
      expect(busy.error).toContain(`cannot listen on 127.0.0.1:${port} (EADDRINUSE); pass --port or --host`);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
