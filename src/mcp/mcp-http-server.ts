// The MCP server over Streamable HTTP, on Hono: one SDK transport (web-standard Request and Response)
// and one governed server per MCP session. Each request is checked before anything runs (Host, Origin,
// bearer token); the token names the caller; the MCP session id is the toolgate session, bound to the
// token that opened it. What one token holder can take is bounded: sessions per token and in all, and
// the body read to open one.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { Hono } from 'hono';
import type { Context, MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
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
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  caller: string;
  /** The token that opened the session: the only one its requests may carry. */
  tokenId: string;
  lastUsedAt: number;
}

/** What the checks before a request's route hand on: the caller its bearer token stands for. */
type McpHttpEnv = { Variables: { principal: McpTokenPrincipal } };

/**
 * What a browser page on an allowed origin (refused before, otherwise) needs to call and read the
 * answer; its preflight carries no credentials: it learns what it may send (204), and nothing runs.
 */
const allowBrowser = cors({
  origin: (origin) => origin || null,
  allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
  allowHeaders: [
    'Authorization',
    'Content-Type',
    'Accept',
    'Mcp-Session-Id',
    'Mcp-Protocol-Version',
    'Last-Event-ID',
  ],
  exposeHeaders: ['Mcp-Session-Id', 'WWW-Authenticate'],
});

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
  /** Sessions being opened (an initialize in flight), one entry each: counted against the caps too. */
  const opening = new Set<{ tokenId: string }>();
  /** Known once the port is. */
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
  /** True, and the session closed, when the verifier says the token that opened it no longer verifies. */
  const closedForRevocation = (id: string): boolean => {
    const session = sessions.get(id);
    if (!session || options.tokens.isActive?.(session.tokenId) !== false) return false;
    void closeSession(id, `its token ${shortId(session.tokenId)} was revoked`);
    return true;
  };

  /** Why a new session may not open now (a cap reached), or undefined. */
  const sessionCapRefusal = (tokenId: string): { message: string; log: string } | undefined => {
    const close =
      'close the MCP sessions you no longer use (an HTTP DELETE with their Mcp-Session-Id header) or wait ' +
      `until unused ones are closed (after ${Math.ceil(idleSessionMs / 60_000)} min idle), then initialize again`;
    const ofToken = [...sessions.values(), ...opening].filter((session) => session.tokenId === tokenId);
    if (ofToken.length >= maxSessionsPerToken) {
      return {
        message: `Too many MCP sessions open for this token (at most ${maxSessionsPerToken}): ${close}`,
        log: `token ${shortId(tokenId)} has ${maxSessionsPerToken} sessions open`,
      };
    }
    if (sessions.size + opening.size >= maxSessions) {
      return {
        message: `Too many MCP sessions open on this server (at most ${maxSessions}): ${close}`,
        log: `${maxSessions} sessions open`,
      };
    }
    return undefined;
  };

  /** A foreign Host (a DNS-rebinding page) or Origin is refused before anything else is looked at. */
  const refuseForeignHostOrOrigin: MiddlewareHandler<McpHttpEnv> = async (c, next) => {
    const hostHeader = c.req.header('host');
    if (!hostAllowed({ hostHeader, boundHost: host })) {
      log(`refused ${requestLine(c)} for host ${JSON.stringify(hostHeader ?? '')} (403)`);
      return c.json({ error: 'forbidden: this server answers to its loopback names only' }, 403);
    }
    const origin = c.req.header('origin');
    if (!originAllowed({ origin, allowed: allowedOrigins })) {
      log(`refused ${requestLine(c)} from origin ${JSON.stringify(origin)} (403)`);
      return c.json({ error: 'forbidden: this origin is not allowed (config mcp.allowedOrigins)' }, 403);
    }
    return next();
  };

  /** Ends a named session whose token was revoked, whoever asks; then lets through a known token only. */
  const authenticate: MiddlewareHandler<McpHttpEnv> = async (c, next) => {
    // A session whose token was revoked ends now, whoever asks.
    const sessionId = c.req.header('mcp-session-id');
    if (sessionId !== undefined) closedForRevocation(sessionId);
    const token = bearerTokenOf(c.req.header('authorization'));
    const principal = token === undefined ? undefined : verified(options.tokens, token);
    if (!principal) {
      // The log names a token by its hash's first digits, never by the token.
      const why =
        token === undefined
          ? 'no bearer token'
          : `unknown or revoked token (sha256 ${mcpTokenHash(token).slice(0, shownTokenIdDigits)}...)`;
      log(`refused ${requestLine(c)}: ${why} (401)`);
      const challenge = `Bearer realm="toolgate"${token === undefined ? '' : ', error="invalid_token"'}`;
      const fix = 'send Authorization: Bearer <token> (toolgate mcp token --caller NAME makes one)';
      return c.json({ error: `unauthorized: ${fix}` }, 401, { 'WWW-Authenticate': challenge });
    }
    c.set('principal', principal);
    return next();
  };

  /** Opens a session for an initialize sent alone, within the caps; answers anything else without a session 400. */
  const openSession = async (c: Context<McpHttpEnv>): Promise<Response> => {
    if (c.req.method !== 'POST') return rpcError(c, noSession);
    // An initialize comes alone: a batch is refused before any of it is read as JSON.
    const body = await readInitializeBody(c.req.raw);
    if (!body.ok) return rpcError(c, body);
    if (!isInitializeRequest(body.value)) return rpcError(c, noSession);
    const { caller, tokenId, context } = c.get('principal');
    const refusal = sessionCapRefusal(tokenId);
    if (refusal) {
      log(`refused ${requestLine(c)} for ${caller}: ${refusal.log} (429)`);
      return rpcError(c, { status: 429, code: -32000, message: refusal.message, ...requestIdOf(body.value) });
    }
    // Counted as opening until the session exists, then as open: never both, never neither.
    const pending = { tokenId };
    opening.add(pending);
    try {
      // The MCP session id is the toolgate session: random, so no client can pick one that exists.
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => `mcp-${randomUUID()}`,
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, server, caller, tokenId, lastUsedAt: Date.now() });
          opening.delete(pending);
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
      // The token's end user, never the client's word: every call of the session acts for them.
      const server = createToolGateMcpServer({
        client: options.client,
        caller,
        ...(context !== undefined ? { context } : {}),
        log,
      });
      await server.connect(transport);
      const response = await transport.handleRequest(c.req.raw, { parsedBody: body.value });
      // An initialize the transport refused opened no session: nothing keeps this pair.
      if (transport.sessionId === undefined) await server.close();
      return response;
    } finally {
      opening.delete(pending);
    }
  };

  const app = new Hono<McpHttpEnv>();
  app.notFound((c) => c.json({ error: `not found; the MCP endpoint is ${endpointPath}` }, 404));
  app.onError((error, c) => {
    log(`MCP request failed: ${String(error)}`);
    return rpcError(c, { status: 500, code: -32603, message: 'Internal error' });
  });
  app.use(endpointPath, refuseForeignHostOrOrigin, allowBrowser, authenticate);
  app.all(endpointPath, (c) => {
    const sessionId = c.req.header('mcp-session-id');
    if (sessionId === undefined) return openSession(c);
    // A session answers to the token that opened it only: for any other token, even one of the same
    // caller, it is as unknown as one that never existed.
    const session = sessions.get(sessionId);
    if (!session || session.tokenId !== c.get('principal').tokenId) {
      log(`refused ${requestLine(c)}: no MCP session ${sessionId.slice(0, 64)} for this token (404)`);
      return rpcError(c, { status: 404, code: -32001, message: 'Session not found' });
    }
    session.lastUsedAt = Date.now();
    return session.transport.handleRequest(c.req.raw);
  });

  // A library must not swap the process's global Request and Response (node-server's default). A request
  // without a Host header is built as if sent to localhost; the Host check still sees none.
  const listener = getRequestListener(app.fetch, { hostname: 'localhost', overrideGlobalObjects: false });
  const httpServer = createServer((request, response) => void listener(request, response));
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
        if (closedForRevocation(id)) continue;
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

