// What one token holder can take from the MCP server over HTTP is bounded: a batch cannot open a
// session (and is never scanned), and open sessions are capped per token and in all. A recording
// fake client stands in for toolgate: nothing here reaches a worker.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolGateClient, ToolResult } from 'toolgate';
import type { McpHttpServer } from 'toolgate/mcp';
import { createMcpToken, mcpTokenVerifier, startMcpHttpServer } from 'toolgate/mcp';

/** The proposals the fake client received: none may come from a refused request. */
const proposed: { caller: string; session: string; tool: string }[] = [];
const recordingClient = {
  tool: () => undefined,
  toolsFor: () => [],
  call: async (input: { caller: string; session: string; tool: string }): Promise<ToolResult> => {
    proposed.push({ caller: input.caller, session: input.session, tool: input.tool });
    return { ok: true, tool: input.tool, code: 'OK', message: 'done', effect: 'none', callId: 'tc-fake' };
  },
} as unknown as ToolGateClient;

let directory: string;
let tokensPath: string;
let server: McpHttpServer;
const serverLog: string[] = [];
const holders: Record<'alice' | 'bob' | 'carol', string> = { alice: '', bob: '', carol: '' };

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'toolgate-mcp-limits-'));
  tokensPath = join(directory, 'mcp-tokens.json');
  for (const holder of Object.keys(holders) as (keyof typeof holders)[]) {
    holders[holder] = createMcpToken({ path: tokensPath, caller: 'support-bot', label: holder }).token;
  }
  server = await startMcpHttpServer({
    client: recordingClient,
    tokens: mcpTokenVerifier({ path: tokensPath }),
    port: 0,
    maxSessionsPerToken: 3,
    maxSessions: 5,
    log: (line) => serverLog.push(line),
  });
});

afterAll(async () => {
  await server?.stop();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'limits-test', version: '1' },
  },
};

/** A raw POST with `token` (and a session, when given); the body as text when it is a string. */
async function post(input: { token: string; body: unknown; session?: string }) {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${input.token}`,
      ...(input.session !== undefined
        ? { 'mcp-session-id': input.session, 'mcp-protocol-version': '2025-06-18' }
        : {}),
    },
    body: typeof input.body === 'string' ? input.body : JSON.stringify(input.body),
  });
  return {
    status: response.status,
    session: response.headers.get('mcp-session-id'),
    text: await response.text(),
  };
}

/** Opens an MCP session with `token`: its id, or the refusal. */
async function open(token: string): Promise<{ status: number; session: string | null; text: string }> {
  return post({ token, body: initialize });
}

async function end(session: string, token: string): Promise<number> {
  const response = await fetch(server.url, {
    method: 'DELETE',
    headers: {
      Authorization: `Bearer ${token}`,
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-06-18',
    },
  });
  return response.status;
}

describe('a request that opens a session', () => {
  it('answers a 4 MB JSON array with 400 at once, without scanning it', async () => {
    const size = 4 * 1024 * 1024 - 16;
    const batch = `  [${Array(Math.floor(size / 3))
      .fill('{}')
      .join(',')}]`;
    const stall = monitorEventLoopDelay({ resolution: 10 });
    stall.enable();
    const started = Date.now();
    const answer = await post({ token: holders.alice, body: batch });
    const elapsed = Date.now() - started;
    stall.disable();
    expect(answer.status).toBe(400);
    const refusal = JSON.parse(answer.text) as {
      jsonrpc: string;
      id: unknown;
      error: { code: number; message: string };
    };
    expect(refusal).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    expect(refusal.error.message).toContain('send the initialize request alone');
    // Scanning it element by element stalled this process (the server's) for seconds.
    expect(Math.round(stall.max / 1e6)).toBeLessThan(500);
    expect(elapsed).toBeLessThan(3_000);
  });

  it('refuses a batch even when it holds an initialize, and opens no session', async () => {
    const answer = await post({ token: holders.alice, body: [initialize] });
    expect(answer.status).toBe(400);
    expect(answer.session).toBeNull();
    expect(serverLog.filter((line) => line.includes('opened for'))).toEqual([]);
  });
});

describe('open sessions', () => {
  it('caps the sessions one token may open (429 with what to do), and opens one again after a DELETE', async () => {
    const opened: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const answer = await open(holders.alice);
      expect(answer.status).toBe(200);
      opened.push(answer.session!);
    }
    const refused = await open(holders.alice);
    expect(refused.status).toBe(429);
    expect(refused.session).toBeNull();
    const error = (JSON.parse(refused.text) as { id: unknown; error: { code: number; message: string } })
      .error;
    expect(JSON.parse(refused.text)).toMatchObject({ jsonrpc: '2.0', id: 1 });
    expect(error.message).toContain('Too many MCP sessions open for this token (at most 3)');
    expect(error.message).toContain('an HTTP DELETE with their Mcp-Session-Id header');
    expect(error.message).toContain('or wait');

    // Another token is not held back by this one's sessions.
    const bobs = await open(holders.bob);
    expect(bobs.status).toBe(200);

    expect(await end(opened[0]!, holders.alice)).toBe(200);
    const again = await open(holders.alice);
    expect(again.status).toBe(200);
    expect(again.session).not.toBe(opened[0]);
    for (const session of [...opened.slice(1), again.session!])
      expect(await end(session, holders.alice)).toBe(200);
    expect(await end(bobs.session!, holders.bob)).toBe(200);
  });

  it('caps the sessions open on the server in all, and counts initializes still in flight', async () => {
    // Five at once from two tokens: the cap holds even though none has finished opening when the next arrives.
    const answers = await Promise.all([
      ...Array.from({ length: 6 }, () => open(holders.bob)),
      ...Array.from({ length: 3 }, () => open(holders.carol)),
    ]);
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(4);
    const bobsOpen = answers.slice(0, 6).filter((answer) => answer.status === 200);
    expect(bobsOpen.length).toBeLessThanOrEqual(3);
    // The server is full: even a token with no session gets 429, saying so.
    const full = await open(holders.alice);
    expect(full.status).toBe(429);
    expect(full.text).toContain('Too many MCP sessions open on this server (at most 5)');
    for (const answer of answers.slice(0, 6)) if (answer.session) await end(answer.session, holders.bob);
    for (const answer of answers.slice(6)) if (answer.session) await end(answer.session, holders.carol);
    expect((await open(holders.alice)).status).toBe(200);
    expect(proposed).toEqual([]);
  });
});
