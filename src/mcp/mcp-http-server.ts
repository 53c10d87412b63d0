// The MCP server over Streamable HTTP, on node:http: one SDK transport and one governed server per
// MCP session. Each request is checked before anything runs (Host, Origin, bearer token); the token
// names the caller; the MCP session id is the toolgate session, bound to the token that opened it.
// What one token holder can take is bounded: sessions per token and in all, and the body read to
// open one.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ToolGateClient } from '../client';
import { ConfigurationError } from '../policy/load-policy';
import {
  authorityOf,
  bearerTokenOf,
  defaultAllowedOrigins,
  hostAllowed,
  isLoopbackHost,
  originAllowed,
} from './http-access';
import { checkMcpServable, createToolGateMcpServer } from './mcp-server';
import type { McpTokenPrincipal, McpTokenVerifier } from './mcp-tokens';
import { mcpTokenHash } from './mcp-tokens';

/** Where and for whom the HTTP server runs. */
export interface McpHttpServerOptions {
  client: ToolGateClient;
  /** Who a bearer token stands for: `mcpTokenVerifier({ path })` over a tokens file, or your own. */
  tokens: McpTokenVerifier;
  /**
   * The callers whose tools are checked at start-up (every tool's JSON Schema), so that a schema
   * MCP cannot carry fails now, not at a client's first tools/list: pass the policy's callers,
   * `Object.keys(policy.file.callers)`. Default: none (the policy and the status tool's name are
   * checked all the same).
   */
  callers?: readonly string[];
  /** The address to listen on (default 127.0.0.1: this machine only; elsewhere, put it behind TLS). */
  host?: string;
  /** The port; 0 for a free one (see `url`). */
  port: number;
  /** Origins a browser page may call from (default: this server's own origins). */
  allowedOrigins?: readonly string[];
  /** MCP sessions unused for this long are closed (default 30 minutes, a toolgate session's default idle). */
  idleSessionMs?: number;
  /** The most MCP sessions one token may have open at once (default 16); beyond, 429. */
  maxSessionsPerToken?: number;
  /** The most MCP sessions open at once, all tokens together (default 256); beyond, 429. */
  maxSessions?: number;
  log?: (line: string) => void;
}

/** A running HTTP MCP server. */
export interface McpHttpServer {
  /** The MCP endpoint, e.g. `http://127.0.0.1:4200/mcp`. */
  url: string;
  /** Closes every MCP session and the listener; resolves when no connection is left. */
  stop(): Promise<void>;
}

/** The path the MCP endpoint is served at. */
const endpointPath = '/mcp';
/** The largest request body read to open a session (the SDK's own bound for the requests it reads). */
const maxBodyBytes = 4 * 1024 * 1024;
/** How often idle sessions, and sessions whose token was revoked, are looked for. */
const sweepEveryMs = 5_000;
/** How many hex digits of a token id a log line shows: enough to find it in `toolgate mcp tokens`. */
const shownTokenIdDigits = 12;

interface McpSession {
  transport: StreamableHTTPServerTransport;
  server: Server;
  caller: string;
  /** The token that opened the session: the only one its requests may carry. */
  tokenId: string;
  lastUsedAt: number;
}

/**
 * Starts the MCP server over Streamable HTTP (loopback by default). Checks at start-up what would
 * otherwise fail at a client's first request (`ConfigurationError`). A request without a known token
 * gets 401, one from a foreign origin or host 403, one naming a session its token did not open 404:
 * nothing runs for any of them. A session ends with its token's revocation. Every tools/call goes
 * through toolgate as the token's caller, in the MCP session.
 */
