import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { KeyObject } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { z } from 'zod';
import type { CancelOutcome } from './calls/client';
import { cancelCall } from './calls/client';
import { overloadFailure, retryingTransient } from './connection/transient-retry';
import type { AuditStore } from './audit/audit-store';
import { admissionRefusalRecord } from './audit/audit-store';
import { signValue } from './keys/key-files';
import type { LoadedPolicy } from './policy/load-policy';
import {
  callNotFoundMessage,
  contextInvalidMessage,
  intentConflictMessage,
  overloadedMessage,
  stoppedOutsideMessage,
  undeliveredMessage,
} from './shared/model-messages';
import {
  capProposal,
  deriveCallId,
  isCallId,
  maxToolNameLength,
  proposalArgumentsDigest,
} from './calls/proposal';
import type { Proposal } from './calls/proposal';
import type { CallContext } from './calls/call-context';
import { checkContext } from './calls/call-context';
import type { SessionStats, SessionSummary } from './sessions/session';
import type {
  SessionEndClaims,
  SessionOperation,
  SessionOperationAnswer,
  SessionResetClaims,
} from './sessions/protocol';
import { sessionOperationIdPrefix, sessionOperationWorkflowType } from './sessions/protocol';
import type { ApprovalView } from './calls/protocol';
import { callStateQuery, proposeUpdate, searchAttributes, toolCallWorkflowType } from './calls/protocol';
import { defaultTaskQueue } from './shared/temporal';
import type { ToolResult } from './shared/tool-result';
import { rejection } from './shared/tool-result';
import type { AnyToolContract, ToolContract, ToolInputSchema } from './tools/define-tool';
import type { ToolGateMetrics } from './observability/metrics';
import { inSpan } from './observability/spans';
import { ConfigurationError } from './policy/load-policy';
import type { ToolDefinition, ToolRegistry } from './tools/tool-registry';
import { createToolRegistry } from './tools/tool-registry';

/** One call as an agent harness proposes it: the model's tool name and raw arguments. */
export interface CallInput {
  session: string;
  caller: string;
  tool: string;
  /** The raw JSON text the model produced, or an object. */
  arguments: string | Record<string, unknown>;
  /** The id of a human confirmation; the same intent with other arguments is `IDEMPOTENCY_CONFLICT`. */
  intentId?: string;
  /**
   * The user's message of the turn that led to this call, when the harness has it: kept in the call's
   * audit record for mining (`toolgate mine`). No step reads it and it is not part of the call id;
   * longer than `maxUserMessageBytes`, it is cut.
   */
  userMessage?: string;
  /**
   * On whose behalf the agent acts (the logged-in end user, the tenant, the channel, host claims):
   * set by the harness, never by the model. Signed with the proposal; fixed for the session at its
   * first admission (another is `CONTEXT_MISMATCH`); it fills the tool's bound parameters.
   */
  context?: CallContext;
}

/**
 * Why a session ended. `handoff`: the conversation was handed to a human; mining reads a hand-off
 * right after a tool call as a candidate case (the tool chosen was likely the wrong one). Any other
 * text is kept as given; a session that goes quiet ends as `idle` on its own.
 */
export type SessionEndReason = 'handoff' | (string & {});

/** What the client needs: a Temporal client and the same tool contracts the workers run. */
export interface ToolGateClientOptions {
  client: Client;
  tools: readonly ToolContract<ToolInputSchema, z.ZodType>[];
  taskQueue?: string;
  /** Used only to pick each caller's definitions; the workers enforce their own copy. */
  policy?: LoadedPolicy;
  /** The private key of each caller this harness acts for; proposals are signed with it. */
  callerKey: (caller: string) => KeyObject | undefined;
  /** Counts replays (`toolgate_replays_total`) when given: they are decided here, never in a worker. */
  metrics?: Pick<ToolGateMetrics, 'replayed'>;
  /**
   * Where a proposal that never reached its workflow is audited (`OVERLOADED`, an unreachable server):
   * the deployment's audit store. Without it such a proposal is answered but not audited; no workflow
   * exists to audit it.
   */
  audit?: Pick<AuditStore, 'append'>;
  /**
   * How long a proposal the server refuses for load (or cannot take for a moment) is asked again,
   * with backoff, before it is answered `OVERLOADED` (default 30 s).
   */
  retryTransientForMs?: number;
}

