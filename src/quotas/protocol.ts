import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { sha256Hex } from '../shared/canonical-json';

/*
 * Limits across sessions (docs/design.md step 5): per caller and tool, or for the whole deployment, at most
 * N calls and M in amount (the tool's declared `amount`) within a rolling window. Each limit is counted
 * by a workflow of its own, which admits and reserves in one update, so any number of sessions calling
 * at once can never pass it; a call that ends without an effect releases its reservation.
 */

/** The counter workflows' type. */
export const quotaWorkflowType = 'toolgateQuota';

/** A limit that applies to one call, as the policy declared it (recorded with the call's evaluation). */
export interface ApplicableQuota {
  /** `caller`: this caller's calls only; `deployment`: every caller's. */
  scope: 'caller' | 'deployment';
  caller?: string;
  tool: string;
  /** The window as written (e.g. `24h`) and in milliseconds. */
  window: string;
  windowMs: number;
  maxCalls?: number;
  maxAmount?: number;
  /** Counted per end user (the policy's `perEndUser`). */
  perEndUser?: true;
  /** The end user this call counts under, when the limit is per end user ('' for a call for nobody). */
  endUser?: string;
}

/** The counter of a limit on a task queue: one per scope, caller, tool and window length (and end user). */
export function quotaWorkflowId(input: { taskQueue: string; quota: ApplicableQuota }): string {
  const { quota } = input;
  const who = quota.scope === 'caller' ? `caller:${quota.caller ?? ''}` : 'deployment';
  // Hashed: an end user's id is text from the host, of any shape.
  const endUser = quota.endUser !== undefined ? `:user:${sha256Hex(quota.endUser).slice(0, 32)}` : '';
  return `toolgate-quota:${input.taskQueue}:${who}${endUser}:${quota.tool}:${quota.windowMs}ms`;
}

/** What a call asks a counter: room for one call moving `amount`, under the limit's current maxima. */
export interface QuotaReservationRequest {
  /** `<callId>:<runId>`: a reservation asked again (a retried activity) is answered, never counted twice. */
  reservationId: string;
  /** The run reserving: only that run releases it (a later run of the same write never frees its room). */
  runId?: string;
  amount: number;
  windowMs: number;
  maxCalls?: number;
  maxAmount?: number;
}

/** How much of a limit is used and left, and when room frees up (the oldest counted call leaves the window). */
export interface QuotaUsage {
  calls: number;
  amount: number;
  remainingCalls?: number;
  remainingAmount?: number;
  /** When the oldest reservation in the window leaves it (ISO); absent when nothing is counted. */
  resetsAt?: string;
}

/** The counter's answer: reserved (with the usage after it), or refused (with the usage that refused it). */
export type QuotaReservation = ({ ok: true } | { ok: false }) & QuotaUsage;

/** Reserves room for one call, or refuses; atomic, as every update of one workflow runs one at a time. */
export const reserveQuotaUpdate = defineUpdate<QuotaReservation, [QuotaReservationRequest]>('reserve');

/** Releases a reservation (the call ended without an effect); releasing one that is not held changes nothing. */
export const releaseQuotaUpdate = defineUpdate<
  QuotaUsage,
  [{ reservationId: string; windowMs: number; runId?: string }]
>('release');

/** The counter's usage now, for a window. */
export const quotaUsageQuery = defineQuery<
  QuotaUsage,
  [{ windowMs: number; maxCalls?: number; maxAmount?: number }]
>('usage');

/** What a call holds after admission: the counters it reserved in, to release if it ends without an effect. */
export interface HeldReservation {
  workflowId: string;
  reservationId: string;
  windowMs: number;
  /** The run that reserves: a release by another run changes nothing. */
  runId?: string;
}

/** The reservation step's answer, recorded in the call's history. */
export type QuotaAdmission =
  | { ok: true; held: HeldReservation[] }
  | { ok: false; quota: ApplicableQuota; amount: number; usage: QuotaUsage };
