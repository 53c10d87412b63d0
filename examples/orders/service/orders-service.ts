import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { z } from 'zod';
import { createCredentialCheck } from './credential-check';
import { ORDER_CURRENCIES, REFUND_REASONS, openOrdersDatabase } from './orders-database';
import type {
  OrderCurrency,
  OrderRecord,
  OrdersDatabase,
  RefundReason,
  RefundRecord,
  RefundRefusalRecord,
} from './orders-database';

/** What a credential check is asked about: the exact refund the credential must have been minted for. */
export type CredentialCheck = {
  /** The bearer token from `Authorization: Bearer <credential>`, or null when the header is absent. */
  credential: string | null;
  operation: 'refund';
  orderId: string;
  amountCents: number;
  currency: OrderCurrency;
  /** Part of the refund's tool arguments, so a credential's argument digest covers it too. */
  reason: RefundReason;
  idempotencyKey: string;
};

/** A credential check's answer; a refusal is sent to the caller as `{code, message}` with its status. */
export type CredentialVerdict =
  { accepted: true } | { accepted: false; status: 401 | 403; code: string; message: string };

/** Decides whether a refund request carries a credential for exactly that refund; runs before any order or refund is read or written. */
export type VerifyCredential = (check: CredentialCheck) => CredentialVerdict | Promise<CredentialVerdict>;

/** The default credential check: accepts every request, stores nothing. `createCredentialCheck` is the real one. */
export const acceptAnyCredential: VerifyCredential = () => ({ accepted: true });

/** The running orders service; `close()` stops accepting, lets in-flight requests finish briefly, and closes the database. */
export type OrdersServiceHandle = {
  url: string;
  port: number;
  close(): Promise<void>;
};

// Bodies here are a few hundred bytes; the cap keeps a bad client from filling memory.
const MAX_BODY_BYTES = 64 * 1024;
// Call ids are "tc-" plus 64 hex characters; the cap leaves room for other callers' keys.
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

const refundBodySchema = z.strictObject({
  amount_cents: z
    .int({ error: 'must be a whole number of cents' })
    .positive({ error: 'must be greater than 0' }),
  currency: z.enum(ORDER_CURRENCIES, {
    error: `must be one of ${ORDER_CURRENCIES.join(', ')}`,
  }),
  reason: z.enum(REFUND_REASONS, {
    error: `must be one of ${REFUND_REASONS.join(', ')}`,
  }),
});

const faultCountSchema = z
  .int({ error: 'must be a whole number' })
  .min(0, { error: 'must be 0 or more' })
  .optional();

const faultBodySchema = z.strictObject({
  idempotency_key: z.string().min(1).max(MAX_IDEMPOTENCY_KEY_LENGTH),
  lose_response_after_commit: faultCountSchema,
  unavailable: faultCountSchema,
  lookup_unavailable: faultCountSchema,
  malformed_response: faultCountSchema,
  concurrent_refund: faultCountSchema,
});

