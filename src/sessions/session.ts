import type { CallContext } from '../calls/call-context';
import type { UntrustedRead } from '../shared/untrusted-text';

/** A call's final outcome, counted in its session with the call's final audit record. */
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
  /** The operators' resets of its circuits, latest last (absent: none). */
  resets?: { operator: string; reason: string; tool?: string; at: string }[];
}

/** One line of `toolgate sessions list`: a session as its latest state shows it. */
export interface SessionSummary {
  session: string;
  caller?: string;
  closed: boolean;
  closedReason?: string;
  closedAt?: string;
  steps: number;
  openedAt?: string;
  lastActivityAt?: string;
  /** How many tools' circuits are open. */
  openCircuits: number;
}

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