const memoArgumentsDigest = 'argumentsDigest';
/** How often a proposal that joined a refused run is proposed again before that refusal is its answer. */
const maxProposalsAgain = 20;
/** The proposal that started a call's run, so a client whose answer was lost can tell its own run. */
const memoProposalId = 'proposalId';
/**
 * The agent harness's entry point. `call` never throws for anything the model sent: every
 * outcome is a `ToolResult`. Proposing the same call again joins or replays it; it never applies
 * an effect twice.
 */
export class ToolGateClient {
  private readonly client: Client;
  private readonly registry: ToolRegistry;
  private readonly taskQueue: string;
  private readonly policy: LoadedPolicy | undefined;
  private readonly callerKey: (caller: string) => KeyObject | undefined;
  private readonly metrics: Pick<ToolGateMetrics, 'replayed'> | undefined;
  private readonly audit: Pick<AuditStore, 'append'> | undefined;
  private readonly retryTransientForMs: number;

  constructor(options: ToolGateClientOptions) {
    this.client = options.client;
    this.registry = createToolRegistry({ tools: options.tools });
    this.taskQueue = options.taskQueue ?? defaultTaskQueue;
    this.policy = options.policy;
    this.callerKey = options.callerKey;
    this.metrics = options.metrics;
    this.audit = options.audit;
    this.retryTransientForMs = options.retryTransientForMs ?? 30_000;
  }

  /** The call id a proposal maps to, computed without starting anything. */
  callIdOf(input: CallInput): string {
    const proposal = capProposal(input);
    const contract = this.contractOf(proposal);
    return deriveCallId({
      proposal,
      idempotencyFields: contract?.idempotencyFields,
      boundParameters: contract?.boundParameters,
    });
  }

  /**
   * Proposes a call and waits for its answer. A completed write proposed again is not run again:
   * its recorded result comes back with `replayed: true`. Never throws: a proposal the server refused
   * for load is `OVERLOADED`, one that could not reach it `INTERNAL_ERROR`, each with the effect known.
   */
  async call(input: CallInput): Promise<ToolResult> {
    // One span for the whole call: with tracing on (and the Temporal client's OpenTelemetry
    // interceptor), the admission, the workflow, its activities and the backend's request join it.
    const result = await inSpan('toolgate.call', { 'toolgate.tool': input.tool }, async (span) => {
      const answered = await this.proposeOnce(input);
      span.setAttributes({ 'toolgate.call_id': answered.callId, 'toolgate.code': answered.code });
      return answered;
    });
    if (result.replayed) this.metrics?.replayed({ tool: result.tool });
    return result;
  }

