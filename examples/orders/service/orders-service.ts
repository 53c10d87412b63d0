import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono } from 'hono';
import type { Context, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
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
  /** The customer the request says it acts for (part of the arguments' digest), when it names one. */
  customerId?: string;
  /** Whose order it is, when it exists: a credential minted for another end user is refused. */
  orderOwner?: string;
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
  // The customer the refund is made for, when the caller acts for one: another's order is refused.
  customer_id: z.string().min(1).max(128).optional(),
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
  wrong_read_back: faultCountSchema,
});

/** A refusal a handler throws; `onError` answers it as `{code, message}` with its status. */
class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// The node-server bindings: the lost-response fault needs the Node response to destroy its socket.
type OrdersContext = Context<{ Bindings: HttpBindings }>;

/** The one error answer. After a 413 the rest of the body is still arriving; closing the connection stops it. */
function errorResponse(c: OrdersContext, error: HttpError): Response {
  const headers = error.status === 413 ? { connection: 'close' } : undefined;
  return c.json({ code: error.code, message: error.message }, error.status, headers);
}

/**
 * Reads the body as JSON, refusing one larger than MAX_BODY_BYTES with 413. Called inside the handler
 * rather than as Hono's bodyLimit middleware, so a refund's header and outage checks still answer first.
 */
async function readJsonBody(request: Request): Promise<unknown> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Node's Request types its body as a stream of `any`; the bytes of a request body are Uint8Arrays.
  const reader = request.body?.getReader() as ReadableStreamDefaultReader<Uint8Array> | undefined;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      void drain(reader);
      throw new HttpError(
        413,
        'REQUEST_TOO_LARGE',
        `The body is larger than ${MAX_BODY_BYTES} bytes; send a smaller JSON body.`,
      );
    }
    chunks.push(value);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new HttpError(400, 'INVALID_REQUEST', 'The body is not valid JSON; send a JSON object.');
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