/** An error the request handler answers with `{code, message}`; never thrown past the handler. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

function sendError(response: ServerResponse, error: HttpError): void {
  // After a 413 the rest of the body is still arriving; closing the connection stops it.
  const headers: Record<string, string> = error.status === 413 ? { connection: 'close' } : {};
  sendJson(response, error.status, { code: error.code, message: error.message }, headers);
}

function readJsonBody(request: IncomingMessage): Promise<unknown> {
  // Listeners rather than `for await`: leaving that loop early destroys the request and its socket,
  // and the 413 could no longer be sent.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      outcome();
    };
    request.on('data', (chunk: Buffer) => {
      if (settled) return; // the rest of an oversized body is drained and dropped
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        settle(() =>
          reject(
            new HttpError(
              413,
              'REQUEST_TOO_LARGE',
              `The body is larger than ${MAX_BODY_BYTES} bytes; send a smaller JSON body.`,
            ),
          ),
        );
        return;
      }
      chunks.push(chunk);
    });
    request.on('error', (error) => settle(() => reject(error)));
    request.on('end', () =>
      settle(() => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
        } catch {
          reject(new HttpError(400, 'INVALID_REQUEST', 'The body is not valid JSON; send a JSON object.'));
        }
      }),
    );
  });
}

function parseWith<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const field = issue.path.length > 0 ? issue.path.join('.') : 'body';
    return `${field}: ${issue.message}`;
  });
  throw new HttpError(
    400,
    'INVALID_REQUEST',
    `Invalid ${what}: ${problems.join('; ')}. Fix these fields and send again.`,
  );
}

function orderBody(order: OrderRecord): Record<string, unknown> {
  return {
    order_id: order.orderId,
    customer_id: order.customerId,
    total_cents: order.totalCents,
    refunded_cents: order.refundedCents,
    refundable_cents: order.refundableCents,
    currency: order.currency,
    note: order.note,
  };
}

function refundBody(refund: RefundRecord): Record<string, unknown> {
  return {
    refund_id: refund.refundId,
    order_id: refund.orderId,
    amount_cents: refund.amountCents,
    currency: refund.currency,
    reason: refund.reason,
    idempotency_key: refund.idempotencyKey,
    remaining_refundable_cents: refund.remainingRefundableCents,
    created_at: refund.createdAt,
  };
}

/** The by-key answer for a refused key: 200, because the lookup worked, with a body that says refused. */
function refusalBody(refusal: RefundRefusalRecord): Record<string, unknown> {
  return {
    status: 'refused',
    idempotency_key: refusal.idempotencyKey,
    order_id: refusal.orderId,
    amount_cents: refusal.amountCents,
    currency: refusal.currency,
    code: refusal.code,
    message: refusal.message,
    refused_at: refusal.refusedAt,
  };
}

function idempotencyKeyOf(request: IncomingMessage): string {
  const header = request.headers['idempotency-key'];
  const key = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!key) {
    throw new HttpError(
      400,
      'MISSING_IDEMPOTENCY_KEY',
      'A refund needs an Idempotency-Key header; send one unique key per refund and reuse it on every retry of that refund.',
    );
  }
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new HttpError(
      400,
      'INVALID_REQUEST',
      `The Idempotency-Key header is longer than ${MAX_IDEMPOTENCY_KEY_LENGTH} characters; send a shorter key.`,
    );
  }
  return key;
}

function bearerCredentialOf(request: IncomingMessage): string | null {
  const header = request.headers.authorization;
  if (header === undefined) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) {
    throw new HttpError(
      401,
      'CREDENTIAL_INVALID',
      'The Authorization header must be "Bearer <credential>"; send the credential minted for this refund.',
    );
  }
  return match[1];
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(
      400,
      'INVALID_REQUEST',
      'The path is not valid percent-encoding; encode ids with encodeURIComponent.',
    );
  }
}

function notFound(): HttpError {
  return new HttpError(
    404,
    'NOT_FOUND',
    'No such route. Routes: GET /orders/:orderId, POST /orders/:orderId/refunds, GET /refunds/by-key/:key, GET /refunds, GET /health.',
  );
}

/**
 * Builds the orders HTTP server (not listening); it answers every request, bad input included, without crashing.
 * Only with `testMode` does it serve the routes that let anyone who reaches the port change what it
 * does or holds: `POST /faults` and `POST /admin/reset`.
 */
