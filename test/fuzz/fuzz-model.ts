// The fuzz campaign's reference model: from docs/design.md's path of a call, what toolgate must answer
// to a proposal (given its session's history so far and the orders as they are), and how many
// requests each answer costs the orders service. Written apart from toolgate's own code: it reads
// the policy file and the tool contracts (the specification), and keeps its maps in `Map`s.
// Pure: no I/O.
import type { AnyToolContract, PolicyFileInput } from 'toolgate';
import { riskRank } from 'toolgate';

/** An order as the model needs it, read from the orders service before the run. */
export interface ModelOrder {
  currency: string;
  refundableCents: number;
  customerId: string;
}

/** The codes a session answers with before any call workflow starts. */
export const sessionRefusals: ReadonlySet<string> = new Set([
  'UNAUTHENTICATED_CALLER',
  'STEP_LIMIT',
  'LOOP_DETECTED',
  'CIRCUIT_OPEN',
  'SESSION_CLOSED',
  'CONTEXT_MISMATCH',
  // The client's own refusal of its harness's context: no session hears of it.
  'CONTEXT_INVALID',
]);

/** Codes given before step 6 (business checks): such a call reaches no backend. */
export const rejectedBeforeChecks: ReadonlySet<string> = new Set([
  ...sessionRefusals,
  'UNKNOWN_TOOL',
  'TOOL_DISABLED',
  'TOOL_NOT_ALLOWED',
  'SESSION_REQUIRED',
  'INVALID_JSON',
  'BOUND_PARAMETER_SENT',
  'INVALID_ARGUMENTS',
  'IDEMPOTENCY_CONFLICT',
  'POLICY_LIMIT',
  'PERMISSION_DENIED',
]);

/** The client's caps (docs/design.md, "In the client"). */
const maxToolNameLength = 200;
const maxArgumentsBytes = 256 * 1024;
/** Arguments nested deeper than this (arrays and objects, the outer object being 1) are INVALID_JSON. */
const maxArgumentsDepth = 64;
/** The session workflow's defaults when the caller's policy sets none (docs/concepts.md, "Sessions": per caller's `session`). */
const sessionDefaults = { stepBudget: 25, loopLimit: 3, circuitThreshold: 3 };

/**
 * A context as docs/on-behalf-of.md specifies it: an object of `onBehalfOf`, `tenant` (1 to 128
 * printable characters), `channel` (kebab-case, at most 64) and `claims` (at most 16, each named
 * with a letter then letters, digits, `_`, `-`, `.`, each 1 to 256 printable characters); nothing
 * else. Its key is the same for two contexts that say the same (an empty claims object says nothing).
 */
export function modelContext(value: unknown): { key: string; onBehalfOf?: string } | undefined {
  if (value === undefined) return { key: '{}' };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const fields = new Map<string, unknown>(Object.entries(value as Record<string, unknown>));
  const known = new Set(['onBehalfOf', 'tenant', 'channel', 'claims']);
  if ([...fields.keys()].some((field) => !known.has(field))) return undefined;
  const printable = (text: unknown, max: number): text is string =>
    typeof text === 'string' &&
    text.length >= 1 &&
    text.length <= max &&
    [...text].every((char) => !/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(char));
  const said: [string, unknown][] = [];
  for (const field of ['onBehalfOf', 'tenant']) {
    const text = fields.get(field);
    if (text === undefined) continue;
    if (!printable(text, 128)) return undefined;
    said.push([field, text]);
  }
  const channel = fields.get('channel');
  if (channel !== undefined) {
    if (typeof channel !== 'string' || !/^[a-z][a-z0-9-]{0,63}$/.test(channel)) return undefined;
    said.push(['channel', channel]);
  }
  const claims = fields.get('claims');
  if (claims !== undefined) {
    if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return undefined;
    const entries = Object.entries(claims);
    if (entries.length > 16) return undefined;
    for (const [name, text] of entries) {
      if (!/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/.test(name) || !printable(text, 256)) return undefined;
    }
    if (entries.length > 0) said.push(['claims', entries.sort(([a], [b]) => (a < b ? -1 : 1))]);
  }
  said.sort(([a], [b]) => (a < b ? -1 : 1));
  const onBehalfOf = fields.get('onBehalfOf');
  return { key: JSON.stringify(said), ...(typeof onBehalfOf === 'string' ? { onBehalfOf } : {}) };
}

/**
 * Backend requests a call costs, from its tool and its answer, per the orders implementations
 * (examples/orders/orders-implementations.ts): `get_order` has only an executor (one GET);
 * `refund_order`'s check is one GET, its preview one GET, its executor one POST and its read-back
 * one GET by key. `undefined` when the answer does not fix the number (an outage retries).
 */