export async function startMcpHttpServer(options: McpHttpServerOptions): Promise<McpHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? ((): void => undefined);
  checkMcpServable({ client: options.client, callers: options.callers ?? [] });
  const maxSessionsPerToken = positiveInteger('maxSessionsPerToken', options.maxSessionsPerToken ?? 16);
  const maxSessions = positiveInteger('maxSessions', options.maxSessions ?? 256);
  const idleSessionMs = positiveInteger('idleSessionMs', options.idleSessionMs ?? 30 * 60_000);
  const sessions = new Map<string, McpSession>();
  /** Sessions being opened (an initialize in flight), per token: counted against the caps too. */
  const opening = new Map<string, number>();
  let allowedOrigins = new Set<string>();

  const closeSession = async (id: string, why: string): Promise<void> => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    log(`MCP session ${id} closed: ${why}`);
    // Closing the server closes its transport (its open streams too).
    await session.server
      .close()
      .catch((error: unknown) => log(`closing MCP session ${id}: ${String(error)}`));
  };
  /** True, and the session closed, when the verifier says its token no longer verifies. */
  const closedForRevocation = (id: string, session: McpSession): boolean => {
    if (options.tokens.isActive?.(session.tokenId) !== false) return false;
    void closeSession(id, `its token ${shortId(session.tokenId)} was revoked`);
    return true;
  };
  const openCount = (tokenId: string): number => {
    let count = opening.get(tokenId) ?? 0;
    for (const session of sessions.values()) if (session.tokenId === tokenId) count += 1;
    return count;
  };
  const openingTotal = (): number => [...opening.values()].reduce((sum, count) => sum + count, 0);

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    // What the log says of a request: never its headers (the token), nor its query.
    const requestLine = `${request.method ?? '?'} ${path}`;
    if (path !== endpointPath) {
      return reply(response, 404, { error: `not found; the MCP endpoint is ${endpointPath}` });
    }
    if (!hostAllowed({ hostHeader: request.headers.host, boundHost: host })) {
      log(`refused ${requestLine} for host ${JSON.stringify(request.headers.host ?? '')} (403)`);
      return reply(response, 403, { error: 'forbidden: this server answers to its loopback names only' });
    }
    const origin = request.headers.origin;
    if (!originAllowed({ origin, allowed: allowedOrigins })) {
      log(`refused ${requestLine} from origin ${JSON.stringify(origin)} (403)`);
      return reply(response, 403, {
        error: 'forbidden: this origin is not allowed (config mcp.allowedOrigins)',
      });
    }
    if (origin !== undefined) allowBrowser({ response, origin });
    // A browser's preflight carries no credentials: it learns what it may send, and nothing runs.
    if (request.method === 'OPTIONS') return reply(response, 204);
    const sessionId = request.headers['mcp-session-id'];
    const named = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    // A session whose token was revoked ends now, whoever asks.
    const session = named && !closedForRevocation(sessionId as string, named) ? named : undefined;
    const token = bearerTokenOf(request.headers.authorization);
    const principal = token !== undefined ? verified(options.tokens, token) : undefined;
    if (!principal) {
      log(
        `refused ${requestLine}: ${
          token === undefined
            ? 'no bearer token'
            : `unknown or revoked token (sha256 ${mcpTokenHash(token).slice(0, shownTokenIdDigits)}...)`
        } (401)`,
      );
      response.setHeader(
        'WWW-Authenticate',
        token === undefined ? 'Bearer realm="toolgate"' : 'Bearer realm="toolgate", error="invalid_token"',
      );
      return reply(response, 401, {
        error:
          'unauthorized: send Authorization: Bearer <token> (toolgate mcp token --caller NAME makes one)',
      });
    }
    if (typeof sessionId === 'string') {
      // A session answers to the token that opened it only: for any other token, even one of the same
      // caller, it is as unknown as one that never existed.
      if (!session || session.tokenId !== principal.tokenId) {
        log(`refused ${requestLine}: no MCP session ${sessionId.slice(0, 64)} for this token (404)`);
        return replyRpcError({ response, status: 404, code: -32001, message: 'Session not found' });
      }
      session.lastUsedAt = Date.now();
      return session.transport.handleRequest(request, response);
    }
    if (request.method !== 'POST') {
      return replyRpcError({
        response,
        status: 400,
        code: -32000,
        message: 'Bad Request: no valid MCP session id; initialize first',
      });
    }
    // An initialize comes alone: a batch is refused before any of it is read as JSON.
    const body = await readJsonBody({ request, refuseBatch: true });
    if (!body.ok) return replyRpcError({ response, ...body });
    if (!isInitializeRequest(body.value)) {
      return replyRpcError({
        response,
        status: 400,
        code: -32000,
        message: 'Bad Request: no valid MCP session id; initialize first',
      });
    }
    const refusal = sessionCapRefusal(principal.tokenId);
    if (refusal) {
      log(`refused ${requestLine} for ${principal.caller}: ${refusal.log} (429)`);
      return replyRpcError({
        response,
        status: 429,
        code: -32000,
        message: refusal.message,
        ...requestIdOf(body.value),
      });
    }
    await openSession({ request, response, body: body.value, principal });
  };

  /** Why a new session may not open now (a cap reached), or undefined. */
  const sessionCapRefusal = (tokenId: string): { message: string; log: string } | undefined => {
    const close =
      'close the MCP sessions you no longer use (an HTTP DELETE with their Mcp-Session-Id header) or wait ' +
      `until unused ones are closed (after ${Math.ceil(idleSessionMs / 60_000)} min idle), then initialize again`;
    if (openCount(tokenId) >= maxSessionsPerToken) {
      return {
        message: `Too many MCP sessions open for this token (at most ${maxSessionsPerToken}): ${close}`,
        log: `token ${shortId(tokenId)} has ${maxSessionsPerToken} sessions open`,
      };
    }
    if (sessions.size + openingTotal() >= maxSessions) {
      return {
        message: `Too many MCP sessions open on this server (at most ${maxSessions}): ${close}`,
        log: `${maxSessions} sessions open`,
      };
    }
    return undefined;
  };

  const openSession = async (input: {
    request: IncomingMessage;
    response: ServerResponse;
    body: unknown;
    principal: McpTokenPrincipal;
  }): Promise<void> => {
    const { caller, tokenId } = input.principal;
    // Counted as opening until the session exists, then as open: never both, never neither.
    opening.set(tokenId, (opening.get(tokenId) ?? 0) + 1);
    let counted = true;
    const stopCounting = (): void => {
      if (!counted) return;
      counted = false;
      const left = (opening.get(tokenId) ?? 1) - 1;
      if (left > 0) opening.set(tokenId, left);
      else opening.delete(tokenId);
    };
    try {
      // The MCP session id is the toolgate session: random, so no client can pick one that exists.
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => `mcp-${randomUUID()}`,
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, server, caller, tokenId, lastUsedAt: Date.now() });
          stopCounting();
          log(`MCP session ${id} opened for ${caller} (token ${shortId(tokenId)})`);
        },
      });
      transport.onclose = () => {
        const id = transport.sessionId;
        if (id !== undefined && sessions.get(id)?.transport === transport) {
          sessions.delete(id);
          log(`MCP session ${id} closed`);
        }
      };
      const server = createToolGateMcpServer({ client: options.client, caller, log });
      await server.connect(transport);
      await transport.handleRequest(input.request, input.response, input.body);
      // An initialize the transport refused opened no session: nothing keeps this pair.
      if (transport.sessionId === undefined) await server.close();
    } finally {
      stopCounting();
    }
  };

  const httpServer: HttpServer = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      log(`MCP request failed: ${String(error)}`);
      if (!response.headersSent) {
        replyRpcError({ response, status: 500, code: -32603, message: 'Internal error' });
      } else response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port, host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const port = (httpServer.address() as AddressInfo).port;
  if (!isLoopbackHost(host)) {
    log(
      `warning: the MCP server listens on ${host}, reachable from other machines, over plain HTTP: bearer ` +
        'tokens travel unencrypted; put it behind TLS (a reverse proxy that terminates HTTPS) or listen on 127.0.0.1',
    );
  }
  allowedOrigins = new Set(
    (options.allowedOrigins ?? defaultAllowedOrigins({ host, port })).map((origin) =>
      origin.toLowerCase().replace(/\/$/, ''),
    ),
  );
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions) {
        if (closedForRevocation(id, session)) continue;
        if (now - session.lastUsedAt > idleSessionMs) void closeSession(id, 'idle');
      }
    },
    Math.min(sweepEveryMs, idleSessionMs),
  );
  sweep.unref();

  let stopping: Promise<void> | undefined;
  return {
    url: `http://${authorityOf({ host, port })}${endpointPath}`,
    stop: () =>
      (stopping ??= (async () => {
        clearInterval(sweep);
        const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        await Promise.all([...sessions.keys()].map((id) => closeSession(id, 'the server stopped')));
        // Open streams (a session's GET) and idle keep-alive connections would hold close() forever.
        httpServer.closeAllConnections();
        await closed;
      })()),
  };
}

