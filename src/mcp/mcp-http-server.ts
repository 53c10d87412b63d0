// The MCP server over Streamable HTTP, on node:http: one SDK transport and one governed server per
// MCP session. Each request is checked before anything runs (Host, Origin, bearer token); the token
// names the caller; the MCP session id is the toolgate session, bound to the caller that opened it.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ToolGateClient } from '../client';
import { authorityOf, bearerTokenOf, defaultAllowedOrigins, hostAllowed, originAllowed } from './http-access';
import { createToolGateMcpServer } from './mcp-server';
import type { McpTokenVerifier } from './mcp-tokens';

/** Where and for whom the HTTP server runs. */
export interface McpHttpServerOptions {
  client: ToolGateClient;
  /** Who a bearer token stands for: `mcpTokenVerifier({ path })` over a tokens file, or your own. */
  tokens: McpTokenVerifier;
  /** The address to listen on (default 127.0.0.1: this machine only). */
  host?: string;
  /** The port; 0 for a free one (see `url`). */
  port: number;
  /** Origins a browser page may call from (default: this server's own origins). */
  allowedOrigins?: readonly string[];
  /** MCP sessions unused for this long are closed (default 30 minutes, a toolgate session's default idle). */
  idleSessionMs?: number;
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

interface McpSession {
  transport: StreamableHTTPServerTransport;
  server: Server;
  caller: string;
  lastUsedAt: number;
}

/**
 * Starts the MCP server over Streamable HTTP (loopback by default). A request without a known token
 * gets 401, one from a foreign origin or host 403, one naming another caller's session 404: nothing
 * runs for any of them. Every tools/call goes through toolgate as the token's caller, in the MCP session.
 */
export async function startMcpHttpServer(options: McpHttpServerOptions): Promise<McpHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? ((): void => undefined);
  const sessions = new Map<string, McpSession>();
  let allowedOrigins = new Set<string>();

  const closeSession = async (id: string): Promise<void> => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    // Closing the server closes its transport (its open streams too).
    await session.server
      .close()
      .catch((error: unknown) => log(`closing MCP session ${id}: ${String(error)}`));
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path !== endpointPath) {
      return reply(response, 404, { error: `not found; the MCP endpoint is ${endpointPath}` });
    }
    if (!hostAllowed({ hostHeader: request.headers.host, boundHost: host })) {
      log(`refused a request for host ${JSON.stringify(request.headers.host ?? '')} (403)`);
      return reply(response, 403, { error: 'forbidden: this server answers to its loopback names only' });
    }
    const origin = request.headers.origin;
    if (!originAllowed({ origin, allowed: allowedOrigins })) {
      log(`refused a request from origin ${JSON.stringify(origin)} (403)`);
      return reply(response, 403, {
        error: 'forbidden: this origin is not allowed (config mcp.allowedOrigins)',
      });
    }
    if (origin !== undefined) allowBrowser({ response, origin });
    // A browser's preflight carries no credentials: it learns what it may send, and nothing runs.
    if (request.method === 'OPTIONS') return reply(response, 204);
    const token = bearerTokenOf(request.headers.authorization);
    const principal = token !== undefined ? options.tokens.verify(token) : undefined;
    if (!principal) {
      response.setHeader(
        'WWW-Authenticate',
        token === undefined ? 'Bearer realm="toolgate"' : 'Bearer realm="toolgate", error="invalid_token"',
      );
      return reply(response, 401, {
        error:
          'unauthorized: send Authorization: Bearer <token> (toolgate mcp token --caller NAME makes one)',
      });
    }
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      // Another caller's session is as unknown as one that never existed.
      if (!session || session.caller !== principal.caller) {
        return replyRpcError(response, 404, -32001, 'Session not found');
      }
      session.lastUsedAt = Date.now();
      return session.transport.handleRequest(request, response);
    }
    if (request.method !== 'POST') {
      return replyRpcError(response, 400, -32000, 'Bad Request: no valid MCP session id; initialize first');
    }
    const body = await readJsonBody(request);
    if (!body.ok) return replyRpcError(response, body.status, body.code, body.message);
    const messages: unknown[] = Array.isArray(body.value) ? body.value : [body.value];
    if (!messages.some((message) => isInitializeRequest(message))) {
      return replyRpcError(response, 400, -32000, 'Bad Request: no valid MCP session id; initialize first');
    }
    await openSession({ request, response, body: body.value, caller: principal.caller });
  };

  const openSession = async (input: {
    request: IncomingMessage;
    response: ServerResponse;
    body: unknown;
    caller: string;
  }): Promise<void> => {
    const { caller } = input;
    // The MCP session id is the toolgate session: random, so no client can pick one that exists.
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => `mcp-${randomUUID()}`,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, caller, lastUsedAt: Date.now() });
        log(`MCP session ${id} opened for ${caller}`);
      },
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id !== undefined && sessions.get(id)?.transport === transport) {
        sessions.delete(id);
        log(`MCP session ${id} closed`);
      }
    };
    const server = createToolGateMcpServer({
      client: options.client,
      caller,
      log,
    });
    await server.connect(transport);
    await transport.handleRequest(input.request, input.response, input.body);
    // An initialize the transport refused opened no session: nothing keeps this pair.
    if (transport.sessionId === undefined) await server.close();
  };

  const httpServer: HttpServer = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      log(`MCP request failed: ${String(error)}`);
      if (!response.headersSent) replyRpcError(response, 500, -32603, 'Internal error');
      else response.end();
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
  allowedOrigins = new Set(
    (options.allowedOrigins ?? defaultAllowedOrigins({ host, port })).map((origin) =>
      origin.toLowerCase().replace(/\/$/, ''),
    ),
  );
  const idleSessionMs = options.idleSessionMs ?? 30 * 60_000;
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions) {
        if (now - session.lastUsedAt > idleSessionMs) void closeSession(id);
      }
    },
    Math.min(60_000, idleSessionMs),
  );
  sweep.unref();

  let stopping: Promise<void> | undefined;
  return {
    url: `http://${authorityOf({ host, port })}${endpointPath}`,
    stop: () =>
      (stopping ??= (async () => {
        clearInterval(sweep);
        const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        await Promise.all([...sessions.keys()].map((id) => closeSession(id)));
        // Open streams (a session's GET) and idle keep-alive connections would hold close() forever.
        httpServer.closeAllConnections();
        await closed;
      })()),
  };
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

function replyRpcError(response: ServerResponse, status: number, code: number, message: string): void {
  response
    // A body left unread (too large) must not be parsed as the next request on this connection.
    .writeHead(status, {
      'Content-Type': 'application/json',
      ...(status === 413 ? { Connection: 'close' } : {}),
    })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Reads a request's body as JSON, up to {@link maxBodyBytes}; beyond, the answer is 413 and the rest is dropped. */
function readJsonBody(
  request: IncomingMessage,
): Promise<{ ok: true; value: unknown } | { ok: false; status: number; code: number; message: string }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
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
      chunks.push(chunk);
    });
    request.on('error', () => {
      if (settled) return;
      settled = true;
      resolve({ ok: false, status: 400, code: -32600, message: 'the request body could not be read' });
    });
    request.on('end', () => {
      if (settled) return;
      settled = true;
      try {
        resolve({ ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch {
        resolve({ ok: false, status: 400, code: -32700, message: 'Parse error: the body is not JSON' });
      }
    });
  });
}