/** What a log line says of a request: never its headers (the token), nor its query. */
function requestLine(c: Context): string {
  return `${c.req.method} ${c.req.path}`;
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

/** A JSON-RPC error, as the SDK's transport answers them. */
interface RpcError {
  status: ContentfulStatusCode;
  code: number;
  message: string;
  /** The request's id, when it is known. */
  id?: string | number;
}

/** What a request without a session that is not an initialize gets. */
const noSession: RpcError = {
  status: 400,
  code: -32000,
  message: 'Bad Request: no valid MCP session id; initialize first',
};

/** The one JSON-RPC error answer. After a 413 the rest of the body is still arriving; closing the connection stops it. */
function rpcError(c: Context, error: RpcError): Response {
  return c.json(
    { jsonrpc: '2.0', error: { code: error.code, message: error.message }, id: error.id ?? null },
    error.status,
    error.status === 413 ? { connection: 'close' } : undefined,
  );
}

/**
 * Reads the body of a request that would open a session, as JSON, up to {@link maxBodyBytes}; beyond,
 * the answer is 413 and the rest is drained. A body whose first character is `[` (a batch) is answered
 * 400 without being kept or parsed: the rest is read and dropped, never scanned.
 */
async function readInitializeBody(
  request: Request,
): Promise<{ ok: true; value: unknown } | (RpcError & { ok: false })> {
  // Node's Request types its body as a stream of `any`; the bytes of a request body are Uint8Arrays.
  const reader = request.body?.getReader() as ReadableStreamDefaultReader<Uint8Array> | undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  /** undefined until the first character that is not whitespace is seen. */
  let batch: boolean | undefined;
  try {
    while (reader) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBodyBytes) {
        void drain(reader);
        return {
          ok: false,
          status: 413,
          code: -32600,
          message: `request body larger than ${maxBodyBytes} bytes`,
        };
      }
      if (batch === undefined) {
        const first = value.findIndex((byte) => !jsonWhitespace.has(byte));
        if (first >= 0) batch = value[first] === 0x5b; // '['
      }
      if (batch !== true) chunks.push(value);
    }
  } catch {
    // The client went away mid-body: nobody reads this answer.
    return { ok: false, status: 400, code: -32600, message: 'the request body could not be read' };
  }
  if (batch === true) {
    return {
      ok: false,
      status: 400,
      code: -32600,
      message:
        'Bad Request: a batch (JSON array) cannot open an MCP session; send the initialize request alone',
    };
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    return { ok: false, status: 400, code: -32700, message: 'Parse error: the body is not JSON' };
  }
}

/**
 * Reads the rest of an oversized body and drops it; never rejects. Cancelling instead would leave it
 * unread, and a socket closed with unread data resets, so the client might never see the 413.
 */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  try {
    while (!(await reader.read()).done);
  } catch {
    // The connection closed: nothing is left to drain.
  }
}

/** JSON's whitespace: space, tab, line feed, carriage return. */
const jsonWhitespace = new Set([0x20, 0x09, 0x0a, 0x0d]);