export function expectedBackendRequests(input: {
  tool: string;
  code: string;
  joined: boolean;
  /** The call acts for an end user: only then may `get_order` answer ORDER_NOT_OWNED (from its one GET). */
  actsForEndUser: boolean;
}): number | undefined {
  const { tool, code } = input;
  if (rejectedBeforeChecks.has(code)) return 0;
  switch (tool) {
    case 'get_order':
      // The executor's one GET answers all three: the adapter refuses another end user's order.
      if (code === 'ORDER_NOT_OWNED') return input.actsForEndUser ? 1 : undefined;
      return code === 'OK' || code === 'ORDER_NOT_FOUND' ? 1 : undefined;
    case 'refund_order':
      switch (code) {
        case 'ORDER_NOT_FOUND':
        case 'ORDER_NOT_OWNED':
        case 'CURRENCY_MISMATCH':
        case 'AMOUNT_EXCEEDS_REFUNDABLE':
          return 1; // the check's GET refused it
        case 'APPROVAL_PENDING':
          // The check's GET and the preview's GET; a proposal that joined a waiting run ran nothing.
          return input.joined ? 0 : 2;
        default:
          return undefined; // OK or an outage: not expected without approval
      }
    case 'echo_shape':
    case 'explode':
      return 0; // test tools without a backend
    default:
      return undefined;
  }
}

/** What the model expects for one proposal: a code, and whether it joins a run still waiting. */
export interface Expectation {
  code: string;
  joined: boolean;
}

/** One session's counters as docs/concepts.md defines them: step budget, loop guard, circuit breaker. */
export class SessionModel {
  private owner: string | undefined;
  /** The key of the context the session was opened with (its first admitted proposal's). */
  private contextKey: string | undefined;
  private steps = 0;
  private readonly loopCounts = new Map<string, number>();
  private readonly streaks = new Map<string, { code: string; count: number }>();
  private readonly openCircuits = new Set<string>();
  /** Calls of this session waiting for approval (their runs are still open). */
  private readonly waiting = new Set<string>();

  constructor(
    private readonly world: {
      policy: PolicyFileInput;
      contracts: ReadonlyMap<string, AnyToolContract>;
      orders: ReadonlyMap<string, ModelOrder>;
      /** Callers whose proposals are signed with their key. */
      signedCallers: ReadonlySet<string>;
    },
  ) {}

  /** The answer toolgate must give to this proposal now. */
  expect(input: {
    caller: string;
    tool: string;
    arguments: string | Record<string, unknown>;
    context?: unknown;
    callId: string;
  }): Expectation {
    const refuse = (code: string): Expectation => ({ code, joined: false });
    // The client refuses a context it cannot read before anything starts.
    const context = modelContext(input.context);
    if (!context) return refuse('CONTEXT_INVALID');
    // Step 0: signature and ownership first (no step used), then the session's end user (no step
    // either), then budget, loop guard, circuit.
    if (
      !this.world.signedCallers.has(input.caller) ||
      (this.owner !== undefined && this.owner !== input.caller)
    ) {
      return refuse('UNAUTHENTICATED_CALLER');
    }
    if (this.contextKey !== undefined && this.contextKey !== context.key) return refuse('CONTEXT_MISMATCH');
    this.owner ??= input.caller;
    this.contextKey ??= context.key;
    const limits = this.limits();
    this.steps++;
    if (this.steps > limits.stepBudget) return refuse('STEP_LIMIT');
    const seen = (this.loopCounts.get(input.callId) ?? 0) + 1;
    this.loopCounts.set(input.callId, seen);
    if (seen > limits.loopLimit) return refuse('LOOP_DETECTED');
    const tool = input.tool.slice(0, maxToolNameLength);
    if (this.openCircuits.has(tool)) return refuse('CIRCUIT_OPEN');
    // Admitted: the same call id while its run still waits joins that run.
    if (this.waiting.has(input.callId)) return { code: 'APPROVAL_PENDING', joined: true };
    return { code: this.pipeline({ ...input, onBehalfOf: context.onBehalfOf }), joined: false };
  }

  /**
   * Records the answer toolgate actually gave (not the expected one, so that one wrong answer does
   * not cascade): a final outcome of a run counts toward its tool's circuit, as the call reports it.
   */
  record(input: { tool: string; code: string; ok: boolean; callId: string; joined: boolean }): void {
    if (sessionRefusals.has(input.code) || input.joined) return;
    if (input.code === 'APPROVAL_PENDING') {
      this.waiting.add(input.callId); // not final: nothing is reported to the session yet
      return;
    }
    const tool = input.tool.slice(0, maxToolNameLength);
    if (input.ok) {
      this.streaks.delete(tool);
      return;
    }
    const streak = this.streaks.get(tool);
    const count = streak?.code === input.code ? streak.count + 1 : 1;
    this.streaks.set(tool, { code: input.code, count });
    if (count >= this.limits().circuitThreshold) this.openCircuits.add(tool);
  }

  /** Whether the call id is a run of this session still waiting for approval. */
  isWaiting(callId: string): boolean {
    return this.waiting.has(callId);
  }