  private async proposeOnce(input: CallInput): Promise<ToolResult> {
    // The harness's own mistake, answered before anything starts: no workflow could read it either.
    const context = checkContext(input.context);
    if (!context.ok) {
      const { context: _unreadable, ...withoutContext } = input;
      return rejection({
        tool: input.tool.slice(0, maxToolNameLength),
        callId: this.callIdOf(withoutContext),
        code: 'CONTEXT_INVALID',
        message: contextInvalidMessage({ problem: context.problem }),
      });
    }
    const proposal = capProposal({ ...input, context: context.context });
    const contract = this.contractOf(proposal);
    const callId = deriveCallId({
      proposal,
      idempotencyFields: contract?.idempotencyFields,
      boundParameters: contract?.boundParameters,
    });
    const proposalId = randomUUID();
    const key = this.callerKey(proposal.caller);
    // Unsigned when this harness holds no key for the caller: the workflow then answers UNAUTHENTICATED_CALLER.
    const signature = key
      ? signValue({ kind: 'proposal', value: { callId, proposal }, privateKey: key })
      : undefined;
    const request = { proposalId, proposal, ...(signature ? { signature } : {}) };
    const undelivered = (error: unknown) =>
      this.undelivered({ error, proposalId, callId, proposal, effect: contract?.effect });
    // A with-start operation is used once: each attempt gets its own. The call's first step admits the
    // proposal in its session (signature, ownership, budget, loop guard, circuit): no workflow before it.
    const startOperation = () =>
      new WithStartWorkflowOperation(toolCallWorkflowType, {
        workflowId: callId,
        taskQueue: this.taskQueue,
        args: [request],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy:
          contract?.effect === 'write' ? 'ALLOW_DUPLICATE_FAILED_ONLY' : 'ALLOW_DUPLICATE',
        // Names only the tool and the caller: no model text is shown before validation.
        staticSummary: `${contract ? contract.name : 'unknown tool'} for ${proposal.caller}`,
        memo: { [memoArgumentsDigest]: proposalArgumentsDigest(proposal), [memoProposalId]: proposalId },
        typedSearchAttributes: [
          { key: searchAttributes.toolName, value: contract ? contract.name : proposal.tool },
          { key: searchAttributes.caller, value: proposal.caller },
          { key: searchAttributes.sessionId, value: proposal.session },
          { key: searchAttributes.approvalState, value: 'none' },
        ],
      });
    try {
      // Retried under the same update id (the proposal's): a run that took it answers with its result.
      // A write whose run closed failed meanwhile may run again, as a re-proposal would; its key
      // keeps the effect single.
      const propose = () =>
        retryingTransient(
          () =>
            this.client.workflow.executeUpdateWithStart(proposeUpdate, {
              args: [request],
              updateId: proposalId,
              startWorkflowOperation: startOperation(),
            }),
          { forMs: this.retryTransientForMs },
        );
      let response = await propose();
      // Admitted, it reached a run that its own starter's admission refused (and that runs nothing):
      // proposed again once that run has closed, it starts (or joins) a run that runs it.
      for (let again = 1; response.proposeAgain && again <= maxProposalsAgain; again++) {
        await delay(20 * again);
        response = await propose();
      }
      return response.result;
    } catch (error) {
      if (errorName(error) !== 'WorkflowExecutionAlreadyStartedError') return undelivered(error);
    }
    try {
      // A completed call proposed again runs nothing, but it is a step of its session all the same.
      const admission = await this.sessionOperation({ op: 'admit', ...request, callId });
      if (admission.op === 'admit' && !admission.admitted) return admission.result;
      return await this.replayCompleted({ callId, proposal });
    } catch (error) {
      return undelivered(error);
    }
  }

  /**
   * The answer to a proposal whose update never got through (the server refused it for load, or
   * could not be reached): the call's own answer when its run exists after all (this proposal's, or a
   * run of the same call it would have joined); else `OVERLOADED` or `INTERNAL_ERROR` with the effect
   * as far as it is known. Audited when the client has the audit store.
   */
  private async undelivered(input: {
    error: unknown;
    proposalId: string;
    callId: string;
    proposal: Proposal;
    effect: 'read' | 'write' | undefined;
  }): Promise<ToolResult> {
    const { callId, proposal, proposalId } = input;
    const started = await this.runOfProposal({ callId, proposalId });
    if (started === true) {
      const answer = await this.answerOf(callId).catch(() => undefined);
      if (answer) return answer;
    }
    const overloaded = started === false && overloadFailure.test(errorText(input.error));
    const result = rejection({
      tool: proposal.tool,
      callId,
      code: overloaded ? 'OVERLOADED' : 'INTERNAL_ERROR',
      message: overloaded
        ? overloadedMessage
        : undeliveredMessage({ started: started !== false ? undefined : false }),
      // Only a write that may have started may have changed anything.
      effect: started !== false && input.effect !== 'read' ? 'unknown' : 'none',
      data: { reason: errorText(input.error).slice(0, 300) },
    });
    const at = new Date().toISOString();
    await this.audit
      ?.append(
        admissionRefusalRecord({
          stage: 'undelivered',
          proposalId,
          callId,
          session: proposal.session,
          proposal,
          result,
          at,
        }),
      )
      .catch(() => false);
    return result;
  }