export function createOrdersServer({
  database,
  testMode = false,
  verifyCredential = acceptAnyCredential,
}: {
  database: OrdersDatabase;
  /** Serve `POST /faults` and `POST /admin/reset` (tests only: neither is authenticated). */
  testMode?: boolean;
  verifyCredential?: VerifyCredential;
}): Server {
  // Test mode only, in memory (a persisted database needs no new columns for them): each key's refund
  // requests, and the switches that change an answer rather than cause an outage.
  const refundRequestsByKey = new Map<string, number>();
  const answerFaults = new Map<string, { malformedResponse: number; concurrentRefund: number }>();
  const answerFaultsOf = (idempotencyKey: string) =>
    answerFaults.get(idempotencyKey) ?? { malformedResponse: 0, concurrentRefund: 0 };
  const consumeAnswerFault = (
    idempotencyKey: string,
    fault: 'malformedResponse' | 'concurrentRefund',
  ): boolean => {
    const switches = answerFaults.get(idempotencyKey);
    if (!switches || switches[fault] === 0) return false;
    switches[fault]--;
    return true;
  };

  // Switches armed in a database file are honoured only in test mode: a file once used by tests and
  // then served without it must not lose a response.
  const consumeFault = (input: Parameters<OrdersDatabase['consumeFault']>[0]): boolean =>
    testMode && database.consumeFault(input);

  async function handleRefund(
    request: IncomingMessage,
    response: ServerResponse,
    orderId: string,
  ): Promise<void> {
    const idempotencyKey = idempotencyKeyOf(request);
    if (testMode) refundRequestsByKey.set(idempotencyKey, (refundRequestsByKey.get(idempotencyKey) ?? 0) + 1);
    // A simulated outage answers before the body is even read: nothing is touched. When a lost
    // response is armed too, the commit-and-lose comes first, then the outage ("it committed, then
    // the gateway went down"), which is the hardest case for a caller to get right.
    const lossPending = testMode && database.faultSwitchesOf({ idempotencyKey }).loseResponseAfterCommit > 0;
    if (!lossPending && consumeFault({ idempotencyKey, fault: 'unavailable' })) {
      throw new HttpError(
        503,
        'UPSTREAM_UNAVAILABLE',
        'The orders service is temporarily unavailable; nothing was applied. Retry later with the same Idempotency-Key.',
      );
    }
    const body = parseWith(refundBodySchema, await readJsonBody(request), 'refund request');
    const verdict = await verifyCredential({
      credential: bearerCredentialOf(request),
      operation: 'refund',
      orderId,
      amountCents: body.amount_cents,
      currency: body.currency,
      reason: body.reason,
      idempotencyKey,
    });
    if (!verdict.accepted) throw new HttpError(verdict.status, verdict.code, verdict.message);

    // Another refund takes the order's whole refundable balance just before this one: the race a
    // caller's earlier check cannot see, so this refund meets the business rules' own refusal.
    const raced = testMode ? database.getOrder({ orderId }) : undefined;
    if (raced && raced.refundableCents > 0 && consumeAnswerFault(idempotencyKey, 'concurrentRefund')) {
      database.applyRefund({
        orderId,
        amountCents: raced.refundableCents,
        currency: raced.currency,
        reason: 'customer_request',
        idempotencyKey: `concurrent-${randomUUID()}`,
        refundId: `RF-${randomUUID()}`,
        createdAt: new Date().toISOString(),
      });
    }
    const result = database.applyRefund({
      orderId,
      amountCents: body.amount_cents,
      currency: body.currency,
      reason: body.reason,
      idempotencyKey,
      refundId: `RF-${randomUUID()}`,
      createdAt: new Date().toISOString(),
    });
    switch (result.outcome) {
      case 'rejected': {
        // The refusal is recorded under the key, a commit like a refund's: the same fault loses its answer.
        if (consumeFault({ idempotencyKey, fault: 'loseResponseAfterCommit' })) {
          response.destroy();
          return;
        }
        sendJson(
          response,
          result.code === 'ORDER_NOT_FOUND' ? 404 : 422,
          { code: result.code, message: result.message },
          result.replayed ? { 'idempotent-replayed': 'true' } : {},
        );
        return;
      }
      case 'conflict':
        throw new HttpError(409, 'IDEMPOTENCY_CONFLICT', result.message);
      case 'applied':
      case 'replayed': {
        // The fault fires only after the commit, which is exactly the case it simulates: the effect
        // happened, the caller never hears of it, and a retry with the same key must replay.
        if (
          consumeFault({
            idempotencyKey,
            fault: 'loseResponseAfterCommit',
          })
        ) {
          response.destroy();
          return;
        }
        const replayed = result.outcome === 'replayed';
        // Committed, then answered with a body that breaks the service's own contract (no refund_id).
        if (consumeAnswerFault(idempotencyKey, 'malformedResponse')) {
          const { refund_id: _missing, ...malformed } = refundBody(result.refund);
          sendJson(response, replayed ? 200 : 201, malformed);
          return;
        }
        sendJson(
          response,
          replayed ? 200 : 201,
          refundBody(result.refund),
          replayed ? { 'idempotent-replayed': 'true' } : {},
        );
        return;
      }
    }
  }

  type Route = {
    method: 'GET' | 'POST';
    /** Path segments; one starting with ":" captures that segment (percent-decoded) under its name. */
    pattern: string[];
    handler: (
      request: IncomingMessage,
      response: ServerResponse,
      context: RouteContext,
    ) => Promise<void> | void;
  };
  type RouteContext = {
    parameters: Record<string, string>;
    query: URLSearchParams;
  };

  const routes: Route[] = [
    {
      method: 'GET',
      pattern: ['health'],
      handler: (_request, response) => sendJson(response, 200, { status: 'ok' }),
    },
    {
      method: 'GET',
      pattern: ['orders', ':orderId'],
      handler: (_request, response, { parameters }) => {
        const orderId = parameters.orderId ?? '';
        const order = database.getOrder({ orderId });
        if (!order)
          throw new HttpError(
            404,
            'ORDER_NOT_FOUND',
            `Order ${orderId} does not exist. Check the order id with the customer.`,
          );
        sendJson(response, 200, orderBody(order));
      },
    },
    {
      method: 'POST',
      pattern: ['orders', ':orderId', 'refunds'],
      handler: (request, response, { parameters }) =>
        handleRefund(request, response, parameters.orderId ?? ''),
    },
    {
      method: 'GET',
      pattern: ['refunds', 'by-key', ':idempotencyKey'],
      handler: (_request, response, { parameters }) => {
        const idempotencyKey = parameters.idempotencyKey ?? '';
        if (consumeFault({ idempotencyKey, fault: 'lookupUnavailable' })) {
          throw new HttpError(
            503,
            'UPSTREAM_UNAVAILABLE',
            'The orders service cannot look up refunds right now; whether the key was applied is unknown. Ask again later.',
          );
        }
        const refund = database.findRefundByKey({ idempotencyKey });
        const refusal = refund ? null : database.findRefusalByKey({ idempotencyKey });
        if (refusal) {
          sendJson(response, 200, refusalBody(refusal));
          return;
        }
        if (!refund) {
          throw new HttpError(
            404,
            'NOT_APPLIED',
            `No refund was applied with idempotency key ${idempotencyKey}; sending it again applies it at most once.`,
          );
        }
        sendJson(response, 200, refundBody(refund));
      },
    },
    {
      method: 'GET',
      pattern: ['refunds'],
      handler: (_request, response, { query }) => {
        const refunds = database.listRefunds({
          orderId: query.get('order_id') ?? undefined,
        });
        sendJson(response, 200, {
          count: refunds.length,
          refunds: refunds.map(refundBody),
        });
      },
    },
  ];
  // Without testMode these routes do not exist at all: nobody who reaches the port can arm a lost
  // response or an outage for someone's refund, or wipe the data.
  if (testMode) {
    routes.push(
      {
        method: 'POST',
        pattern: ['faults'],
        handler: async (request, response) => {
          const body = parseWith(faultBodySchema, await readJsonBody(request), 'fault switches');
          const switches = database.setFaultSwitches({
            idempotencyKey: body.idempotency_key,
            loseResponseAfterCommit: body.lose_response_after_commit,
            unavailable: body.unavailable,
            lookupUnavailable: body.lookup_unavailable,
          });
          const current = answerFaultsOf(body.idempotency_key);
          const answers = {
            malformedResponse: body.malformed_response ?? current.malformedResponse,
            concurrentRefund: body.concurrent_refund ?? current.concurrentRefund,
          };
          answerFaults.set(body.idempotency_key, answers);
          sendJson(response, 200, {
            idempotency_key: body.idempotency_key,
            lose_response_after_commit: switches.loseResponseAfterCommit,
            unavailable: switches.unavailable,
            lookup_unavailable: switches.lookupUnavailable,
            malformed_response: answers.malformedResponse,
            concurrent_refund: answers.concurrentRefund,
          });
        },
      },
      {
        method: 'POST',
        pattern: ['admin', 'reset'],
        handler: (_request, response) => {
          database.reset();
          answerFaults.clear();
          refundRequestsByKey.clear();
          sendJson(response, 200, { status: 'reset' });
        },
      },
    );
  }

  // Requests that a tool's check, executor or lookup makes; tests read it to prove a call reached no backend.
  let businessRequests = 0;
  const businessRoutes = new Set([
    'GET orders/:orderId',
    'POST orders/:orderId/refunds',
    'GET refunds/by-key/:idempotencyKey',
  ]);
  routes.push({
    method: 'GET',
    pattern: ['stats'],
    handler: (_request, response, { query }) => {
      // In test mode, `?idempotency_key=K` adds how many refund requests that key made (every attempt).
      const key = query.get('idempotency_key');
      sendJson(response, 200, {
        business_requests: businessRequests,
        ...(testMode && key !== null ? { refund_requests: refundRequestsByKey.get(key) ?? 0 } : {}),
      });
    },
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    // Split before decoding, so an encoded "/" inside an id stays part of that id.
    const segments = url.pathname.split('/').filter((segment) => segment !== '');
    for (const route of routes) {
      if (route.method !== request.method || route.pattern.length !== segments.length) continue;
      const parameters: Record<string, string> = {};
      const matches = route.pattern.every((expected, index) => {
        const actual = segments[index] ?? '';
        if (!expected.startsWith(':')) return expected === actual;
        parameters[expected.slice(1)] = decodeSegment(actual);
        return true;
      });
      if (matches) {
        if (businessRoutes.has(`${route.method} ${route.pattern.join('/')}`)) businessRequests++;
        await route.handler(request, response, {
          parameters,
          query: url.searchParams,
        });
        return;
      }
    }
    throw notFound();
  }

  return createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      // This is the last line of defence: nothing here may throw, or the process would crash.
      try {
        if (response.headersSent || response.destroyed) return;
        if (error instanceof HttpError) {
          sendError(response, error);
          return;
        }
        console.error('orders-service: unexpected error', error);
        sendError(
          response,
          new HttpError(
            500,
            'INTERNAL_ERROR',
            'The orders service failed unexpectedly; whether anything was applied is unknown. Look the key up with GET /refunds/by-key/:key.',
          ),
        );
      } catch (failure) {
        console.error('orders-service: could not send an error response', failure);
        response.destroy();
      }
    });
  });
}