  private limits(): typeof sessionDefaults {
    const session = this.owner === undefined ? undefined : this.world.policy.callers[this.owner]?.session;
    return {
      stepBudget: session?.stepBudget ?? sessionDefaults.stepBudget,
      loopLimit: session?.loopLimit ?? sessionDefaults.loopLimit,
      circuitThreshold: session?.circuitThreshold ?? sessionDefaults.circuitThreshold,
    };
  }

  /** Steps 1 to 7 for an admitted proposal that starts a run. */
  private pipeline(input: {
    caller: string;
    tool: string;
    arguments: string | Record<string, unknown>;
    onBehalfOf: string | undefined;
  }): string {
    const callerPolicy = this.world.policy.callers[input.caller];
    // Step 1: the tool (a name cut at the cap is no tool), then the caller's allowlist.
    const contract = input.tool.length > maxToolNameLength ? undefined : this.world.contracts.get(input.tool);
    if (!contract || !callerPolicy) return 'UNKNOWN_TOOL';
    if (!callerPolicy.tools.includes(contract.name)) return 'TOOL_NOT_ALLOWED';
    // Step 2: a JSON object (an empty text is no arguments), within the cap.
    const text = typeof input.arguments === 'string' ? input.arguments : JSON.stringify(input.arguments);
    if (Buffer.byteLength(text, 'utf8') > maxArgumentsBytes) return 'INVALID_JSON';
    let value: unknown = {};
    if (text.trim() !== '') {
      try {
        value = JSON.parse(text);
      } catch {
        return 'INVALID_JSON';
      }
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'INVALID_JSON';
    if (nestingDepth(value) > maxArgumentsDepth) return 'INVALID_JSON';
    // Bound parameters are the host's: the model sending one is refused; the context fills them.
    // The campaign's contexts vary only `onBehalfOf`; a field bound to another source stays empty.
    const bound = Object.entries(contract.boundParameters ?? {});
    if (bound.some(([field]) => Object.hasOwn(value, field))) return 'BOUND_PARAMETER_SENT';
    const filled = bound.flatMap(([field, source]): [string, string][] =>
      source === 'onBehalfOf' && input.onBehalfOf !== undefined ? [[field, input.onBehalfOf]] : [],
    );
    const withBound = { ...value, ...Object.fromEntries(filled) };
    // Step 3: the contract's strict schema.
    const parsed = contract.input.safeParse(withBound);
    if (!parsed.success) return 'INVALID_ARGUMENTS';
    const args = parsed.data;
    // Step 5: per-tool limits, then the approval ceiling.
    const limits = new Map(Object.entries(callerPolicy.limits ?? {})).get(contract.name) ?? {};
    for (const [field, limit] of Object.entries(limits)) {
      const fieldValue = args[field];
      if (typeof fieldValue !== 'number') continue;
      if (
        (limit.max !== undefined && fieldValue > limit.max) ||
        (limit.min !== undefined && fieldValue < limit.min)
      ) {
        return 'POLICY_LIMIT';
      }
    }
    const riskLevel = contract.risk({ args });
    const needsApproval = riskRank(riskLevel) > riskRank(callerPolicy.autonomy);
    const ceiling = callerPolicy.approval?.ceiling;
    if (needsApproval && (ceiling === undefined || riskRank(riskLevel) > riskRank(ceiling))) {
      return 'PERMISSION_DENIED';
    }
    // Steps 6 to 9, per tool, against the orders as they were read before the run.
    return this.outcome({ tool: contract.name, args, needsApproval });
  }

  private outcome(input: { tool: string; args: Record<string, unknown>; needsApproval: boolean }): string {
    const { args } = input;
    switch (input.tool) {
      case 'get_order': {
        const order = this.world.orders.get(args.order_id as string);
        if (!order) return 'ORDER_NOT_FOUND';
        return args.customer_id !== undefined && args.customer_id !== order.customerId
          ? 'ORDER_NOT_OWNED'
          : 'OK';
      }
      case 'refund_order': {
        const order = this.world.orders.get(args.order_id as string);
        if (!order) return 'ORDER_NOT_FOUND';
        if (args.customer_id !== undefined && args.customer_id !== order.customerId) return 'ORDER_NOT_OWNED';
        if (order.currency !== args.currency) return 'CURRENCY_MISMATCH';
        if ((args.amount_cents as number) > order.refundableCents) return 'AMOUNT_EXCEEDS_REFUNDABLE';
        // The campaign's callers may not refund alone: anything else would be a refund.
        return input.needsApproval ? 'APPROVAL_PENDING' : 'OK (a refund applied)';
      }
      case 'echo_shape':
        return args.broken === true ? 'OUTPUT_CONTRACT_VIOLATION' : 'OK';
      case 'explode':
        return 'INTERNAL_ERROR';
      default:
        return `(no model for ${input.tool})`;
    }
  }
}

/** How deeply arrays and objects nest in a parsed JSON value (1 for a flat object); walks with a stack. */
function nestingDepth(value: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 1]];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const [current, depth] = item;
    if (current === null || typeof current !== 'object') continue;
    deepest = Math.max(deepest, depth);
    for (const child of Object.values(current)) pending.push([child, depth + 1]);
  }
  return deepest;
}