  /**
   * Whether a run of `callId` exists that this proposal started or would have joined (one running):
   * true, false, or undefined when the server cannot be asked.
   */
  private async runOfProposal(input: { callId: string; proposalId: string }): Promise<boolean | undefined> {
    try {
      const description = await this.client.workflow.getHandle(input.callId).describe();
      return description.status.name === 'RUNNING' || description.memo?.[memoProposalId] === input.proposalId;
    } catch (error) {
      return errorName(error) === 'WorkflowNotFoundError' ? false : undefined;
    }
  }

  /**
   * A call's current answer: its final result, or APPROVAL_PENDING while its approval round is open;
   * undefined when a running call has neither within `waitMs`.
   */
  private async answerOf(callId: string, waitMs = 20_000): Promise<ToolResult | undefined> {
    const handle = this.client.workflow.getHandle(callId);
    if ((await handle.describe()).status.name !== 'RUNNING') {
      return (await this.result(callId, { wait: true })) ?? undefined;
    }
    const deadline = Date.now() + waitMs;
    for (;;) {
      const state = await handle.query(callStateQuery);
      if (state.result) return state.result;
      // `pending` stays set after the decision until the result: only an open round makes it current.
      if (state.pending && state.approval?.state === 'pending')
        return pendingNow(state.pending, state.approval);
      if (Date.now() >= deadline) return undefined;
      await delay(200);
    }
  }

  /**
   * The result of a call by id. With `wait`, blocks until the call is final; without, returns
   * `null` while the call has no answer yet. A call that does not exist is `CALL_NOT_FOUND`.
   */
  async result(callId: string, options: { wait: boolean } = { wait: true }): Promise<ToolResult | null> {
    if (!isCallId(callId)) return callNotFound(callId);
    const handle = this.client.workflow.getHandle(callId);
    if (!options.wait) {
      let status: string;
      try {
        status = (await handle.describe()).status.name;
      } catch (error) {
        if (errorName(error) === 'WorkflowNotFoundError') return callNotFound(callId);
        throw error;
      }
      if (status === 'RUNNING') return (await handle.query(callStateQuery)).result ?? null;
    }
    try {
      return (await handle.result()) as ToolResult;
    } catch (error) {
      return toolResultOfFailure({ error, callId });
    }
  }

  /**
   * The current result of one of `caller`'s calls, for a harness that only knows the call id (an MCP
   * client's status tool): APPROVAL_PENDING while its approval round is open, else its final result,
   * waiting up to `waitMs` (default 20 s) for a call that is between decision and result. Another
   * caller's call, a session's workflow and an id that does not exist are all `CALL_NOT_FOUND`; with
   * `onBehalfOf` (an MCP connection whose token names its end user), so is a call for anyone else.
   * Never changes anything; throws only when the call stays without an answer (no worker).
   */
  async callStatus(input: {
    callId: string;
    caller: string;
    onBehalfOf?: string;
    waitMs?: number;
  }): Promise<ToolResult> {
    const { callId } = input;
    if (!isCallId(callId)) return callNotFound(callId);
    const handle = this.client.workflow.getHandle(callId);
    try {
      const description = await handle.describe();
      const caller = description.typedSearchAttributes.get(searchAttributes.caller);
      if (description.type !== toolCallWorkflowType || caller !== input.caller) return callNotFound(callId);
      // The end user as the worker recorded the call's context: another customer's call is not found.
      if (input.onBehalfOf !== undefined) {
        const state = await handle.query(callStateQuery);
        if (state.context?.onBehalfOf !== input.onBehalfOf) return callNotFound(callId);
      }
    } catch (error) {
      if (errorName(error) === 'WorkflowNotFoundError') return callNotFound(callId);
      throw error;
    }
    const answer = await this.answerOf(callId, input.waitMs ?? 20_000);
    if (answer) return answer;
    throw new Error(`call ${callId} is running and has no answer yet; ask for its status again later`);
  }

