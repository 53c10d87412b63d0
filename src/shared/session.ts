import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { sha256Hex } from './canonical-json';
import type { Proposal } from './proposal';
import type { CallContext } from './call-context';
import type { UntrustedRead } from './untrusted-text';
import type { ToolResult } from './tool-result';

/** The workflow type every session runs as; the user's workflows module exports it under this name. */
export const sessionWorkflowType = 'toolSession';

/** The workflow ID of a session: one per conversation id (hashed, so any id fits). */
export function sessionWorkflowId(session: string): string {
  return `ts-${sha256Hex(session)}`;
}

/** A proposal asking its session for admission, before its call workflow starts. */
export interface AdmissionRequest {
  proposalId: string;
  callId: string;
  proposal: Proposal;
  signature?: string;
}

/** The session's answer: admitted (with the step it used), or the rejection the model gets. */
/** An admitted proposal carries the ticket its call is started with (none without a minter key). */
export type AdmissionDecision =
  | {
      admitted: true;
      step: number;
      ticket?: string;
      /** The untrusted text the session had read: the call starts with it, and its ticket covers it. */
      untrusted?: UntrustedRead[];
    }
  | { admitted: false; result: ToolResult };

/** Asks for admission; answered synchronously and serialised by the session workflow. */
export const admitUpdate = defineUpdate<AdmissionDecision, [AdmissionRequest]>('admit');

/** A call's final outcome, reported by the call to its session before it closes. */
export interface CallOutcome {
  callId: string;
  /** The call's run: a report sent twice (an activity retried) is counted once. Older calls omit it. */
  runId?: string;
  tool: string;
  code: string;
  ok: boolean;
  /** The untrusted outputs the call read (`get_order.note`), when its tool marks some and they held text. */
  untrusted?: string[];
}

/** Reports a final outcome to the session (circuit breaker, per-code counts). */
export const callOutcomeSignal = defineSignal<[CallOutcome]>('callOutcome');

/** An open circuit: the tool is refused in this session until a reset or the session's end. */
export interface OpenCircuit {
  code: string;
  count: number;
  openedAt: string;
  reason: string;
}

/** What a session has used and seen. */
export interface SessionStats {
  session: string;
  caller?: string;
  /** On whose behalf the session acts, fixed at its first admission; absent when it names nobody. */
  context?: CallContext;
  closed: boolean;
  closedReason?: string;
  steps: number;
  stepBudget: number;
  loopLimit: number;
  circuitThreshold: number;
  codeCounts: Record<string, number>;
  openCircuits: Record<string, OpenCircuit>;
  /** The untrusted text the session has read, first of each source (absent: none). */
  untrusted?: UntrustedRead[];
  /** How many times this run of the session continued as new (carried over). */
  generation: number;
}

/** Reads a session's counters; pure. */
export const sessionStatsQuery = defineQuery<SessionStats>('sessionStats');

/** Closes circuits (one tool's, or all). */
export const resetSessionUpdate = defineUpdate<SessionStats, [{ tool?: string }]>('resetSession');

/** Ends the session: it refuses every later call (`SESSION_CLOSED`). */
export const endSessionUpdate = defineUpdate<SessionStats, [{ reason?: string }]>('endSession');

/** The limits a session enforces, from its caller's policy or the defaults. */
export interface SessionLimits {
  stepBudget: number;
  loopLimit: number;
  circuitThreshold: number;
  idleTimeoutMs: number;
}

/** The limits of a caller whose policy sets none. */
export const defaultSessionLimits: Readonly<SessionLimits> = Object.freeze({
  stepBudget: 25,
  loopLimit: 3,
  circuitThreshold: 3,
  idleTimeoutMs: 30 * 60 * 1000,
});
