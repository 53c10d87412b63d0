// What a chaos run will ask for, decided before anything runs: the intents (a refund each, with
// its own intent id), the fault switches armed on some of them, all drawn from one seed so that a
// run's plan can be reproduced with `--seed`. Pure: no I/O.

/** A pseudo-random draw in [0, 1); deterministic for one seed. */
export type Random = () => number;

/** mulberry32: a small, well-mixed 32-bit generator, enough to reproduce a plan from its seed. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A whole number in [low, high], both included. */
export function drawBetween(random: Random, low: number, high: number): number {
  return low + Math.floor(random() * (high - low + 1));
}

/**
 * The fault switches armed for one intent's idempotency key, and why each is there. With the
 * executor's default retry (4 attempts, then a lookup by key), each profile takes another path:
 */
export const faultProfiles = {
  /** attempt 1 commits and loses its answer; attempt 2 replays the stored refund. */
  'lost-once': { loseResponseAfterCommit: 1, unavailable: 0 },
  /** two 503s, then the refund applies. */
  'unavailable-twice': { loseResponseAfterCommit: 0, unavailable: 2 },
  /** attempt 1 commits and loses its answer, attempts 2-4 get 503: the lookup by key must find the refund. */
  'lost-then-unavailable': { loseResponseAfterCommit: 1, unavailable: 3 },
  /** every attempt commits (or replays) and loses its answer: the lookup by key must find the refund. */
  'lost-every-attempt': { loseResponseAfterCommit: 4, unavailable: 0 },
  /** more 503s than one run's attempts: the run answers UPSTREAM_UNAVAILABLE (effect none), the agent retries. */
  'unavailable-beyond-retries': { loseResponseAfterCommit: 0, unavailable: 5 },
} as const satisfies Record<string, { loseResponseAfterCommit: number; unavailable: number }>;

/** The name of a fault profile, or `none`. */
export type FaultProfileName = keyof typeof faultProfiles | 'none';

/** An order refunds may draw on, as the orders service reports it before the run. */
export interface PlannableOrder {
  orderId: string;
  currency: 'BRL' | 'USD';
  refundableCents: number;
}

/** The refund arguments the model "produced" for one intent. */
export interface RefundArguments {
  order_id: string;
  amount_cents: number;
  currency: 'BRL' | 'USD';
  reason: 'damaged' | 'not_delivered' | 'customer_request';
}

/** One refund the agent must get applied exactly once. */
export interface ChaosIntent {
  /** Position in the plan (0-based). */
  index: number;
  intentId: string;
  /** `autonomous`: runs without a human; `approval`: waits, across a server restart, for an approver. */
  kind: 'autonomous' | 'approval';
  caller: string;
  arguments: RefundArguments;
  faults: FaultProfileName;
}

/** The largest refund the plan draws: small, so the seed orders last for thousands of intents. */
const largestAmountCents = 500;
const reasons: readonly RefundArguments['reason'][] = ['damaged', 'not_delivered', 'customer_request'];

/**
 * Plans `total` intents, of which the last `approvals` need approval. Intents are spread round-robin
 * over the orders, each amount at most its order's refundable balance divided by the intents on that
 * order, so every intent can apply even if all do. Throws when the orders cannot cover one cent each.
 */
export function planChaosIntents(input: {
  total: number;
  approvals: number;
  /** The share of intents (0..1) that get a fault profile; approvals included. */
  faultShare: number;
  orders: readonly PlannableOrder[];
  callers: { autonomous: string; approvee: string };
  random: Random;
}): ChaosIntent[] {
  const { total, approvals, orders, random } = input;
  if (orders.length === 0) throw new Error('planChaosIntents: no orders to refund');
  if (approvals > total) throw new Error(`planChaosIntents: ${approvals} approvals among ${total} intents`);
  const perOrder = orders.map((_order, position) => Math.ceil((total - position) / orders.length));
  const caps = orders.map((order, position) =>
    Math.min(largestAmountCents, Math.floor(order.refundableCents / Math.max(1, perOrder[position]!))),
  );
  const short = orders.find((_order, position) => caps[position]! < 1);
  if (short) {
    throw new Error(
      `${total} intents need at least one cent each, but ${short.orderId} has only ${short.refundableCents} ` +
        `refundable cents for ${perOrder[orders.indexOf(short)]} intents; run fewer intents.`,
    );
  }
  const profileNames = Object.keys(faultProfiles) as (keyof typeof faultProfiles)[];
  // A refund that needs approval gets only faults its run resolves by itself: beyond the retries, the
  // agent's re-proposal would start a new run that needs a second human approval, which the
  // autonomous refunds' re-runs already exercise without the wait.
  const inRunProfiles = profileNames.filter((name) => name !== 'unavailable-beyond-retries');
  return Array.from({ length: total }, (_unused, index): ChaosIntent => {
    const position = index % orders.length;
    const order = orders[position]!;
    const kind = index >= total - approvals ? 'approval' : 'autonomous';
    const faulted = random() < input.faultShare;
    return {
      index,
      intentId: `chaos-intent-${index + 1}`,
      kind,
      caller: kind === 'approval' ? input.callers.approvee : input.callers.autonomous,
      arguments: {
        order_id: order.orderId,
        amount_cents: drawBetween(random, 1, caps[position]!),
        currency: order.currency,
        reason: reasons[drawBetween(random, 0, reasons.length - 1)]!,
      },
      faults: faulted ? pick(random, kind === 'approval' ? inRunProfiles : profileNames) : 'none',
    };
  });
}

function pick<T>(random: Random, choices: readonly T[]): T {
  return choices[drawBetween(random, 0, choices.length - 1)]!;
}