  /**
   * Cancels one of `caller`'s calls while it waits for approval, signed with the caller's key: the
   * call closes `APPROVAL_CANCELLED` (nothing applied) and its final result comes back. Refused with a
   * stable code when the call's execution started (`CANCEL_TOO_LATE`, the call runs on), when it does
   * not wait for approval (`NOT_AWAITING_APPROVAL`), or when it is not the caller's (`CALL_NOT_FOUND`).
   */
  async cancel(input: {
    callId: string;
    caller: string;
    reason: string;
  }): Promise<CancelOutcome & { result?: ToolResult }> {
    const privateKey = this.callerKey(input.caller);
    if (!privateKey) {
      return {
        cancelled: false,
        callId: input.callId,
        code: 'UNAUTHENTICATED_CALLER',
        message: `this harness holds no key for caller ${input.caller}: it cannot sign the cancellation`,
      };
    }
    const outcome = await cancelCall({
      client: this.client,
      callId: input.callId,
      by: { caller: input.caller },
      privateKey,
      reason: input.reason,
    });
    if (!outcome.cancelled) return outcome;
    return { ...outcome, result: (await this.result(input.callId, { wait: true })) as ToolResult };
  }

  /**
   * A handle on one conversation: its calls go through the session `id`, as `caller`, on behalf of
   * `context` (the logged-in end user, tenant, channel), which every call of the handle carries.
   */
  session(input: { id: string; caller: string; context?: CallContext }): {
    call(call: Omit<CallInput, 'session' | 'caller' | 'context'>): Promise<ToolResult>;
    stats(): Promise<SessionStats>;
  } {
    return {
      call: (call) =>
        this.call({
          ...call,
          session: input.id,
          caller: input.caller,
          ...(input.context !== undefined ? { context: input.context } : {}),
        }),
      stats: () => this.sessionStats(input.id),
    };
  }

  /** A session's counters: steps used, per-code counts, open circuits, what it has read. */
  async sessionStats(id: string): Promise<SessionStats> {
    const answer = await this.sessionOperation({ op: 'stats', session: id });
    if (answer.op !== 'stats') throw new Error(`unexpected answer to a session's stats: ${answer.op}`);
    return answer.stats;
  }

  /** The sessions most recently active, newest first (at most `limit`, default 50). */
  async sessions(options: { limit?: number } = {}): Promise<SessionSummary[]> {
    const answer = await this.sessionOperation({
      op: 'list',
      ...(options.limit !== undefined ? { limit: options.limit } : {}),
    });
    if (answer.op !== 'list') throw new Error(`unexpected answer to a list of sessions: ${answer.op}`);
    return answer.sessions;
  }

  /**
   * Closes a session's open circuits (all, or one tool's), as an operator: signed with the operator's
   * key and kept with the session's state. Refused (with a code) when the operator is not in the
   * workers' policy or the signature does not hold.
   */
  async resetSession(
    id: string,
    options: { tool?: string; operator: string; operatorKey: KeyObject; reason: string },
  ): Promise<SessionStats> {
    const claims: SessionResetClaims = {
      session: id,
      ...(options.tool !== undefined ? { tool: options.tool } : {}),
      operator: options.operator,
      reason: options.reason,
      issuedAt: new Date().toISOString(),
    };
    const signature = signValue({ kind: 'session-reset', value: claims, privateKey: options.operatorKey });
    return this.signedSessionChange({ op: 'reset', claims, signature });
  }

