import { z } from 'zod';

/** An order as the service reports it; `refundableCents` is what a refund may still take. */
export type Order = {
  orderId: string;
  customerId: string;
  totalCents: number;
  refundedCents: number;
  refundableCents: number;
  currency: 'BRL' | 'USD';
  /** The customer's own note on the order, or null: text a customer wrote, never an instruction. */
  note: string | null;
};

/** A refund the service applied; `remainingRefundableCents` is the order's balance right after it, fixed at that moment. */
export type Refund = {
  refundId: string;
  orderId: string;
  amountCents: number;
  currency: 'BRL' | 'USD';
  reason: 'damaged' | 'not_delivered' | 'customer_request';
  idempotencyKey: string;
  remainingRefundableCents: number;
  createdAt: string;
};

/**
 * What the service recorded under an idempotency key: the refund it applied, the business refusal it
 * answered (sent again, the key gets that refusal again), or nothing at all.
 */
export type RefundKeyRecord =
  | { status: 'applied'; refund: Refund }
  | { status: 'refused'; code: string; message: string }
  | { status: 'not-seen' };

/**
 * The answer to a refund request that took effect: `replayed` is true when the key had already been
 * applied and nothing ran again; `response` is the service's answer as it came.
 */
export type RefundOutcome = { refund: Refund; replayed: boolean; response: OrdersResponse };

/**
 * The service's answer as it came, before this client reads it: the status (null when no answer
 * arrived), the body (parsed JSON, else the text, else null) and, without an answer, why. It is what
 * the orders tools' output adapters map and what `toolgate contract record` writes into a fixture.
 */
export type OrdersResponse = { status: number | null; body: unknown; error?: string };

/** The fault switches armed for one idempotency key (test helper). */
export type OrdersFaultSwitches = {
  loseResponseAfterCommit: number;
  unavailable: number;
  lookupUnavailable: number;
  malformedResponse: number;
  concurrentRefund: number;
  wrongReadBack: number;
};

/** The service answered with a refusal (a business rule, a conflict, a bad request): nothing was applied by this request. */
export class OrdersRejection extends Error {
  override readonly name = 'OrdersRejection';
  readonly kind = 'rejection' as const;
  readonly transient = false as const;
  /** SCREAMING_SNAKE code from the service, e.g. ORDER_NOT_FOUND, IDEMPOTENCY_CONFLICT. */
  readonly code: string;
  readonly status: number;
  /** The service's answer as it came. */
  readonly response: OrdersResponse;

  constructor({ code, message, response }: { code: string; message: string; response: OrdersResponse }) {
    super(message);
    this.code = code;
    this.status = response.status ?? 0;
    this.response = response;
  }
}

/** The service could not be reached or did not answer usably (503, refused, reset, hang-up, timeout): whether a write took effect is unknown until the key is looked up. */
export class OrdersUnavailable extends Error {
  override readonly name = 'OrdersUnavailable';
  readonly kind = 'unavailable' as const;
  readonly transient = true as const;
  readonly code = 'UPSTREAM_UNAVAILABLE' as const;
  /** The HTTP status when the service answered (e.g. 503), null when no answer arrived. */
  readonly status: number | null;
  /** The service's answer as it came: a 5xx with its body, or no answer (`status` null) and why. */
  readonly response: OrdersResponse;

  constructor({ message, response, cause }: { message: string; response: OrdersResponse; cause?: unknown }) {
    super(message, cause === undefined ? undefined : { cause });
    this.status = response.status;
    this.response = response;
  }
}

/**
 * The service answered a success whose body breaks its contract (a field missing, not JSON): the
 * request took effect, so it is neither retried nor reported as not applied; `body` is what came back.
 */
export class OrdersContractViolation extends Error {
  override readonly name = 'OrdersContractViolation';
  readonly kind = 'contract-violation' as const;
  readonly transient = false as const;
  readonly status: number;
  readonly body: unknown;
  /** The service's answer as it came. */
  readonly response: OrdersResponse;

  constructor({ message, status, body }: { message: string; status: number; body: unknown }) {
    super(message);
    this.status = status;
    this.body = body;
    this.response = { status, body };
  }
}

/** True for an OrdersContractViolation from any copy of this module; compares `kind`, never uses instanceof. */
export function isOrdersContractViolation(error: unknown): error is OrdersContractViolation {
  return (
    typeof error === 'object' && error !== null && (error as { kind?: unknown }).kind === 'contract-violation'
  );
}

/** True for an OrdersRejection from any copy of this module; compares `kind`, never uses instanceof. */
export function isOrdersRejection(error: unknown): error is OrdersRejection {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { kind?: unknown }).kind === 'rejection' &&
    typeof (error as { code?: unknown }).code === 'string'
  );
}