function orderBody(order: OrderRecord) {
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

function refundBody(refund: RefundRecord) {
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
function refusalBody(refusal: RefundRefusalRecord) {
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

const replayedHeader = (replayed: boolean) => (replayed ? { 'idempotent-replayed': 'true' } : undefined);

function idempotencyKeyOf(c: OrdersContext): string {
  const key = c.req.header('idempotency-key')?.trim();
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

function bearerCredentialOf(c: OrdersContext): string | null {
  const header = c.req.header('authorization');
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

/** Answers nothing: destroys the socket, so the client sees a network error; what was committed stays committed. */
function loseResponse(c: OrdersContext): Response {
  c.env.outgoing.destroy();
  return RESPONSE_ALREADY_SENT;
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
  type AnswerFaults = { malformedResponse: number; concurrentRefund: number; wrongReadBack: number };
  const answerFaults = new Map<string, AnswerFaults>();
  const answerFaultsOf = (idempotencyKey: string): AnswerFaults =>
    answerFaults.get(idempotencyKey) ?? { malformedResponse: 0, concurrentRefund: 0, wrongReadBack: 0 };
  const consumeAnswerFault = (idempotencyKey: string, fault: keyof AnswerFaults): boolean => {
    const switches = answerFaults.get(idempotencyKey);
    if (!switches || switches[fault] === 0) return false;
    switches[fault]--;
    return true;
  };

  // Switches armed in a database file are honoured only in test mode: a file once used by tests and
  // then served without it must not lose a response.
  const consumeFault = (input: Parameters<OrdersDatabase['consumeFault']>[0]): boolean =>
    testMode && database.consumeFault(input);

  /**
   * A simulated outage answers before the body is even read: nothing is touched. When a lost response
   * is armed too, the commit-and-lose comes first, then the outage ("it committed, then the gateway
   * went down"), which is the hardest case for a caller to get right.
   */
  const simulateOutage = (idempotencyKey: string): void => {
    const lossPending = testMode && database.faultSwitchesOf({ idempotencyKey }).loseResponseAfterCommit > 0;
    if (!lossPending && consumeFault({ idempotencyKey, fault: 'unavailable' })) {
      throw new HttpError(
        503,
        'UPSTREAM_UNAVAILABLE',
        'The orders service is temporarily unavailable; nothing was applied. Retry later with the same Idempotency-Key.',
      );
    }
  };

  /**
   * Another refund takes the order's whole refundable balance just before this one: the race a
   * caller's earlier check cannot see, so this refund meets the business rules' own refusal.
   */
  const simulateConcurrentRefund = (orderId: string, idempotencyKey: string): void => {
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
  };

  // Requests that a tool's check, executor or lookup makes; tests read it to prove a call reached no backend.
  let businessRequests = 0;
  // The W3C trace context of the latest business requests (test mode): the traces test reads it.
  const receivedTraceparents: string[] = [];
  /** The routes a tool's backend calls: their ids must percent-decode, and each request is counted. */
  const businessRoute: MiddlewareHandler = async (c, next) => {
    try {
      // Hono decodes ids leniently; a malformed one is the caller's mistake, not something to guess at.
      decodeURIComponent(new URL(c.req.url).pathname);
    } catch {
      throw new HttpError(
        400,
        'INVALID_REQUEST',
        'The path is not valid percent-encoding; encode ids with encodeURIComponent.',
      );
    }
    businessRequests++;
    const traceparent = c.req.header('traceparent');
    if (testMode && traceparent !== undefined) {
      receivedTraceparents.push(`${c.req.method} ${new URL(c.req.url).pathname} ${traceparent}`);
      receivedTraceparents.splice(0, Math.max(0, receivedTraceparents.length - 50));
    }
    await next();
  };

  const app = new Hono<{ Bindings: HttpBindings }>({ strict: false });
  app.onError((error, c) => {
    // A client that hung up mid-request has nobody left to answer; that is not a failure of ours.
    if (c.env.outgoing.destroyed) return RESPONSE_ALREADY_SENT;
    if (error instanceof HttpError) return errorResponse(c, error);
    console.error('orders-service: unexpected error', error);
    return errorResponse(
      c,
      new HttpError(
        500,
        'INTERNAL_ERROR',
        'The orders service failed unexpectedly; whether anything was applied is unknown. Look the key up with GET /refunds/by-key/:key.',
      ),
    );
  });
  // Unknown paths and known paths with another method alike.
  app.notFound((c) =>
    errorResponse(
      c,
      new HttpError(
        404,
        'NOT_FOUND',
        'No such route. Routes: GET /orders/:orderId, POST /orders/:orderId/refunds, GET /refunds/by-key/:key, GET /refunds, GET /health.',
      ),
    ),
  );

  app.get('/health', (c) => c.json({ status: 'ok' }));

  app.get('/orders/:orderId', businessRoute, (c) => {
    const orderId = c.req.param('orderId');
    const order = database.getOrder({ orderId });
    if (!order) {
      throw new HttpError(
        404,
        'ORDER_NOT_FOUND',
        `Order ${orderId} does not exist. Check the order id with the customer.`,
      );
    }
    return c.json(orderBody(order));
  });

  app.post('/orders/:orderId/refunds', businessRoute, async (c) => {
    const orderId = c.req.param('orderId');
    const idempotencyKey = idempotencyKeyOf(c);
    if (testMode) refundRequestsByKey.set(idempotencyKey, (refundRequestsByKey.get(idempotencyKey) ?? 0) + 1);
    simulateOutage(idempotencyKey);
    const body = parseWith(refundBodySchema, await readJsonBody(c.req.raw), 'refund request');
    const owner = database.getOrder({ orderId })?.customerId;
    const verdict = await verifyCredential({
      credential: bearerCredentialOf(c),
      operation: 'refund',
      orderId,
      amountCents: body.amount_cents,
      currency: body.currency,
      reason: body.reason,
      idempotencyKey,
      ...(body.customer_id !== undefined ? { customerId: body.customer_id } : {}),
      ...(owner !== undefined ? { orderOwner: owner } : {}),
    });
    if (!verdict.accepted) throw new HttpError(verdict.status, verdict.code, verdict.message);
    if (body.customer_id !== undefined && owner !== undefined && body.customer_id !== owner) {
      throw new HttpError(
        403,
        'ORDER_NOT_OWNED',
        `Order ${orderId} is not an order of customer ${body.customer_id}. Nothing was applied.`,
      );
    }
    simulateConcurrentRefund(orderId, idempotencyKey);
    const result = database.applyRefund({
      orderId,
      amountCents: body.amount_cents,
      currency: body.currency,
      reason: body.reason,
      idempotencyKey,
      refundId: `RF-${randomUUID()}`,
      createdAt: new Date().toISOString(),
    });
    if (result.outcome === 'conflict') throw new HttpError(409, 'IDEMPOTENCY_CONFLICT', result.message);
    // A refund and a refusal are both recorded under the key, and the fault fires only after that
    // commit, which is exactly the case it simulates: the outcome is fixed, the caller never hears of
    // it, and a retry with the same key must answer it again.
    if (consumeFault({ idempotencyKey, fault: 'loseResponseAfterCommit' })) return loseResponse(c);
    if (result.outcome === 'rejected') {
      const status = result.code === 'ORDER_NOT_FOUND' ? 404 : 422;
      return c.json({ code: result.code, message: result.message }, status, replayedHeader(result.replayed));
    }
    const replayed = result.outcome === 'replayed';
    // Committed, then answered with a body that breaks the service's own contract (no refund_id).
    if (consumeAnswerFault(idempotencyKey, 'malformedResponse')) {
      const { refund_id: _missing, ...malformed } = refundBody(result.refund);
      return c.json(malformed, replayed ? 200 : 201);
    }
    return c.json(refundBody(result.refund), replayed ? 200 : 201, replayedHeader(replayed));
  });

  app.get('/refunds/by-key/:idempotencyKey', businessRoute, (c) => {
    const idempotencyKey = c.req.param('idempotencyKey');
    if (consumeFault({ idempotencyKey, fault: 'lookupUnavailable' })) {
      throw new HttpError(
        503,
        'UPSTREAM_UNAVAILABLE',
        'The orders service cannot look up refunds right now; whether the key was applied is unknown. Ask again later.',
      );
    }
    const refund = database.findRefundByKey({ idempotencyKey });
    if (refund && consumeAnswerFault(idempotencyKey, 'wrongReadBack')) {
      // Test mode only: a read-back that disagrees with what was applied.
      return c.json(refundBody({ ...refund, amountCents: refund.amountCents + 1 }));
    }
    if (refund) return c.json(refundBody(refund));
    const refusal = database.findRefusalByKey({ idempotencyKey });
    if (refusal) return c.json(refusalBody(refusal));
    throw new HttpError(
      404,
      'NOT_APPLIED',
      `No refund was applied with idempotency key ${idempotencyKey}; sending it again applies it at most once.`,
    );
  });

  app.get('/refunds', (c) => {
    const refunds = database.listRefunds({ orderId: c.req.query('order_id') });
    return c.json({ count: refunds.length, refunds: refunds.map(refundBody) });
  });

  app.get('/stats', (c) => {
    // In test mode, `?idempotency_key=K` adds how many refund requests that key made (every attempt).
    const key = c.req.query('idempotency_key');
    return c.json({
      business_requests: businessRequests,
      ...(testMode && key !== undefined ? { refund_requests: refundRequestsByKey.get(key) ?? 0 } : {}),
      ...(testMode ? { received_traceparents: receivedTraceparents } : {}),
    });
  });

  // Without testMode these routes do not exist at all: nobody who reaches the port can arm a lost
  // response or an outage for someone's refund, or wipe the data.
  if (testMode) {
    app.post('/faults', async (c) => {
      const body = parseWith(faultBodySchema, await readJsonBody(c.req.raw), 'fault switches');
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
        wrongReadBack: body.wrong_read_back ?? current.wrongReadBack,
      };
      answerFaults.set(body.idempotency_key, answers);
      return c.json({
        idempotency_key: body.idempotency_key,
        lose_response_after_commit: switches.loseResponseAfterCommit,
        unavailable: switches.unavailable,
        lookup_unavailable: switches.lookupUnavailable,
        malformed_response: answers.malformedResponse,
        concurrent_refund: answers.concurrentRefund,
        wrong_read_back: answers.wrongReadBack,
      });
    });
    app.post('/admin/reset', (c) => {
      database.reset();
      answerFaults.clear();
      refundRequestsByKey.clear();
      return c.json({ status: 'reset' });
    });
  }

  // The service also runs inside test processes: it must not swap their global Request and Response
  // (node-server's default). A request without a Host header is served as if sent to 127.0.0.1.
  const listener = getRequestListener(app.fetch, { hostname: '127.0.0.1', overrideGlobalObjects: false });
  return createServer((request, response) => void listener(request, response));
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