  /**
   * Ends a session as its caller: every later call in it is `SESSION_CLOSED`. Calls already waiting
   * for approval are not part of it and stay pending until decided or expired. The reason (`handoff`
   * when a human takes over) is kept with the session. `caller` defaults to the session's own; a
   * session nothing happened in needs it, and is ended as that caller's, so its id cannot be used later.
   */
  async endSession(
    id: string,
    options: { reason?: SessionEndReason; caller?: string } = {},
  ): Promise<SessionStats> {
    const caller = options.caller ?? (await this.sessionStats(id)).caller;
    if (caller === undefined) {
      throw new ConfigurationError(
        `session ${id} has no caller yet: pass endSession(id, { caller }) to end it as that caller's`,
      );
    }
    const privateKey = this.callerKey(caller);
    if (!privateKey) {
      throw new ConfigurationError(
        `this harness holds no key for caller ${caller}: it cannot end the session`,
      );
    }
    const claims: SessionEndClaims = {
      session: id,
      caller,
      ...(options.reason !== undefined ? { reason: options.reason } : {}),
      issuedAt: new Date().toISOString(),
    };
    const signature = signValue({ kind: 'session-end', value: claims, privateKey });
    return this.signedSessionChange({ op: 'end', claims, signature });
  }

  private async signedSessionChange(
    operation: SessionOperation & { op: 'end' | 'reset' },
  ): Promise<SessionStats> {
    const answer = await this.sessionOperation(operation);
    if (answer.op !== operation.op || !('ok' in answer)) {
      throw new Error(`unexpected answer to a session's ${operation.op}: ${answer.op}`);
    }
    if (!answer.ok) throw new SessionOperationRefused(answer.code, answer.message);
    return answer.stats;
  }

  /**
   * Runs one session operation in a worker, as a short workflow (the store is the worker's). Retried,
   * with backoff, while the server refuses it for load.
   */
  private async sessionOperation(operation: SessionOperation): Promise<SessionOperationAnswer> {
    const workflowId = `${sessionOperationIdPrefix}${randomUUID()}`;
    return retryingTransient(
      () =>
        this.client.workflow.execute(sessionOperationWorkflowType, {
          workflowId,
          taskQueue: this.taskQueue,
          args: [operation],
          workflowIdConflictPolicy: 'USE_EXISTING',
          staticSummary: `session ${operation.op}`,
        }) as Promise<SessionOperationAnswer>,
      { forMs: this.retryTransientForMs },
    );
  }

  /** Provider-neutral definitions for the model: the caller's allowed tools when a policy was given. */
  definitions(caller?: string): ToolDefinition[] {
    if (caller === undefined || !this.policy) return this.registry.definitions();
    return this.registry.definitions({ only: this.policy.callerPolicy(caller)?.tools ?? [] });
  }

  /**
   * The contracts of the tools `caller` may call, in registry order: what a provider adapter or the MCP
   * server shows the model, and nothing else. Needs the client's `policy`.
   */
  toolsFor(caller: string): AnyToolContract[] {
    if (!this.policy) {
      throw new ConfigurationError(
        'ToolGateClient: no policy was given, so the tools a caller may see are unknown; pass policy: loadPolicyFile({...}) to the client',
      );
    }
    const allowed = new Set(this.policy.callerPolicy(caller)?.tools ?? []);
    return this.registry.names.filter((name) => allowed.has(name)).map((name) => this.registry.get(name)!);
  }

  /** The contract of one tool by its exact name, or undefined. */
  tool(name: string): AnyToolContract | undefined {
    return this.registry.get(name);
  }

  private contractOf(proposal: Proposal) {
    return proposal.toolNameTruncated ? undefined : this.registry.get(proposal.tool);
  }