/** The verifier's answer, checked: a principal without a token id could not bind a session. */
function verified(tokens: McpTokenVerifier, token: string): McpTokenPrincipal | undefined {
  const principal = tokens.verify(token);
  if (principal && (typeof principal.tokenId !== 'string' || principal.tokenId.length === 0)) {
    throw new ConfigurationError(
      'the MCP token verifier returned a caller without a tokenId; return { caller, tokenId } (e.g. the token hash)',
    );
  }
  return principal;
}

/** The JSON-RPC id of a request, to echo in its error, when it has one. */
function requestIdOf(message: unknown): { id?: string | number } {
  const id = (message as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? { id } : {};
}

function shortId(tokenId: string): string {
  return `${tokenId.slice(0, shownTokenIdDigits)}...`;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigurationError(`startMcpHttpServer: ${name} must be a whole number above 0, got ${value}`);
  }
  return value;
}

/** What a browser page on an allowed origin needs to call and read the answer. */
function allowBrowser(input: { response: ServerResponse; origin: string }): void {
  const { response } = input;
  response.setHeader('Access-Control-Allow-Origin', input.origin);
  response.setHeader('Vary', 'Origin');
  response.setHeader('Access-Control-Allow-Methods', 'GET, POST, DELETE, OPTIONS');
  response.setHeader(
    'Access-Control-Allow-Headers',
    'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID',
  );
  response.setHeader('Access-Control-Expose-Headers', 'Mcp-Session-Id, WWW-Authenticate');
}

