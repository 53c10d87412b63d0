/**
 * A session's rules as pure functions over its state: what the session store applies inside one
 * transaction per admission and per outcome (issue 28: the session is state in the store, not a
 * workflow). The same order and codes as the session workflow's (docs/design.md, step 0): the
 * caller's signature and ownership, the context's shape and sameness (none of these use a step), then
 * closed or idle, step budget, loop guard, circuit breaker. Every function returns a new state and
 * never changes the one it is given. Sandbox-safe (no I/O, no clock: `now` is passed in).
 */
import type { CallContext } from '../calls/call-context';
import { checkContext, contextKey, isEmptyContext } from '../calls/call-context';
import {
  circuitOpenMessage,
  contextInvalidMessage,
  contextMismatchMessage,
  loopDetectedMessage,
  notSessionOwnerMessage,
  sessionClosedMessage,
  stepLimitMessage,
} from '../shared/model-messages';
import { nameRecord } from '../shared/own-records';
import type { Proposal } from '../calls/proposal';
import type { CallOutcome, OpenCircuit, SessionLimits, SessionStats } from './session';
import { defaultSessionLimits } from './session';

export type { SessionLimits };
export { defaultSessionLimits };
import { rejection } from '../shared/tool-result';
import type { ToolResult } from '../shared/tool-result';
import type { UntrustedRead } from '../shared/untrusted-text';
import { withUntrustedReads } from '../shared/untrusted-text';

/** Everything a session knows, as the store keeps it (JSON). */
export interface SessionState {
  /** The caller that owns the session: its first admitted proposal's. */
  caller?: string;
  /** The context the session acts in, fixed at its first admission (`{}`: nobody in particular). */
  context?: CallContext;
  /** The untrusted text the session has read, first of each source. */
  untrusted: UntrustedRead[];
  closed: boolean;
  closedReason?: string;
  /** When it closed (ISO 8601): ended, or found idle. */
  closedAt?: string;
  steps: number;
  /** Admissions per call id: the loop guard's count. */
  loopCounts: Record<string, number>;
  /** Per tool, the code of its latest consecutive failures and how many. */
  streaks: Record<string, { code: string; count: number }>;
  openCircuits: Record<string, OpenCircuit>;
  codeCounts: Record<string, number>;
  /** When the session was opened and last admitted a proposal (ms since the epoch). */
  openedAt?: number;
  lastActivityAt?: number;
  /** The limits its caller's policy gave at the latest admission (what outcomes are judged by). */
  limits?: SessionLimits;
  /** The operators' resets of its circuits, latest last (at most `maxResetsKept`). */
  resets?: SessionReset[];
}

/** An operator's reset, as the session keeps it. */
export interface SessionReset {
  operator: string;
  reason: string;
  tool?: string;
  at: string;
}

/** How many resets a session keeps in its state (every one stays in its appended versions). */
export const maxResetsKept = 20;

/** A session nothing has happened in yet. */
export function emptySessionState(): SessionState {
  return {
    untrusted: [],
    closed: false,
    steps: 0,
    loopCounts: nameRecord(),
    streaks: nameRecord(),
    openCircuits: nameRecord(),
    codeCounts: nameRecord(),
  };
}

/**
 * A state read back from the store's JSON: records without a prototype again, so a tool or code
 * named `constructor` or `__proto__` is a name like any other.
 */
export function revivedSessionState(value: SessionState): SessionState {
  return {
    ...value,
    untrusted: value.untrusted ?? [],
    loopCounts: nameRecord(value.loopCounts),
    streaks: nameRecord(value.streaks),
    openCircuits: nameRecord(value.openCircuits),
    codeCounts: nameRecord(value.codeCounts),
  };
}

/** What an admission asks, once the worker has checked the proposal's signature. */
export interface AdmissionInput {
  session: string;
  callId: string;
  proposal: Proposal;
  /** Whether the proposal's signature is the named caller's (checked outside, natively). */
  signed: boolean;
  limits: SessionLimits;
  now: number;
}