  private async replayCompleted(input: { callId: string; proposal: Proposal }): Promise<ToolResult> {
    const { callId, proposal } = input;
    const handle = this.client.workflow.getHandle(callId);
    if (proposal.intentId !== undefined) {
      const description = await handle.describe();
      const recorded = description.memo?.[memoArgumentsDigest];
      if (recorded !== proposalArgumentsDigest(proposal)) {
        return rejection({
          tool: proposal.tool,
          callId,
          code: 'IDEMPOTENCY_CONFLICT',
          message: intentConflictMessage({ intentId: proposal.intentId, tool: proposal.tool }),
        });
      }
    }
    const recordedResult = await this.result(callId, { wait: true });
    return { ...(recordedResult ?? callNotFound(callId)), replayed: true };
  }
}

/** A session's end or reset that the worker refused: `code` says why, `message` what to do. */
export class SessionOperationRefused extends Error {
  override readonly name = 'SessionOperationRefused';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** An error's name, message and cause's message: what the transient and overload patterns are matched against. */
function errorText(error: unknown): string {
  const cause = (error as { cause?: { message?: string } } | undefined)?.cause;
  return `${errorName(error) ?? ''} ${String(error)} ${cause?.message ?? ''}`;
}

function errorName(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}

function callNotFound(callId: string): ToolResult {
  return rejection({
    tool: '',
    callId,
    code: 'CALL_NOT_FOUND',
    message: callNotFoundMessage({ callId }),
  });
}

function toolResultOfFailure(input: { error: unknown; callId: string }): ToolResult {
  const { error, callId } = input;
  if (errorName(error) === 'WorkflowNotFoundError') return callNotFound(callId);
  const cause = (error as { cause?: { details?: unknown[]; name?: string } }).cause;
  const detail = cause?.details?.[0];
  if (isToolResult(detail)) return detail;
  // Terminated, cancelled or timed out from outside toolgate: say so, and never guess the effect.
  return rejection({
    tool: '',
    callId,
    code: 'INTERNAL_ERROR',
    message: stoppedOutsideMessage({ callId }),
    effect: 'unknown',
    data: { reason: cause?.name ?? errorName(error) ?? 'unknown' },
  });
}

function isToolResult(value: unknown): value is ToolResult {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as ToolResult).code === 'string' &&
    typeof (value as ToolResult).ok === 'boolean'
  );
}

/**
 * The pending answer as it stands now: the open round's approvals so far, the time left, and whose
 * turn it is (how many approvals are still needed, and which approvers may give them).
 */
function pendingNow(pending: ToolResult, round: ApprovalView): ToolResult {
  const timeLeftMs = Math.max(0, Date.parse(round.expiresAt) - Date.now());
  // A chain: whose turn it is is one group, step by step; what is needed is that step's.
  const turn = round.chain?.steps[round.chain.step - 1];
  const needed = round.chain
    ? Math.max(0, (turn?.quorum ?? 0) - (turn?.approvals.length ?? 0))
    : Math.max(0, round.quorum - round.approvals.length);
  const from = (round.eligible ?? []).filter((name) => !round.approvals.includes(name));
  const minutes = Math.round(timeLeftMs / 60_000);
  const chain =
    round.chain && turn
      ? { group: turn.group, step: round.chain.step, steps: round.chain.steps.length }
      : undefined;
  return {
    ...pending,
    message:
      `${pending.message} Now: ${needed} more approval(s) needed` +
      (chain ? `, group ${chain.group}'s turn (step ${chain.step} of ${chain.steps})` : '') +
      (from.length ? ` from ${from.join(', ')}` : '') +
      `, about ${minutes} minute(s) left.`,
    data: {
      ...pending.data,
      round: round.round,
      approvals: [...round.approvals],
      timeLeftMs,
      expiresAt: round.expiresAt,
      waitingFor: { approvals: needed, approvers: from, ...(chain ? { chain } : {}) },
      ...(round.remindAt !== undefined && Date.now() >= Date.parse(round.remindAt)
        ? { expiringSoon: true }
        : {}),
    },
  };
}