function reply(response: ServerResponse, status: number, body?: Record<string, unknown>): void {
  if (body === undefined) {
    response.writeHead(status).end();
    return;
  }
  response.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}

/** A JSON-RPC error as the HTTP answer; `id` echoes the request's when it is known. */
function replyRpcError(input: {
  response: ServerResponse;
  status: number;
  code: number;
  message: string;
  id?: string | number;
}): void {
  input.response
    // A body left unread (too large) must not be parsed as the next request on this connection.
    .writeHead(input.status, {
      'Content-Type': 'application/json',
      ...(input.status === 413 ? { Connection: 'close' } : {}),
    })
    .end(
      JSON.stringify({
        jsonrpc: '2.0',
        error: { code: input.code, message: input.message },
        id: input.id ?? null,
      }),
    );
}

type BodyRefusal = { ok: false; status: number; code: number; message: string };

/**
 * Reads a request's body as JSON, up to {@link maxBodyBytes}; beyond, the answer is 413 and the rest is
 * dropped. With `refuseBatch`, a body whose first character is `[` is answered 400 without being kept
 * or parsed: the rest is read and dropped, never scanned.
 */
function readJsonBody(input: {
  request: IncomingMessage;
  refuseBatch: boolean;
}): Promise<{ ok: true; value: unknown } | BodyRefusal> {
  const { request } = input;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    /** undefined until the first character that is not whitespace is seen. */
    let batch: boolean | undefined;
    request.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > maxBodyBytes) {
        settled = true;
        resolve({
          ok: false,
          status: 413,
          code: -32600,
          message: `request body larger than ${maxBodyBytes} bytes`,
        });
        return;
      }
      if (batch === undefined) {
        const first = chunk.findIndex((byte) => !jsonWhitespace.has(byte));
        if (first >= 0) batch = input.refuseBatch && chunk[first] === 0x5b; // '['
      }
      if (batch !== true) chunks.push(chunk);
    });
    request.on('error', () => {
      if (settled) return;
      settled = true;
      resolve({ ok: false, status: 400, code: -32600, message: 'the request body could not be read' });
    });
    request.on('end', () => {
      if (settled) return;
      settled = true;
      if (batch === true) {
        resolve({
          ok: false,
          status: 400,
          code: -32600,
          message:
            'Bad Request: a batch (JSON array) cannot open an MCP session; send the initialize request alone',
        });
        return;
      }
      try {
        resolve({ ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch {
        resolve({ ok: false, status: 400, code: -32700, message: 'Parse error: the body is not JSON' });
      }
    });
  });
}

/** JSON's whitespace: space, tab, line feed, carriage return. */
const jsonWhitespace = new Set([0x20, 0x09, 0x0a, 0x0d]);