/** The session's answer: admitted at a step, or refused with what the model is told. */
export type SessionAdmission =
  | { admitted: true; step: number; untrusted?: UntrustedRead[] }
  | {
      admitted: false;
      result: ToolResult;
      /** False when the refusal used no step and changed nothing. */ counted: boolean;
    };

/**
 * Decides one admission: the new state (the same object when nothing changed) and the answer.
 * A proposal that is not the owner's, or carries a context the session cannot take, changes nothing.
 */
export function admitInSession(
  state: SessionState,
  input: AdmissionInput,
): { state: SessionState; admission: SessionAdmission } {
  const { proposal, callId } = input;
  const refuse = (code: string, message: string) => rejection({ tool: proposal.tool, callId, code, message });
  const unchanged = (code: string, message: string) => ({
    state,
    admission: { admitted: false as const, result: refuse(code, message), counted: false },
  });
  const owned =
    proposal.session === input.session && (state.caller === undefined || state.caller === proposal.caller);
  if (!input.signed || !owned) return unchanged('UNAUTHENTICATED_CALLER', notSessionOwnerMessage(proposal));
  const shaped = checkContext(proposal.context);
  if (!shaped.ok) return unchanged('CONTEXT_INVALID', contextInvalidMessage({ problem: shaped.problem }));
  if (state.context !== undefined && contextKey(state.context) !== contextKey(shaped.context)) {
    return unchanged('CONTEXT_MISMATCH', contextMismatchMessage);
  }
  const next = copy(state);
  next.caller ??= proposal.caller;
  next.context ??= shaped.context;
  next.openedAt ??= input.now;
  next.limits = { ...input.limits };
  // Idle is judged here: no timer runs. A session idle past its timeout closes, as the workflow's did.
  if (
    !next.closed &&
    next.lastActivityAt !== undefined &&
    input.now - next.lastActivityAt > input.limits.idleTimeoutMs
  ) {
    next.closed = true;
    next.closedReason = 'idle';
    next.closedAt = new Date(input.now).toISOString();
  }
  const counted = (code: string, message: string) => {
    next.codeCounts[code] = (next.codeCounts[code] ?? 0) + 1;
    return {
      state: next,
      admission: { admitted: false as const, result: refuse(code, message), counted: true },
    };
  };
  if (next.closed) return counted('SESSION_CLOSED', sessionClosedMessage);
  next.lastActivityAt = input.now;
  next.steps++;
  if (next.steps > input.limits.stepBudget) {
    return counted('STEP_LIMIT', stepLimitMessage({ stepBudget: input.limits.stepBudget }));
  }
  const seen = (next.loopCounts[callId] ?? 0) + 1;
  next.loopCounts[callId] = seen;
  if (seen > input.limits.loopLimit)
    return counted('LOOP_DETECTED', loopDetectedMessage({ times: seen - 1 }));
  const circuit = next.openCircuits[proposal.tool];
  if (circuit)
    return counted('CIRCUIT_OPEN', circuitOpenMessage({ tool: proposal.tool, reason: circuit.reason }));
  return {
    state: next,
    admission: {
      admitted: true,
      step: next.steps,
      ...(next.untrusted.length > 0 ? { untrusted: [...next.untrusted] } : {}),
    },
  };
}

/**
 * Counts a call's final outcome: per-code counts, the untrusted text it read, and the circuit
 * breaker (a tool's `circuitThreshold` consecutive failures of one code open its circuit). The
 * caller counts each (call, run) once; an ended session counts nothing more.
 */
