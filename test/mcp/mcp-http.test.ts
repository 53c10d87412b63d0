// The MCP server over Streamable HTTP, spoken to by the official MCP client and by raw requests,
// against the real harness: tokens name the caller, the MCP session is the toolgate session, and a
// request without a known token, from a foreign origin or host, or into a session another token
// opened (even one of the same caller, even after its own token was revoked) runs nothing.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpHttpServer } from 'toolgate/mcp';
import {
  createMcpToken,
  mcpTokenHash,
  mcpTokenVerifier,
  revokeMcpToken,
  startMcpHttpServer,
} from 'toolgate/mcp';
import { acceptsConnections } from '../support/accepts-connections';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import type { McpConnection } from './governed-tool-scenarios';
import { governedToolScenarios } from './governed-tool-scenarios';
import { callAttributes, callTool, refundArguments } from './mcp-test-support';

let harness: ToolGateHarness;
let server: McpHttpServer;
let directory: string;
let tokensPath: string;
/** A token per caller, and `other-support-bot`: a second holder of a support-bot token (another laptop, a CI job). */
const tokens: Record<'support-bot' | 'readonly-bot' | 'other-support-bot', string> = {
  'support-bot': '',
  'readonly-bot': '',
  'other-support-bot': '',
};
const connections = new Map<string, McpConnection & { transport: StreamableHTTPClientTransport }>();
const serverLog: string[] = [];

/** Connects the official MCP client with a bearer token; the MCP session id is the toolgate session. */
async function connectHttp(
  token: string,
): Promise<McpConnection & { transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new McpClient({ name: 'toolgate-http-test', version: '1.0.0' });
  await client.connect(transport);
  expect(transport.sessionId).toMatch(/^mcp-[0-9a-f-]{36}$/);
  return { client, transport, session: transport.sessionId! };
}

beforeAll(async () => {
  harness = await startHarness({ address: temporalAddress() });
  directory = mkdtempSync(join(tmpdir(), 'toolgate-mcp-http-'));
  tokensPath = join(directory, 'mcp-tokens.json');
  tokens['support-bot'] = createMcpToken({ path: tokensPath, caller: 'support-bot', label: 'test' }).token;
  tokens['readonly-bot'] = createMcpToken({ path: tokensPath, caller: 'readonly-bot' }).token;
  tokens['other-support-bot'] = createMcpToken({
    path: tokensPath,
    caller: 'support-bot',
    label: 'CI',
  }).token;
  server = await startMcpHttpServer({
    client: harness.client,
    tokens: mcpTokenVerifier({ path: tokensPath }),
    callers: Object.keys(
      (JSON.parse(readFileSync(harness.policyPath, 'utf8')) as { callers: Record<string, unknown> }).callers,
    ),
    port: 0,
    log: (line) => serverLog.push(line),
  });
  connections.set('support-bot', await connectHttp(tokens['support-bot']));
  connections.set('readonly-bot', await connectHttp(tokens['readonly-bot']));
});