/**
 * Opens the database and listens (on 127.0.0.1 unless told otherwise); resolves once the port is bound.
 * With `minterPublicKeyHex`, every refund needs a credential from that minter (`createCredentialCheck`);
 * without it and without `verifyCredential`, credentials are not checked.
 */
export async function startOrdersService({
  databasePath,
  port = 0,
  host = '127.0.0.1',
  testMode = false,
  verifyCredential,
  minterPublicKeyHex,
}: {
  databasePath: string;
  port?: number;
  host?: string;
  /** Serve `POST /faults` and `POST /admin/reset` (tests only: neither is authenticated). */
  testMode?: boolean;
  verifyCredential?: VerifyCredential;
  /** The credential minter's raw Ed25519 public key in hex; the check's used-credential ids live in this database. */
  minterPublicKeyHex?: string;
}): Promise<OrdersServiceHandle> {
  if (verifyCredential && minterPublicKeyHex !== undefined) {
    throw new Error(
      'startOrdersService: pass verifyCredential or minterPublicKeyHex, not both; minterPublicKeyHex builds its own check.',
    );
  }
  const database = openOrdersDatabase({ path: databasePath });
  let server: Server;
  try {
    server = createOrdersServer({
      database,
      testMode,
      verifyCredential:
        minterPublicKeyHex === undefined
          ? verifyCredential
          : createCredentialCheck({ minterPublicKeyHex, database }),
    });
  } catch (error) {
    database.close();
    throw error;
  }
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    database.close();
    throw error;
  }
  const address = server.address();
  if (address === null || typeof address === 'string') {
    throw new Error('orders-service: the server is not bound to a TCP port');
  }
  const urlHost = host.includes(':') ? `[${host}]` : host;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      // In-flight requests are quick (one synchronous transaction); give them a moment, then cut.
      const forceTimer = setTimeout(() => server.closeAllConnections(), 2000);
      forceTimer.unref();
      server.close(() => {
        clearTimeout(forceTimer);
        database.close();
        resolve();
      });
      server.closeIdleConnections();
    });
    return closing;
  };

  return {
    url: `http://${urlHost}:${address.port}`,
    port: address.port,
    close,
  };
}