/** True for an OrdersUnavailable from any copy of this module; compares `kind`, never uses instanceof. */
export function isOrdersUnavailable(error: unknown): error is OrdersUnavailable {
  return typeof error === 'object' && error !== null && (error as { kind?: unknown }).kind === 'unavailable';
}

/**
 * The service's answer to `request` as it came, whether this client read it as a success or threw it
 * as a refusal, an outage (no answer: `status` null) or a contract violation. Any other error is thrown.
 */
export async function responseOf(
  request: () => Promise<{ response: OrdersResponse }>,
): Promise<OrdersResponse> {
  try {
    return (await request()).response;
  } catch (error) {
    if (isOrdersRejection(error) || isOrdersUnavailable(error) || isOrdersContractViolation(error)) {
      return error.response;
    }
    throw error;
  }
}

/** A typed client for the orders service; it never retries on its own, so the caller decides what a retry means. */
export type OrdersApiClient = {
  getOrder(input: { orderId: string }): Promise<Order>;
  /** `GET /orders/:orderId`'s answer as it came, whatever it is; never throws, even when no answer arrives. */
  getOrderResponse(input: { orderId: string }): Promise<OrdersResponse>;
  refund(input: {
    orderId: string;
    amountCents: number;
    currency: 'BRL' | 'USD';
    reason: 'damaged' | 'not_delivered' | 'customer_request';
    idempotencyKey: string;
    credential?: string;
    /** The end user the refund is made for, when the call acts for one: the service refuses another's order. */
    customerId?: string;
  }): Promise<RefundOutcome>;
  /** The refund applied with this key, or null when the service says the key was never applied. */
  findRefundByKey(input: { idempotencyKey: string }): Promise<Refund | null>;
  /** What the service recorded under the key: applied (with the refund), refused (with its code), or not seen. */
  lookupRefundKey(input: { idempotencyKey: string }): Promise<RefundKeyRecord>;
  listRefunds(input?: { orderId?: string }): Promise<Refund[]>;
  refundCount(input?: { orderId?: string }): Promise<number>;
  /** Test helper: how many order reads, refund requests and key lookups the service has answered. */
  businessRequestCount(): Promise<number>;
  /** Test helper: how many refund requests (every attempt) came with this key (only when the service runs with --test-mode). */
  refundRequestCount(input: { idempotencyKey: string }): Promise<number>;
  /** Test helper: arms fault switches for one key; omitted switches keep their current count (only when the service runs with --test-mode). */
  setFaults(input: {
    idempotencyKey: string;
    loseResponseAfterCommit?: number;
    unavailable?: number;
    lookupUnavailable?: number;
    /** Commit, then answer with a body that lacks `refund_id`. */
    malformedResponse?: number;
    /** Just before the refund, another one takes the order's whole refundable balance. */
    concurrentRefund?: number;
    /** A lookup of the key answers a refund of one cent more than was applied: a read-back that disagrees. */
    wrongReadBack?: number;
  }): Promise<OrdersFaultSwitches>;
  /** Test helper: restores the seed orders and clears refunds and faults (only when the service runs with --test-mode). */
  reset(): Promise<void>;
};

const currencySchema = z.enum(['BRL', 'USD']);

const orderSchema = z
  .object({
    order_id: z.string(),
    customer_id: z.string(),
    total_cents: z.int(),
    refunded_cents: z.int(),
    refundable_cents: z.int(),
    currency: currencySchema,
    note: z.string().nullable(),
  })
  .transform((body): Order => ({
    orderId: body.order_id,
    customerId: body.customer_id,
    totalCents: body.total_cents,
    refundedCents: body.refunded_cents,
    refundableCents: body.refundable_cents,
    currency: body.currency,
    note: body.note,
  }));

const refundSchema = z
  .object({
    refund_id: z.string(),
    order_id: z.string(),
    amount_cents: z.int(),
    currency: currencySchema,
    reason: z.enum(['damaged', 'not_delivered', 'customer_request']),
    idempotency_key: z.string(),
    remaining_refundable_cents: z.int(),
    created_at: z.string(),
  })
  .transform((body): Refund => ({
    refundId: body.refund_id,
    orderId: body.order_id,
    amountCents: body.amount_cents,
    currency: body.currency,
    reason: body.reason,
    idempotencyKey: body.idempotency_key,
    remainingRefundableCents: body.remaining_refundable_cents,
    createdAt: body.created_at,
  }));

