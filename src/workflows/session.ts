import {
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  proxyLocalActivities,
  proxySinks,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { SessionPolicySnapshot, ToolCallActivities } from '../activities/tool-call-activities';
import type {
  AdmissionDecision,
  AdmissionRequest,
  CallOutcome,
  OpenCircuit,
  SessionStats,
} from '../shared/session';
import {
  admitUpdate,
  callOutcomeSignal,
  endSessionUpdate,
  resetSessionUpdate,
  sessionStatsQuery,
} from '../shared/session';
import type { ToolGateSinks } from '../shared/temporal';
import { rejection } from '../shared/tool-result';
import type { ToolResult } from '../shared/tool-result';
import { durationMs } from '../shared/durations';
import {
  circuitOpenMessage,
  contextInvalidMessage,
  contextMismatchMessage,
  internalErrorMessage,
  loopDetectedMessage,
  notSessionOwnerMessage,
  sessionClosedMessage,
  stepLimitMessage,
} from '../shared/model-messages';
import { nameRecord } from '../shared/own-records';
import type { CallContext } from '../shared/call-context';
import { checkContext, contextKey, isEmptyContext } from '../shared/call-context';
import type { UntrustedRead } from '../shared/untrusted-text';
import { maxUntrustedReads, withUntrustedReads } from '../shared/untrusted-text';
import type { SessionLimits } from '../shared/session';
import { defaultSessionLimits } from '../shared/session';

/** What a session carries across continue-as-new: every counter, the loop map and recent admissions. */
export interface SessionInput {
  session: string;
  carried?: {
    caller?: string;
    /** The context the session was opened with (its first admitted proposal's), once it has one. */
    context?: CallContext;
    /** The untrusted text the session has read. */
    untrusted?: UntrustedRead[];
    closed: boolean;
    closedReason?: string;
    steps: number;
    loopCounts: Record<string, number>;
    streaks: Record<string, { code: string; count: number }>;
    openCircuits: Record<string, OpenCircuit>;
    codeCounts: Record<string, number>;
    recentAdmissions: [string, AdmissionDecision][];
    /** The last runs whose outcomes were counted (`callId/runId`), so a repeated report counts once. */
    reportedRuns?: string[];
    /**
     * The caller's limits as the previous run knew them, so that what arrives before this run's first
     * admission loads the policy (an outcome, the idle timer) is judged by them, not by the defaults.
     */
    limits?: SessionLimits;
    /** When the session was last active (ms since the epoch), so the idle window spans runs. */
    lastActivityAt?: number;
    generation: number;
  };
}

export type { SessionLimits };

/** Continue as new after this many admissions in one run, besides Temporal's own suggestion. */
const defaultContinueAsNewAfter = 1_000;
const recentAdmissionsKept = 500;
const reportedRunsKept = 200;
const defaults = defaultSessionLimits;

/**
 * Creates the session workflow: durable state shared by every call of one conversation. It admits
 * each proposal synchronously and one at a time (signature and ownership first, then step budget,
 * loop guard and circuit breaker), counts outcomes the calls report, and continues as new with all
 * of it when its history grows. Calls are not its children: a call waiting for approval outlives it.
 */
export async function toolSession(input: SessionInput): Promise<SessionStats> {
  const sessionId = input.session;
  // Only a continue-as-new carries state: a run a raw client starts with `carried` in its input starts afresh.
  const carried = workflowInfo().continuedFromExecutionRunId !== undefined ? input.carried : undefined;
  const sinks = proxySinks<ToolGateSinks>();
  const state = {
    caller: carried?.caller,
    context: carried?.context,
    untrusted: carried?.untrusted ?? ([] as UntrustedRead[]),
    closed: carried?.closed ?? false,
    closedReason: carried?.closedReason,
    steps: carried?.steps ?? 0,
    // Keyed by tool names and codes from outside: records without a prototype, so `constructor` is
    // a tool name like any other and never an inherited property.
    loopCounts: nameRecord(carried?.loopCounts),
    streaks: nameRecord(carried?.streaks),
    openCircuits: nameRecord(carried?.openCircuits),
    codeCounts: nameRecord(carried?.codeCounts),
    generation: carried?.generation ?? 0,
  };
  const recentAdmissions = new Map<string, AdmissionDecision>(carried?.recentAdmissions ?? []);
  const snapshots = new Map<string, SessionPolicySnapshot>();
  const reportedRuns = new Set<string>(carried?.reportedRuns ?? []);
  let admissionsThisRun = 0;
  let lastActivityAt = carried?.lastActivityAt ?? Date.now();
  let busy = 0;
  let admissions: Promise<void> = Promise.resolve();

  const limits = (caller: string | undefined = state.caller): SessionLimits => {
    const snapshot = caller ? snapshots.get(caller) : undefined;
    // Until this run has loaded the caller's policy, the previous run's view of it holds.
    if (!snapshot && carried?.limits) return carried.limits;
    const session = snapshot?.callerPolicy?.session;
    return {
      stepBudget: session?.stepBudget ?? defaults.stepBudget,
      loopLimit: session?.loopLimit ?? defaults.loopLimit,
      circuitThreshold: session?.circuitThreshold ?? defaults.circuitThreshold,
      idleTimeoutMs:
        session?.idleTimeout === undefined ? defaults.idleTimeoutMs : durationMs(session.idleTimeout),
    };
  };
  const stats = (): SessionStats => {
    const { stepBudget, loopLimit, circuitThreshold } = limits();
    return {
      session: input.session,
      ...(state.caller !== undefined ? { caller: state.caller } : {}),
      ...(state.context !== undefined && !isEmptyContext(state.context) ? { context: state.context } : {}),
      closed: state.closed,
      ...(state.closedReason !== undefined ? { closedReason: state.closedReason } : {}),
      steps: state.steps,
      stepBudget,
      loopLimit,
      circuitThreshold,
      codeCounts: { ...state.codeCounts },
      openCircuits: { ...state.openCircuits },
      ...(state.untrusted.length > 0 ? { untrusted: [...state.untrusted] } : {}),
      generation: state.generation,
    };
  };
  const showDetails = () => {
    const { stepBudget } = limits();
    const codes = Object.entries(state.codeCounts)
      .map(([code, count]) => `${code}:${count}`)
      .join(' ');
    const circuits = Object.entries(state.openCircuits)
      .map(([tool, circuit]) => `${tool} (${circuit.code} x${circuit.count})`)
      .join(', ');
    setCurrentDetails(
      `${state.caller ?? 'no caller yet'}: steps ${state.steps}/${stepBudget}` +
        (codes ? `; codes ${codes}` : '') +
        (circuits ? `; open circuits: ${circuits}` : '') +
        (state.closed ? `; closed (${state.closedReason ?? 'ended'})` : ''),
    );
  };

  setHandler(sessionStatsQuery, stats);

  /**
   * Everything that changes the session's state runs here, one at a time in arrival order (a
   * promise chain, FIFO): admissions, outcomes, resets and ends. The counters are exact under
   * concurrency, and nothing changes between an admission's look at the state and its decision,
   * although it awaits a local activity in between.
   */
  function inTurn<T>(change: () => T | Promise<T>): Promise<T> {
    busy++;
    const run = admissions.then(change);
    admissions = run.then(
      () => undefined,
      () => undefined,
    );
    return run.finally(() => {
      busy--;
    });
  }

  // Validators refuse what is not shaped like its message before it reaches the state, so a raw
  // client's malformed update is refused instead of failing the session's workflow task.
  setHandler(admitUpdate, (request) => inTurn(() => admit(request)), {
    validator: (request) => {
      if (!isAdmissionRequest(request)) throw new Error('not an admission request');
    },
  });

  setHandler(callOutcomeSignal, (outcome) => {
    if (!isCallOutcome(outcome)) return; // not an outcome: nothing to count
    void inTurn(() => countOutcome(outcome));
  });

  setHandler(resetSessionUpdate, ({ tool }) => inTurn(() => reset(tool)), {
    validator: (options) => {
      if (
        typeof options !== 'object' ||
        options === null ||
        !optionalString((options as { tool?: unknown }).tool)
      ) {
        throw new Error('reset takes { tool?: string }');
      }
    },
  });

  setHandler(endSessionUpdate, ({ reason }) => inTurn(() => end(reason)), {
    validator: (options) => {
      if (
        typeof options !== 'object' ||
        options === null ||
        !optionalString((options as { reason?: unknown }).reason)
      ) {
        throw new Error('end takes { reason?: string }');
      }
    },
  });

  function countOutcome(outcome: CallOutcome): void {
    if (state.closed) return; // an ended session ignores late outcomes
    if (outcome.runId !== undefined) {
      const run = `${outcome.callId}/${outcome.runId}`;
      if (reportedRuns.has(run)) return; // a report sent again (its activity retried) counts once
      reportedRuns.add(run);
      if (reportedRuns.size > reportedRunsKept)
        reportedRuns.delete(reportedRuns.values().next().value as string);
    }
    if (outcome.untrusted?.length) {
      const at = new Date(Date.now()).toISOString();
      state.untrusted = withUntrustedReads(
        state.untrusted,
        outcome.untrusted.map((source) => ({ source, callId: outcome.callId, at })),
      );
    }
    state.codeCounts[outcome.code] = (state.codeCounts[outcome.code] ?? 0) + 1;
    if (outcome.ok) {
      delete state.streaks[outcome.tool];
    } else {
      const streak = state.streaks[outcome.tool];
      const count = streak?.code === outcome.code ? streak.count + 1 : 1;
      state.streaks[outcome.tool] = { code: outcome.code, count };
      if (count >= limits().circuitThreshold && !state.openCircuits[outcome.tool]) {
        state.openCircuits[outcome.tool] = {
          code: outcome.code,
          count,
          openedAt: new Date(Date.now()).toISOString(),
          reason: `${count} consecutive ${outcome.code} for ${outcome.tool}`,
        };
        sinks.metrics.circuitOpened({ tool: outcome.tool, code: outcome.code });
      }
    }
    showDetails();
  }

  function reset(tool: string | undefined): SessionStats {
    for (const name of Object.keys(state.openCircuits)) {
      if (tool === undefined || tool === name) {
        delete state.openCircuits[name];
        delete state.streaks[name];
      }
    }
    showDetails();
    return stats();
  }

  function end(reason: string | undefined): SessionStats {
    if (!state.closed) {
      state.closed = true;
      state.closedReason = reason ?? 'ended';
    }
    showDetails();
    return stats();
  }

  async function admit(request: AdmissionRequest): Promise<AdmissionDecision> {
    const recorded = recentAdmissions.get(request.proposalId);
    if (recorded) return recorded; // a retried admission is answered again, never counted twice
    const { proposal } = request;
    const reject = (code: string, message: string): AdmissionDecision & { admitted: false } => ({
      admitted: false,
      result: rejection({ tool: proposal.tool, callId: request.callId, code, message }),
    });
    // The caller's limits, loaded once per run (its first admission).
    await snapshotOf(proposal.caller);
    const owned =
      proposal.session === input.session && (state.caller === undefined || state.caller === proposal.caller);
    // A raw client may attach anything: the context's shape is checked before the session fixes it.
    const shaped = checkContext(proposal.context);
    // A session acts for one end user: the context its first proposal carried, and no other.
    const sameContext =
      !shaped.ok || state.context === undefined || contextKey(state.context) === contextKey(shaped.context);
    // One local activity checks the signature and, for a proposal this state admits, signs its
    // ticket. Nothing else changes the state until this admission ends (`inTurn`), so the decision
    // below is the one foreseen here: a refused proposal never gets a ticket, in history or anywhere.
    const checked = await checkedByWorker({
      request,
      admits: owned && shaped.ok && sameContext && foresee(request),
    });
    // Signature and ownership first: a proposal that fails them uses no step and counts toward nothing.
    if (checked.failed) {
      // The worker could not check it: not a forgery, and nothing counted. The model is told so.
      const failed = reject('INTERNAL_ERROR', internalErrorMessage);
      auditRefusal(request, failed.result);
      return failed;
    }
    if (!checked.signed || !owned) {
      const refused = reject('UNAUTHENTICATED_CALLER', notSessionOwnerMessage(proposal));
      auditRefusal(request, refused.result);
      return refused;
    }
    // Signed by the owner, with a context no harness of ours attaches: uses no step, fixes nothing.
    if (!shaped.ok) {
      const refused = reject('CONTEXT_INVALID', contextInvalidMessage({ problem: shaped.problem }));
      auditRefusal(request, refused.result);
      return refused;
    }
    // Signed by the owner, for someone else: uses no step either (the harness's doing, not the model's).
    if (!sameContext) {
      const refused = reject('CONTEXT_MISMATCH', contextMismatchMessage);
      auditRefusal(request, refused.result);
      return refused;
    }
    state.caller ??= proposal.caller;
    state.context ??= shaped.context;
    lastActivityAt = Date.now();
    const decided = decide(request, reject);
    const decision: AdmissionDecision = decided.admitted
      ? {
          ...decided,
          ...(checked.ticket !== undefined ? { ticket: checked.ticket } : {}),
          ...(state.untrusted.length > 0 ? { untrusted: [...state.untrusted] } : {}),
        }
      : decided;
    recentAdmissions.set(request.proposalId, decision);
    if (recentAdmissions.size > recentAdmissionsKept) {
      recentAdmissions.delete(recentAdmissions.keys().next().value as string);
    }
    admissionsThisRun++;
    if (!decision.admitted) {
      state.codeCounts[decision.result.code] = (state.codeCounts[decision.result.code] ?? 0) + 1;
      auditRefusal(request, decision.result);
    }
    showDetails();
    return decision;
  }

  /** Whether `decide` would admit the request now, without changing anything. */
  function foresee(request: AdmissionRequest): boolean {
    if (state.closed) return false;
    const { stepBudget, loopLimit } = limits(request.proposal.caller);
    if (state.steps + 1 > stepBudget) return false;
    if ((state.loopCounts[request.callId] ?? 0) + 1 > loopLimit) return false;
    return !state.openCircuits[request.proposal.tool];
  }

  function decide(
    request: AdmissionRequest,
    reject: (code: string, message: string) => AdmissionDecision,
  ): AdmissionDecision {
    const { proposal } = request;
    if (state.closed) {
      return reject('SESSION_CLOSED', sessionClosedMessage);
    }
    const { stepBudget, loopLimit } = limits();
    state.steps++;
    if (state.steps > stepBudget) {
      return reject('STEP_LIMIT', stepLimitMessage({ stepBudget }));
    }
    const seen = (state.loopCounts[request.callId] ?? 0) + 1;
    state.loopCounts[request.callId] = seen;
    if (seen > loopLimit) {
      return reject('LOOP_DETECTED', loopDetectedMessage({ times: seen - 1 }));
    }
    const circuit = state.openCircuits[proposal.tool];
    if (circuit) {
      return reject('CIRCUIT_OPEN', circuitOpenMessage({ tool: proposal.tool, reason: circuit.reason }));
    }
    return { admitted: true, step: state.steps };
  }

  /**
   * Audits a refusal like every other (docs/design.md, step 0), through the worker's sink: no command,
   * so recorded histories replay unchanged, and a replay writes nothing (`callDuringReplay: false`).
   * Not a durable step, and it need not be: the worker calls the sink before it completes the
   * workflow task that decides the admission, so a crash before the write fails that task and its
   * retry decides again and writes; the store keys the record by proposal, so a retried task or
   * admission writes once. Only a failing store loses a record (the worker logs it), and then the
   * refusal is still in this session's history as the update's result.
   */
  function auditRefusal(request: AdmissionRequest, result: ToolResult): void {
    const policyVersion = snapshots.get(request.proposal.caller)?.version;
    sinks.audit.admissionRefusal({
      proposalId: request.proposalId,
      callId: request.callId,
      session: input.session,
      proposal: request.proposal,
      result,
      ...(policyVersion !== undefined ? { policyVersion } : {}),
      at: new Date(Date.now()).toISOString(),
    });
  }

  /**
   * The signature, checked natively by the worker, and the admission ticket when `admits` (a local
   * activity, in this workflow task). Without a ticket (no minter key, a failure) the call cannot run.
   */
  async function checkedByWorker(input: {
    request: AdmissionRequest;
    admits: boolean;
  }): Promise<{ signed: boolean; ticket?: string; failed?: true }> {
    const { request } = input;
    try {
      return await proxyLocalActivities<ToolCallActivities>({
        startToCloseTimeout: '5s',
        retry: { maximumAttempts: 3 },
      }).admitProposal({
        session: sessionId,
        proposalId: request.proposalId,
        admits: input.admits,
        check: {
          callId: request.callId,
          proposal: request.proposal,
          ...(request.signature !== undefined ? { signature: request.signature } : {}),
          // The ticket covers what the session had read: a call cannot be started as if clean.
          ...(state.untrusted.length > 0 ? { untrusted: [...state.untrusted] } : {}),
        },
      });
    } catch (error) {
      log.error('session could not check a proposal', { session: sessionId, error: String(error) });
      return { signed: false, failed: true };
    }
  }

  async function snapshotOf(caller: string): Promise<SessionPolicySnapshot | undefined> {
    const cached = snapshots.get(caller);
    if (cached) return cached;
    try {
      const snapshot = await proxyLocalActivities<ToolCallActivities>({
        startToCloseTimeout: '5s',
        retry: { maximumAttempts: 3 },
      }).loadCallerPolicy({ caller });
      snapshots.set(caller, snapshot);
      return snapshot;
    } catch (error) {
      log.error('session could not load the policy', { session: input.session, error: String(error) });
      return undefined;
    }
  }

  showDetails();
  // Live until ended or idle; continue as new when the history grows (Temporal's suggestion, or the test threshold).
  for (;;) {
    const woke = await untilIdleOrWoken();
    if (!woke && busy > 0) {
      // Something in flight is activity: let it finish, then judge idleness again.
      await condition(() => busy === 0);
      continue;
    }
    if (!woke) {
      state.closed = true;
      state.closedReason = 'idle';
      showDetails();
    }
    if (state.closed) break;
    if (growing()) {
      // Continue-as-new aborts unfinished updates: let every admission in flight finish first.
      await condition(() => allHandlersFinished() && busy === 0);
      await continueAsNew<typeof toolSession>({
        session: input.session,
        carried: {
          ...state,
          recentAdmissions: [...recentAdmissions.entries()],
          reportedRuns: [...reportedRuns],
          ...(state.caller !== undefined ? { limits: limits() } : {}),
          lastActivityAt,
          generation: state.generation + 1,
        },
      });
    }
  }
  await condition(allHandlersFinished);
  return stats();

  /** Whether this run's history has grown enough to continue as new (Temporal's suggestion, or the threshold). */
  function growing(): boolean {
    const threshold =
      (state.caller ? snapshots.get(state.caller)?.continueAsNewAfter : undefined) ??
      defaultContinueAsNewAfter;
    return workflowInfo().continueAsNewSuggested || admissionsThisRun >= threshold;
  }

  /** True when the session was ended or grew; false once it has been idle for its idle timeout. */
  async function untilIdleOrWoken(): Promise<boolean> {
    const wake = () => state.closed || growing();
    const deadline = () => lastActivityAt + limits().idleTimeoutMs;
    for (;;) {
      const armed = deadline();
      const remaining = armed - Date.now();
      if (remaining <= 0) return wake();
      // One timer for the whole idle window: an admission moves the deadline later, not the timer.
      // A deadline moved earlier (the first caller's policy has a shorter timeout) re-arms it.
      const woke = await condition(() => wake() || deadline() < armed, remaining);
      if (woke && wake()) return true;
    }
  }
}

function optionalString(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

function isAdmissionRequest(value: unknown): value is AdmissionRequest {
  const request = value as Partial<AdmissionRequest> | null;
  const proposal = request?.proposal;
  return (
    typeof request === 'object' &&
    request !== null &&
    typeof request.proposalId === 'string' &&
    typeof request.callId === 'string' &&
    optionalString(request.signature) &&
    typeof proposal === 'object' &&
    proposal !== null &&
    typeof proposal.session === 'string' &&
    typeof proposal.caller === 'string' &&
    typeof proposal.tool === 'string' &&
    typeof proposal.rawArguments === 'string'
  );
}

/**
 * A source as a contract names one (`get_order.note`, a tool and a field name): short, one line. The
 * outcome signal is anyone's to send, so it cannot plant long text in what approvers read.
 */
function isUntrustedSource(source: unknown): boolean {
  return (
    typeof source === 'string' &&
    source.length > 0 &&
    source.length <= 200 &&
    !/[\p{Cc}\p{Zl}\p{Zp}]/u.test(source)
  );
}

function isCallOutcome(value: unknown): value is CallOutcome {
  const outcome = value as Partial<CallOutcome> | null;
  return (
    typeof outcome === 'object' &&
    outcome !== null &&
    typeof outcome.callId === 'string' &&
    optionalString(outcome.runId) &&
    typeof outcome.tool === 'string' &&
    typeof outcome.code === 'string' &&
    typeof outcome.ok === 'boolean' &&
    (outcome.untrusted === undefined ||
      (Array.isArray(outcome.untrusted) &&
        outcome.untrusted.length <= maxUntrustedReads &&
        outcome.untrusted.every(isUntrustedSource)))
  );
}