afterAll(async () => {
  for (const connection of connections.values()) await connection.client.close();
  await server?.stop();
  await harness?.stop();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

/** A raw DELETE of a session (how a client ends it), with `token`. */
async function deleteSession(session: string, token: string): Promise<Response> {
  return fetch(server.url, {
    method: 'DELETE',
    headers: {
      Authorization: `Bearer ${token}`,
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-06-18',
    },
  });
}

/** Resolves once the server's log has a line containing `text`; fails after `ms`. */
async function logLine(text: string, ms: number): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const line = serverLog.find((entry) => entry.includes(text));
    if (line !== undefined) return line;
    if (Date.now() > deadline) throw new Error(`no log line with ${JSON.stringify(text)} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A raw JSON-RPC POST to the endpoint, with exactly the headers given (plus the content types MCP asks for). */
async function post(headers: Record<string, string>, body: unknown): Promise<Response> {
  return fetch(server.url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

/** A tools/call of a refund, as a client inside `session` would send it. */
function refundCall(session: string) {
  return {
    headers: { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
    body: {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'refund_order', arguments: refundArguments(harness, { amount_cents: 1234 }) },
    },
  };
}

/** What a refund of 1234 cents proposed in `session` by support-bot would be: its call id, which must never exist. */
function refundCallId(session: string): string {
  return harness.client.callIdOf({
    session,
    caller: 'support-bot',
    tool: 'refund_order',
    arguments: refundArguments(harness, { amount_cents: 1234 }),
  });
}

/** The session's steps and the service's refunds now, to show later that nothing ran since. */
async function snapshot(session: string): Promise<{ steps: number; refunds: number }> {
  return {
    steps: (await harness.client.sessionStats(session)).steps,
    refunds: await harness.orders.api.refundCount(),
  };
}

/** Asserts that nothing ran: no call workflow for the refund, no new step in the session, no new refund. */
async function expectNothingRanSince(
  session: string,
  before: { steps: number; refunds: number },
): Promise<void> {
  expect(await callAttributes(harness, refundCallId(session))).toBeUndefined();
  expect(await snapshot(session)).toEqual(before);
}

describe('toolgate MCP over Streamable HTTP', () => {
  governedToolScenarios({ harness: () => harness, connection: (caller) => connections.get(caller)! });

  it("acts for its token's end user only: another customer's order is ORDER_NOT_OWNED, the bound field is never listed", async () => {
    const token = createMcpToken({ path: tokensPath, caller: 'support-bot', onBehalfOf: 'CUS-1' }).token;
    const customer = await connectHttp(token);
    try {
      const listed = await customer.client.listTools();
      expect(JSON.stringify(listed.tools)).not.toContain('customer_id');
      const own = await callTool(customer.client, 'get_order', { order_id: 'ORD-1001' });
      expect(own.result).toMatchObject({ code: 'OK', data: { customer_id: 'CUS-1' } });
      const before = await harness.orders.api.refundCount();
      const other = await callTool(customer.client, 'refund_order', {
        order_id: 'ORD-1002',
        amount_cents: 4500,
        currency: 'USD',
        reason: 'customer_request',
      });
      expect(other).toMatchObject({ isError: true, result: { code: 'ORDER_NOT_OWNED', effect: 'none' } });
      // Refused by code before any approval round: no approver is ever asked.
      expect((await harness.admin.show(String(other.result.callId)))?.approval).toBeUndefined();
      expect((await harness.admin.pending()).map((call) => call.callId)).not.toContain(other.result.callId);
      // The client cannot name another end user either: the field is the host's.
      const named = await callTool(customer.client, 'get_order', {
        order_id: 'ORD-1002',
        customer_id: 'CUS-2',
      });
      expect(named.result).toMatchObject({ code: 'BOUND_PARAMETER_SENT' });
      expect(await harness.orders.api.refundCount()).toBe(before);
      expect((await harness.client.sessionStats(customer.session)).context).toEqual({ onBehalfOf: 'CUS-1' });
    } finally {
      await customer.client.close();
    }
  });

  it("answers toolgate_call_status only for its own end user's calls: another customer's is CALL_NOT_FOUND", async () => {
    const cus2 = await connectHttp(
      createMcpToken({ path: tokensPath, caller: 'support-bot', onBehalfOf: 'CUS-2' }).token,
    );
    const cus1 = await connectHttp(
      createMcpToken({ path: tokensPath, caller: 'support-bot', onBehalfOf: 'CUS-1' }).token,
    );
    try {
      // CUS-2 reads its own order, note and all.
      const read = await callTool(cus2.client, 'get_order', { order_id: 'ORD-1002' });
      expect(read.result).toMatchObject({ code: 'OK', data: { customer_id: 'CUS-2' } });
      const callId = String(read.result.callId);
      expect((await callTool(cus2.client, 'toolgate_call_status', { call_id: callId })).result).toMatchObject(
        {
          code: 'OK',
          data: { customer_id: 'CUS-2' },
        },
      );
      // The same caller's token for CUS-1, with the call id in hand (a log, a transcript): nothing of it.
      const probed = await callTool(cus1.client, 'toolgate_call_status', { call_id: callId });
      expect(probed.result).toMatchObject({ ok: false, code: 'CALL_NOT_FOUND' });
      expect(JSON.stringify(probed)).not.toContain('CUS-2');
    } finally {
      await cus1.client.close();
      await cus2.client.close();
    }
  });

  it("uses the MCP session id as the toolgate session, owned by the token's caller", async () => {
    const support = connections.get('support-bot')!;
    const read = await callTool(support.client, 'get_order', { order_id: 'ORD-1003' });
    expect(await callAttributes(harness, read.result.callId)).toEqual({
      caller: 'support-bot',
      session: support.transport.sessionId,
    });
    expect(await harness.client.sessionStats(support.session)).toMatchObject({
      session: support.session,
      caller: 'support-bot',
    });
    // Two connections of one caller are two sessions: each MCP session is one conversation.
    expect(connections.get('readonly-bot')!.session).not.toBe(support.session);
  });

  it('refuses a request without a token, or with an unknown one, with 401 and runs nothing', async () => {
    const { session } = connections.get('support-bot')!;
    const before = await snapshot(session);
    const { headers, body } = refundCall(session);

    const missing = await post(headers, body);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer /);
    const wrong = await post({ ...headers, Authorization: `Bearer tgmcp_${'A'.repeat(43)}` }, body);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const notBearer = await post({ ...headers, Authorization: `Basic ${tokens['support-bot']}` }, body);
    expect(notBearer.status).toBe(401);
    await expectNothingRanSince(session, before);
  });

  it('refuses a foreign Origin and a foreign Host with 403, even with a good token, and runs nothing', async () => {
    const { session } = connections.get('support-bot')!;
    const before = await snapshot(session);
    const { headers, body } = refundCall(session);
    const authorized = { ...headers, Authorization: `Bearer ${tokens['support-bot']}` };

    const foreign = await post({ ...authorized, Origin: 'http://evil.example' }, body);
    expect(foreign.status).toBe(403);
    // A DNS-rebinding page reaches 127.0.0.1 under its own name: the Host says so.
    const rebound = await rawPost({ ...authorized, Host: `evil.example:${new URL(server.url).port}` }, body);
    expect(rebound.status).toBe(403);
    await expectNothingRanSince(session, before);

    // The server's own origin is allowed, and gets what a browser needs to read the answer.
    const own = await post(
      { ...authorized, Origin: new URL(server.url).origin },
      {
        jsonrpc: '2.0',
        id: 8,
        method: 'tools/list',
      },
    );
    expect(own.status).toBe(200);
    expect(own.headers.get('access-control-allow-origin')).toBe(new URL(server.url).origin);
  });

  it("answers 404 to another caller's token in a session, and runs nothing", async () => {
    const { session } = connections.get('support-bot')!;
    const before = await snapshot(session);
    const { headers, body } = refundCall(session);
    const hijack = await post({ ...headers, Authorization: `Bearer ${tokens['readonly-bot']}` }, body);
    expect(hijack.status).toBe(404);
    await expectNothingRanSince(session, before);
    const made = await post(
      { ...headers, 'mcp-session-id': 'mcp-made-up', Authorization: `Bearer ${tokens['support-bot']}` },
      body,
    );
    expect(made.status).toBe(404);
  });

  it('answers 404 to another token of the same caller in a session, for tools/call and DELETE, and runs nothing', async () => {
    const support = connections.get('support-bot')!;
    const { session } = support;
    const before = await snapshot(session);
    const { headers, body } = refundCall(session);
    const other = { ...headers, Authorization: `Bearer ${tokens['other-support-bot']}` };

    // The same caller, but not the token that opened the session: as unknown as a made-up session.
    const hijack = await post(other, body);
    expect(hijack.status).toBe(404);
    expect(await hijack.json()).toMatchObject({ error: { code: -32001, message: 'Session not found' } });
    expect((await post(other, { jsonrpc: '2.0', id: 11, method: 'tools/list' })).status).toBe(404);
    expect((await deleteSession(session, tokens['other-support-bot'])).status).toBe(404);
    // No workflow for the refund the hijack would have proposed (support-bot, this session, its
    // arguments), no step in the session, no refund.
    await expectNothingRanSince(session, before);

    // The session is its opener's still: the DELETE ended nothing.
    const own = await post(
      { ...headers, Authorization: `Bearer ${tokens['support-bot']}` },
      { jsonrpc: '2.0', id: 12, method: 'tools/list' },
    );
    expect(own.status).toBe(200);
    expect((await callTool(support.client, 'get_order', { order_id: 'ORD-1002' })).result.ok).toBe(true);
  });

  it('refuses and closes a session once the token that opened it is revoked, whatever token comes next', async () => {
    const opener = createMcpToken({ path: tokensPath, caller: 'support-bot', label: 'leaked' });
    const connection = await connectHttp(opener.token);
    expect((await callTool(connection.client, 'get_order', { order_id: 'ORD-1001' })).result.ok).toBe(true);
    const { session } = connection;
    const before = await snapshot(session);
    revokeMcpToken({ path: tokensPath, hashPrefix: opener.record.hash });

    const { headers, body } = refundCall(session);
    // The revoked token itself: 401.
    expect((await post({ ...headers, Authorization: `Bearer ${opener.token}` }, body)).status).toBe(401);
    // Another support-bot token cannot pick the session up: 404, for a call and for a DELETE.
    expect(
      (await post({ ...headers, Authorization: `Bearer ${tokens['other-support-bot']}` }, body)).status,
    ).toBe(404);
    expect((await deleteSession(session, tokens['other-support-bot'])).status).toBe(404);
    await expectNothingRanSince(session, before);
    expect(
      await logLine(`MCP session ${session} closed: its token ${opener.record.hash.slice(0, 12)}`, 1_000),
    ).toContain('was revoked');
    await connection.client.close();
  });

  it('closes the sessions of a revoked token by itself, without waiting for their next request', async () => {
    const opener = createMcpToken({ path: tokensPath, caller: 'readonly-bot', label: 'revoked while idle' });
    // A bare initialize, and nothing after it: no request of the session can be what closes it.
    const opened = await post(
      { Authorization: `Bearer ${opener.token}` },
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'idle', version: '1' },
        },
      },
    );
    expect(opened.status).toBe(200);
    const session = opened.headers.get('mcp-session-id')!;
    await opened.text();
    revokeMcpToken({ path: tokensPath, hashPrefix: opener.record.hash });
    // The server looks for them every 5 s.
    const closed = await logLine(
      `MCP session ${session} closed: its token ${opener.record.hash.slice(0, 12)}`,
      12_000,
    );
    expect(closed).toContain('was revoked');
  });

  it('refuses a revoked token from its next request, and ends the session on DELETE', async () => {
    const token = createMcpToken({ path: tokensPath, caller: 'readonly-bot', label: 'short-lived' });
    const connection = await connectHttp(token.token);
    expect((await callTool(connection.client, 'get_order', { order_id: 'ORD-1002' })).result.ok).toBe(true);
    expect(revokeMcpToken({ path: tokensPath, hashPrefix: token.record.hash.slice(0, 12) })).toMatchObject({
      ok: true,
    });
    const refused = await post(
      {
        'mcp-session-id': connection.session,
        'mcp-protocol-version': '2025-06-18',
        Authorization: `Bearer ${token.token}`,
      },
      { jsonrpc: '2.0', id: 9, method: 'tools/list' },
    );
    expect(refused.status).toBe(401);
    // The refusal is logged with the request and the token's hash, so an operator can tell which
    // revoked token is still in use; never with the token.
    expect(serverLog).toContain(
      `refused POST /mcp: unknown or revoked token (sha256 ${token.record.hash.slice(0, 12)}...) (401)`,
    );

    const second = await connectHttp(tokens['readonly-bot']);
    await second.transport.terminateSession();
    const afterDelete = await post(
      {
        'mcp-session-id': second.session,
        'mcp-protocol-version': '2025-06-18',
        Authorization: `Bearer ${tokens['readonly-bot']}`,
      },
      { jsonrpc: '2.0', id: 10, method: 'tools/list' },
    );
    expect(afterDelete.status).toBe(404);
    await second.client.close();
    await connection.client.close();
    const log = serverLog.join('\n');
    for (const presented of [token.token, ...Object.values(tokens)]) expect(log).not.toContain(presented);
    expect(log).toContain(mcpTokenHash(tokens['readonly-bot']).slice(0, 12));
  });

  it('stops: its sessions closed and its port free', async () => {
    const own = await startMcpHttpServer({
      client: harness.client,
      tokens: mcpTokenVerifier({ path: tokensPath }),
      port: 0,
    });
    const transport = new StreamableHTTPClientTransport(new URL(own.url), {
      requestInit: { headers: { Authorization: `Bearer ${tokens['support-bot']}` } },
    });
    const client = new McpClient({ name: 'toolgate-http-test', version: '1.0.0' });
    await client.connect(transport);
    expect((await client.listTools()).tools).toHaveLength(3);
    await own.stop();
    expect(await acceptsConnections(new URL(own.url).host)).toBe(false);
    await client.close();
  });
});

/** A POST through node:http, which (unlike fetch) lets a test set the Host header. */
function rawPost(headers: Record<string, string>, body: unknown): Promise<{ status: number }> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (response) => {
        response.resume();
        resolve({ status: response.statusCode ?? 0 });
      },
    );
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}