export function countOutcomeInSession(
  state: SessionState,
  outcome: CallOutcome & { now: number },
): { state: SessionState; opened?: OpenCircuit } {
  if (state.closed) return { state };
  const next = copy(state);
  if (outcome.untrusted?.length) {
    const at = new Date(outcome.now).toISOString();
    next.untrusted = withUntrustedReads(
      next.untrusted,
      outcome.untrusted.map((source) => ({ source, callId: outcome.callId, at })),
    );
  }
  next.codeCounts[outcome.code] = (next.codeCounts[outcome.code] ?? 0) + 1;
  if (outcome.ok) {
    delete next.streaks[outcome.tool];
    return { state: next };
  }
  const streak = next.streaks[outcome.tool];
  const count = streak?.code === outcome.code ? streak.count + 1 : 1;
  next.streaks[outcome.tool] = { code: outcome.code, count };
  const threshold = (next.limits ?? defaultSessionLimits).circuitThreshold;
  if (count < threshold || next.openCircuits[outcome.tool]) return { state: next };
  const opened: OpenCircuit = {
    code: outcome.code,
    count,
    openedAt: new Date(outcome.now).toISOString(),
    reason: `${count} consecutive ${outcome.code} for ${outcome.tool}`,
  };
  next.openCircuits[outcome.tool] = opened;
  return { state: next, opened };
}

/** Closes a session (`ended`, unless a reason is given); a closed one keeps its first reason. */
export function endSession(state: SessionState, reason: string | undefined, now: number): SessionState {
  if (state.closed) return state;
  return {
    ...copy(state),
    closed: true,
    closedReason: reason ?? 'ended',
    closedAt: new Date(now).toISOString(),
  };
}

/** Closes the circuits of one tool (or every tool) and forgets their streaks; `by` is kept with the state. */
export function resetCircuits(state: SessionState, tool?: string, by?: SessionReset): SessionState {
  const next = copy(state);
  if (by) next.resets = [...(state.resets ?? []), by].slice(-maxResetsKept);
  for (const name of Object.keys(next.openCircuits)) {
    if (tool === undefined || tool === name) {
      delete next.openCircuits[name];
      delete next.streaks[name];
    }
  }
  return next;
}

/**
 * Whether a session is closed at `now`: ended, or idle past its timeout (judged here as at admission,
 * so stats show an idle session closed before its next proposal writes it so).
 */
export function closedAt(
  state: SessionState,
  now: number,
): { closed: boolean; closedReason?: string; closedAt?: string } {
  if (state.closed) {
    return {
      closed: true,
      ...(state.closedReason !== undefined ? { closedReason: state.closedReason } : {}),
      ...(state.closedAt !== undefined ? { closedAt: state.closedAt } : {}),
    };
  }
  const idleTimeoutMs = (state.limits ?? defaultSessionLimits).idleTimeoutMs;
  if (state.lastActivityAt !== undefined && now - state.lastActivityAt > idleTimeoutMs) {
    return {
      closed: true,
      closedReason: 'idle',
      closedAt: new Date(state.lastActivityAt + idleTimeoutMs).toISOString(),
    };
  }
  return { closed: false };
}

/** What a session has used and seen, as `client.sessionStats` answers it (at `now`, default the clock). */
export function statsOfSession(input: {
  session: string;
  state: SessionState;
  limits?: SessionLimits;
  now?: number;
}): SessionStats {
  const { state } = input;
  const limits = input.limits ?? state.limits ?? defaultSessionLimits;
  const closed = closedAt(state, input.now ?? Date.now());
  return {
    session: input.session,
    ...(state.caller !== undefined ? { caller: state.caller } : {}),
    ...(state.context !== undefined && !isEmptyContext(state.context) ? { context: state.context } : {}),
    closed: closed.closed,
    ...(closed.closedReason !== undefined ? { closedReason: closed.closedReason } : {}),
    steps: state.steps,
    stepBudget: limits.stepBudget,
    loopLimit: limits.loopLimit,
    circuitThreshold: limits.circuitThreshold,
    codeCounts: { ...state.codeCounts },
    openCircuits: { ...state.openCircuits },
    ...(state.untrusted.length > 0 ? { untrusted: [...state.untrusted] } : {}),
    ...(state.resets?.length ? { resets: [...state.resets] } : {}),
  };
}

function copy(state: SessionState): SessionState {
  return {
    ...state,
    untrusted: [...state.untrusted],
    loopCounts: nameRecord(state.loopCounts),
    streaks: nameRecord(state.streaks),
    openCircuits: nameRecord(state.openCircuits),
    codeCounts: nameRecord(state.codeCounts),
  };
}
