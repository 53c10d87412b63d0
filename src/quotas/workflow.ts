import {
  allHandlersFinished,
  condition,
  continueAsNew,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { QuotaReservation, QuotaReservationRequest, QuotaUsage } from './protocol';
import { quotaUsageQuery, releaseQuotaUpdate, reserveQuotaUpdate } from './protocol';

/** One counted call: when it was reserved (workflow time, ms) and what it moves. */
interface Entry {
  atMs: number;
  amount: number;
  /** The run that reserved it (absent in counters started before runs were kept). */
  runId?: string;
}

/** What a counter carries across continue-as-new: the reservations still within its longest window. */
export interface QuotaInput {
  carried?: { reservations: [string, Entry][] };
  /** Continue as new after this many updates in one run (default 500), besides Temporal's suggestion. */
  continueAsNewAfter?: number;
}

/**
 * The counter of one limit across sessions (`toolgate-quota:<queue>:<scope>:<tool>:<window>`): the
 * calls reserved within a rolling window, each with its amount. A reservation is admitted and counted
 * in one update; a workflow runs its updates one at a time, so concurrent sessions are serialised
 * here and no combination of them can pass the limit. The maxima come with each request (the policy
 * the worker holds now); a reservation asked again is answered from what it holds, never counted
 * twice; a released one no longer counts. Nothing here is trusted for more than counting: the worker
 * that asks decides what a refusal means for the call.
 */
export async function toolgateQuota(input: QuotaInput = {}): Promise<void> {
  const counter = new QuotaCounter(input.carried?.reservations ?? []);

  setHandler(quotaUsageQuery, (limits) => counter.usage(limits));
  setHandler(reserveQuotaUpdate, (request) => counter.reserve(request), { validator: validReservation });
  setHandler(releaseQuotaUpdate, (request) => counter.release(request), { validator: validRelease });

  const limit = input.continueAsNewAfter ?? 500;
  await condition(() => counter.updates >= limit || workflowInfo().continueAsNewSuggested);
  await condition(allHandlersFinished);
  await continueAsNew<typeof toolgateQuota>({
    carried: { reservations: counter.carried() },
    ...(input.continueAsNewAfter !== undefined ? { continueAsNewAfter: input.continueAsNewAfter } : {}),
  });
}

/** A counter's state: the reservations within its longest window, and the rules that change them. */
class QuotaCounter {
  /** Updates handled in this run (the workflow continues as new after its limit). */
  updates = 0;
  private readonly reservations: Map<string, Entry>;
  private longestWindowMs = 0;

  constructor(carried: [string, Entry][]) {
    this.reservations = new Map(carried);
  }

  /** What is used and left within a window, and when the oldest reservation leaves it. */
  usage(limits: { windowMs: number; maxCalls?: number; maxAmount?: number }): QuotaUsage {
    const cutoff = Date.now() - limits.windowMs;
    let calls = 0;
    let amount = 0;
    let oldestMs: number | undefined;
    for (const entry of this.reservations.values()) {
      if (entry.atMs <= cutoff) continue;
      calls++;
      amount += entry.amount;
      oldestMs = oldestMs === undefined ? entry.atMs : Math.min(oldestMs, entry.atMs);
    }
    return {
      calls,
      amount,
      ...(limits.maxCalls !== undefined ? { remainingCalls: Math.max(0, limits.maxCalls - calls) } : {}),
      ...(limits.maxAmount !== undefined ? { remainingAmount: Math.max(0, limits.maxAmount - amount) } : {}),
      ...(oldestMs !== undefined ? { resetsAt: new Date(oldestMs + limits.windowMs).toISOString() } : {}),
    };
  }

  /** Admits and counts a reservation in one step; one asked again is answered from what it holds. */
  reserve(request: QuotaReservationRequest): QuotaReservation {
    this.updates++;
    this.prune(request.windowMs);
    if (this.reservations.has(request.reservationId)) return { ok: true, ...this.usage(request) };
    const now = this.usage(request);
    const tooMany = request.maxCalls !== undefined && now.calls + 1 > request.maxCalls;
    const tooMuch = request.maxAmount !== undefined && now.amount + request.amount > request.maxAmount;
    if (tooMany || tooMuch) return { ok: false, ...now };
    this.reservations.set(request.reservationId, {
      atMs: Date.now(),
      amount: request.amount,
      ...(typeof request.runId === 'string' ? { runId: request.runId } : {}),
    });
    return { ok: true, ...this.usage(request) };
  }

  /**
   * Only the run that reserved releases: a later run of the same write, which found the room held
   * (its earlier run's effect unknown), never frees it, whatever that run ends with.
   */
  release(request: QuotaRelease): QuotaUsage {
    this.updates++;
    const held = this.reservations.get(request.reservationId);
    if (held && (held.runId === undefined || request.runId === undefined || held.runId === request.runId)) {
      this.reservations.delete(request.reservationId);
    }
    this.prune(request.windowMs);
    return this.usage(request);
  }

  /** What the next run carries. */
  carried(): [string, Entry][] {
    return [...this.reservations];
  }

  /** Drops what left every window this counter was asked about. */
  private prune(windowMs: number): void {
    this.longestWindowMs = Math.max(this.longestWindowMs, windowMs);
    const cutoff = Date.now() - this.longestWindowMs;
    for (const [id, entry] of this.reservations) if (entry.atMs <= cutoff) this.reservations.delete(id);
  }
}

/** A release as its update carries it. */
type QuotaRelease = { reservationId: string; windowMs: number; runId?: string };

/** Refuses a malformed release before it reaches history. */
function validRelease(request: QuotaRelease | null): void {
  if (
    typeof request?.reservationId !== 'string' ||
    !positive(request.windowMs) ||
    (request.runId !== undefined && typeof request.runId !== 'string')
  ) {
    throw new Error('a release names its reservation and window');
  }
}

/** Refuses a malformed request before it reaches history. */
function validReservation(request: QuotaReservationRequest): void {
  if (
    typeof request?.reservationId !== 'string' ||
    !Number.isSafeInteger(request.amount) ||
    request.amount < 0 ||
    !positive(request.windowMs) ||
    (request.maxCalls !== undefined && !positive(request.maxCalls)) ||
    (request.maxAmount !== undefined && !positive(request.maxAmount))
  ) {
    throw new Error('a reservation names its id, a whole amount ≥ 0, its window and its maxima');
  }
}

function positive(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}