const refundRefusalSchema = z.object({
  status: z.literal('refused'),
  idempotency_key: z.string(),
  code: z.string(),
  message: z.string(),
});

const refundListSchema = z.object({
  count: z.int(),
  refunds: z.array(refundSchema),
});

const faultSwitchesSchema = z
  .object({
    lose_response_after_commit: z.int(),
    unavailable: z.int(),
    lookup_unavailable: z.int(),
    malformed_response: z.int(),
    concurrent_refund: z.int(),
    wrong_read_back: z.int(),
  })
  .transform((body): OrdersFaultSwitches => ({
    loseResponseAfterCommit: body.lose_response_after_commit,
    unavailable: body.unavailable,
    lookupUnavailable: body.lookup_unavailable,
    malformedResponse: body.malformed_response,
    concurrentRefund: body.concurrent_refund,
    wrongReadBack: body.wrong_read_back,
  }));

const errorBodySchema = z.object({ code: z.string(), message: z.string() });

type RawResponse = { status: number; headers: Headers; body: unknown };

type Request = { method: 'GET' | 'POST'; path: string; body?: unknown; headers?: Record<string, string> };

/** Creates a client for the orders service at `baseUrl`; every request gives up after `timeoutMs` (default 5000) with OrdersUnavailable. */
export function createOrdersApiClient({
  baseUrl,
  timeoutMs = 5000,
  requestHeaders,
}: {
  baseUrl: string;
  timeoutMs?: number;
  /** Headers added to every request, read at each one (e.g. toolgate's `traceHeaders`: the W3C trace context). */
  requestHeaders?: () => Record<string, string>;
}): OrdersApiClient {
  const root = baseUrl.replace(/\/+$/, '');

  /** The request's answer as it came, or an OrdersUnavailable (never thrown) saying why none arrived. */
  async function exchange({
    method,
    path,
    body,
    headers: given = {},
  }: Request): Promise<RawResponse | OrdersUnavailable> {
    const headers = requestHeaders ? { ...requestHeaders(), ...given } : given;
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${root}${path}`, {
        method,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      // Read inside the try: a connection reset can also cut the body short.
      text = await response.text();
    } catch (error) {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      return new OrdersUnavailable({
        response: {
          status: null,
          body: null,
          error: timedOut ? `no answer within ${timeoutMs} ms` : describeNetworkError(error),
        },
        cause: error,
        message: timedOut
          ? `The orders service did not answer ${method} ${path} within ${timeoutMs} ms; whether it took effect is unknown.`
          : `The orders service could not be reached or dropped the connection on ${method} ${path} (${describeNetworkError(error)}); whether it took effect is unknown.`,
      });
    }
    let parsed: unknown = null;
    if (text !== '') {
      try {
        parsed = JSON.parse(text) as unknown;
      } catch {
        parsed = text;
      }
    }
    return { status: response.status, headers: response.headers, body: parsed };
  }

  /** The request's answer; throws OrdersUnavailable when none arrived or the service answered 5xx. */
  async function send(request: Request): Promise<RawResponse> {
    const raw = await exchange(request);
    if (isOrdersUnavailable(raw)) throw raw;
    if (raw.status >= 500) {
      const error = errorBodySchema.safeParse(raw.body);
      throw new OrdersUnavailable({
        response: { status: raw.status, body: raw.body },
        message: error.success
          ? error.data.message
          : `The orders service answered ${raw.status} on ${request.method} ${request.path}.`,
      });
    }
    return raw;
  }

  function rejectionFrom(raw: RawResponse): OrdersRejection {
    const error = errorBodySchema.safeParse(raw.body);
    return new OrdersRejection({
      response: { status: raw.status, body: raw.body },
      code: error.success ? error.data.code : `HTTP_${raw.status}`,
      message: error.success
        ? error.data.message
        : `The orders service answered ${raw.status} without an error body.`,
    });
  }

  function expectSuccess<T>(raw: RawResponse, schema: z.ZodType<T>, what: string): T {
    if (raw.status < 200 || raw.status >= 300) throw rejectionFrom(raw);
    const result = schema.safeParse(raw.body);
    // A success we cannot read is the service breaking its contract, not an outage: the request took
    // effect, and a retry would only meet the same answer.
    if (!result.success) {
      throw new OrdersContractViolation({
        status: raw.status,
        body: raw.body,
        message: `The orders service answered ${what} with a body that does not match its contract: ${z.prettifyError(result.error)}`,
      });
    }
    return result.data;
  }

  async function lookupRefundKey({ idempotencyKey }: { idempotencyKey: string }): Promise<RefundKeyRecord> {
    const raw = await send({
      method: 'GET',
      path: `/refunds/by-key/${encodeURIComponent(idempotencyKey)}`,
    });
    if (raw.status === 404) {
      const rejection = rejectionFrom(raw);
      // Only NOT_APPLIED means "never seen"; any other 404 (a wrong base URL) must not pass for it.
      if (rejection.code === 'NOT_APPLIED') return { status: 'not-seen' };
      throw rejection;
    }
    // A recorded refusal says so in its body; anything else at 200 must be the applied refund.
    const body = raw.body as { status?: unknown } | null;
    if (typeof body === 'object' && body !== null && body.status === 'refused') {
      const refusal = expectSuccess(raw, refundRefusalSchema, 'GET /refunds/by-key/:key');
      return { status: 'refused', code: refusal.code, message: refusal.message };
    }
    return { status: 'applied', refund: expectSuccess(raw, refundSchema, 'GET /refunds/by-key/:key') };
  }

  return {
    async getOrder({ orderId }) {
      const raw = await send({
        method: 'GET',
        path: `/orders/${encodeURIComponent(orderId)}`,
      });
      return expectSuccess(raw, orderSchema, 'GET /orders/:orderId');
    },

    async getOrderResponse({ orderId }) {
      const raw = await exchange({ method: 'GET', path: `/orders/${encodeURIComponent(orderId)}` });
      return isOrdersUnavailable(raw) ? raw.response : { status: raw.status, body: raw.body };
    },

    async refund({ orderId, amountCents, currency, reason, idempotencyKey, credential, customerId }) {
      const headers: Record<string, string> = {
        'idempotency-key': idempotencyKey,
      };
      if (credential !== undefined) headers.authorization = `Bearer ${credential}`;
      const raw = await send({
        method: 'POST',
        path: `/orders/${encodeURIComponent(orderId)}/refunds`,
        headers,
        body: {
          amount_cents: amountCents,
          currency,
          reason,
          ...(customerId !== undefined ? { customer_id: customerId } : {}),
        },
      });
      const refund = expectSuccess(raw, refundSchema, 'POST /orders/:orderId/refunds');
      return {
        refund,
        replayed: raw.headers.get('idempotent-replayed') === 'true',
        response: { status: raw.status, body: raw.body },
      };
    },

    async findRefundByKey({ idempotencyKey }) {
      const found = await lookupRefundKey({ idempotencyKey });
      return found.status === 'applied' ? found.refund : null;
    },

    lookupRefundKey,

    async listRefunds({ orderId } = {}) {
      const query = orderId === undefined ? '' : `?order_id=${encodeURIComponent(orderId)}`;
      const raw = await send({ method: 'GET', path: `/refunds${query}` });
      return expectSuccess(raw, refundListSchema, 'GET /refunds').refunds;
    },

    async refundCount({ orderId } = {}) {
      const query = orderId === undefined ? '' : `?order_id=${encodeURIComponent(orderId)}`;
      const raw = await send({ method: 'GET', path: `/refunds${query}` });
      return expectSuccess(raw, refundListSchema, 'GET /refunds').count;
    },

    async businessRequestCount() {
      const raw = await send({ method: 'GET', path: '/stats' });
      return expectSuccess(raw, z.object({ business_requests: z.int() }), 'GET /stats').business_requests;
    },

    async refundRequestCount({ idempotencyKey }) {
      const raw = await send({
        method: 'GET',
        path: `/stats?idempotency_key=${encodeURIComponent(idempotencyKey)}`,
      });
      return expectSuccess(raw, z.object({ refund_requests: z.int() }), 'GET /stats').refund_requests;
    },

    async setFaults({
      idempotencyKey,
      loseResponseAfterCommit,
      unavailable,
      lookupUnavailable,
      malformedResponse,
      concurrentRefund,
      wrongReadBack,
    }) {
      const raw = await send({
        method: 'POST',
        path: '/faults',
        body: {
          idempotency_key: idempotencyKey,
          lose_response_after_commit: loseResponseAfterCommit,
          unavailable,
          lookup_unavailable: lookupUnavailable,
          malformed_response: malformedResponse,
          concurrent_refund: concurrentRefund,
          wrong_read_back: wrongReadBack,
        },
      });
      return expectSuccess(raw, faultSwitchesSchema, 'POST /faults');
    },

    async reset() {
      const raw = await send({ method: 'POST', path: '/admin/reset' });
      if (raw.status !== 200) throw rejectionFrom(raw);
    },
  };
}

function describeNetworkError(error: unknown): string {
  // fetch wraps socket errors as TypeError("fetch failed") with the real reason in `cause`.
  const cause =
    error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}
