import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  currentUpdateInfo,
  log,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { ToolCallActivities } from './activities';
import type { SessionActivities } from '../sessions/activities';
import type { ExecutionApproval } from '../approvals/protocol';
import type { AuditRecord } from '../audit/audit-store';
import type {
  ApprovalRequirement,
  CallEvaluation,
  CheckOutcome,
  EvaluatedCall,
  LookupAnswer,
  ToolCallActivityInput,
} from './call-evaluation';
import {
  approvalCancelledMessage,
  approvalDeniedMessage,
  approvalExpiredMessage,
  approvalPendingMessage,
  evaluationFailedMessage,
  intentConflictMessage,
  internalErrorMessage,
  mintRefusedMessage,
  outputContractMessage,
  quotaExceededMessage,
  successMessage,
  toolDisabledMessage,
  toolFailedMessage,
  unauthenticatedMessage,
  upstreamUnavailableMessage,
  verificationFailedMessage,
} from '../shared/model-messages';
import type { Proposal } from './proposal';
import { auditedRawArguments, proposalArgumentsDigest } from './proposal';
import type { CallOutcome } from '../sessions/session';
import { ownValue } from '../shared/own-records';
import { verifySignature } from '../shared/signatures';
import type {
  ApprovalState,
  CallState,
  ProposeResponse,
  CancellationReceipt,
  SignedCancellation,
} from './protocol';
import type { ToolGateSinks } from '../shared/temporal';
import {
  callStateQuery,
  cancelUpdate,
  maxCancellationReasonLength,
  proposeUpdate,
  searchAttributes,
} from './protocol';
import type { GrantActivities } from '../grants/activities';
import type { ControlsActivities } from '../controls/activities';
import type { QuotaActivities } from '../quotas/activities';
import type { HeldReservation } from '../quotas/protocol';
import { quotaWorkflowId } from '../quotas/protocol';
import type { DisabledSwitch } from '../controls/protocol';
import { disabledData, toolSwitchSignal } from '../controls/protocol';
import type { CancellationRefusalCode } from '../shared/codes';
import type { Effect, ToolResult } from '../shared/tool-result';
import { rejection } from '../shared/tool-result';
import { riskRank } from '../tools/risk-levels';
import { ApprovalNotifications } from '../notifications/workflow-call-side';
import type { ApprovalSubject } from '../approvals/workflow-round';
import { CallApprovals } from '../approvals/workflow-round';
import { describeContext } from './call-context';
import { untrustedSources } from '../shared/untrusted-text';

/** The input of a call's workflow: the proposal that started it, its update id and the caller's signature. */
export interface ToolCallInput {
  proposalId: string;
  proposal: Proposal;
  /** The caller's signature over `{ callId, proposal }` (kind `proposal`). */
  signature?: string;
}

/** How often a waiting call reads its kill switch when told it changed (then only before execution). */
const maxSwitchReads = 20;

/** A step's answer: go on with a value, or stop with the model's result. */
type Step<T> = { ok: true; value: T } | { ok: false; result: ToolResult };

/**
 * The workflow every proposed call runs as: docs/design.md's pipeline, step by step. The worker evaluates
 * the proposal against the contracts and the policy (steps 1 to 5) in one recorded local activity; the
 * workflow runs no tool code, so a contract deploy cannot change a waiting call on replay. Nothing
 * reaches a backend before the business checks and nothing changes the world before execution. A
 * success closes the run completed; a rejection closes it failed with the result in the failure's
 * details; nothing the model or an approver sends fails a task.
 */
export async function toolCall(input: ToolCallInput): Promise<ToolResult> {
  const call = new CallRun(input);
  let result: ToolResult;
  try {
    result = await pipeline(call);
  } catch (error) {
    log.error('call pipeline failed unexpectedly', { callId: call.callId, error: String(error) });
    result = call.reject({ code: 'INTERNAL_ERROR', message: internalErrorMessage });
  }
  await call.finish(result);
  // Tells the notifications' own workflow that the call closes; it never waits for a webhook.
  await call.notifications?.closed();
  await condition(allHandlersFinished);
  if (result.ok) return result;
  throw ApplicationFailure.create({
    type: result.code,
    message: result.message,
    details: [result],
    nonRetryable: true,
  });
}

async function pipeline(call: CallRun): Promise<ToolResult> {
  // Steps 1 to 5: signature, tool, allowlist, call id, parse, schema, risk level, policy.
  const evaluated = await evaluate(call);
  if (!evaluated.ok) return evaluated.result;
  // Step 5, limits across sessions: room reserved in each durable counter, released if no effect follows.
  const reserved = await call.reserveQuotas(evaluated.value);
  if (reserved) return reserved;
  const steps = new ToolSteps(call, evaluated.value);
  // Step 6: business checks (read-only).
  const checked = await steps.check();
  if (!checked.ok) return checked.result;
  // Step 7: human approval, when the risk level is above the caller's autonomy.
  const approved = await approve(call, steps);
  if (!approved.ok) return approved.result;
  // A cancellation accepted while the round was open, handled as its last decision came in.
  const cancelled = call.cancelledResult(steps.evaluated.summary);
  if (cancelled) return cancelled;
  // Step 8: execution, the call id as idempotency key on every attempt, a credential per attempt.
  const executed = await steps.execute(approved.value);
  if (!executed.ok) return executed.result;
  // Step 9: the tool's read-back of its effect.
  const verified = await steps.verify(executed.value.output);
  if (!verified.ok) return verified.result;
  return steps.succeeded(executed.value);
}

/** Steps 1 to 5, in the worker: its answer is recorded, so replay never re-runs contract code. */
async function evaluate(call: CallRun): Promise<Step<EvaluatedCall>> {
  let evaluation: CallEvaluation;
  try {
    evaluation = await proxyLocalActivities<ToolCallActivities>({
      startToCloseTimeout: '5s',
      retry: { maximumAttempts: 3 },
    }).evaluateCall({
      proposalId: call.input.proposalId,
      callId: call.callId,
      proposal: call.proposal,
      ...(call.input.signature !== undefined ? { signature: call.input.signature } : {}),
    });
  } catch (error) {
    log.error('call could not be evaluated', { callId: call.callId, error: String(error) });
    return { ok: false, result: call.reject({ code: 'INTERNAL_ERROR', message: evaluationFailedMessage }) };
  }
  call.evaluated(evaluation);
  if (!evaluation.ok) return { ok: false, result: call.reject(evaluation.refusal) };
  return { ok: true, value: evaluation.call };
}

/**
 * Step 7: no approval needed, approved (with what the minter checks), or the reason it stops. A
 * deploy that changes the tool's contract while the call waits has the call judged again (steps 1
 * to 5 under the new contract, recorded like the first time), and the steps go on with that
 * evaluation: see `CallApprovals.obtain`.
 */
async function approve(call: CallRun, steps: ToolSteps): Promise<Step<ExecutionApproval | undefined>> {
  const requirement = steps.evaluated.approval;
  if (!requirement) return { ok: true, value: undefined };
  call.state.approvalRule = requirement.rule;
  // A standing grant covered the call at evaluation: take a use of it, atomically, instead of waiting.
  const granted = await call.useStandingGrant(steps.evaluated);
  if (granted) return { ok: true, value: granted };
  const notifications = call.notifyApprovals({ evaluated: steps.evaluated, requirement });
  // While it waits, an operator may turn the tool off: the controls tell the call, which reads the switch.
  void call.watchToolSwitch(steps.evaluated.tool);
  const outcome = await call.approvals.obtain<ToolResult>({
    subject: approvalSubject(steps.evaluated, requirement),
    preview: () => steps.preview(),
    recheck: async () => {
      const rechecked = await steps.check();
      return rechecked.ok ? undefined : rechecked.result;
    },
    judgeAgain: async () => {
      const evaluated = await evaluate(call);
      if (!evaluated.ok) return { ok: false, stop: evaluated.result };
      steps.judgedAgain(evaluated.value);
      const again = evaluated.value.approval;
      // The rule the new evaluation asks approval by; none when it lets the caller act alone.
      call.state.approvalRule = again?.rule;
      return { ok: true, subject: again ? approvalSubject(evaluated.value, again) : undefined };
    },
    onOpen: (round) => {
      const { summary } = steps.evaluated;
      setCurrentDetails(
        `${summary}, waiting for ${round.quorum - round.approvals.length} approval(s), ` +
          `expires ${round.expiresAt.slice(11, 16)} UTC`,
      );
      call.state.pending = call.reject({
        code: 'APPROVAL_PENDING',
        message: approvalPendingMessage({ summary, expiresAt: round.expiresAt }),
        data: {
          callId: call.callId,
          expiresAt: round.expiresAt,
          preview: round.preview,
          riskLevel: round.riskLevel,
          quorum: round.quorum,
          round: round.round,
        },
      });
      notifications.opened(round);
    },
    onEnd: (round, ending) => notifications.ended(round, ending),
    interruption: () => {
      const { cancellation, disabledSwitch } = call;
      if (cancellation) {
        return {
          reason: `cancelled by ${cancellation.by}: ${cancellation.reason}`,
          stop: () => call.cancelledResult(steps.evaluated.summary) as ToolResult,
        };
      }
      if (disabledSwitch) {
        return {
          reason: `${disabledSwitch.tool} turned off by operator ${disabledSwitch.operator}: ${disabledSwitch.reason}`,
          stop: () => call.disabledResult(disabledSwitch),
        };
      }
      return undefined;
    },
  });
  if (outcome.ok) return { ok: true, value: outcome.approval };
  const { summary } = steps.evaluated;
  switch (outcome.ended) {
    case 'stopped':
      return { ok: false, result: outcome.stop };
    case 'expired':
      return {
        ok: false,
        result: call.reject({
          code: 'APPROVAL_EXPIRED',
          message: approvalExpiredMessage({ summary, expiresAt: outcome.expiresAt }),
          data: { expiresAt: outcome.expiresAt },
        }),
      };
    case 'denied':
      return {
        ok: false,
        result: call.reject({
          code: 'APPROVAL_DENIED',
          message: approvalDeniedMessage({ summary, approver: outcome.approver, reason: outcome.reason }),
          data: { approver: outcome.approver, reason: outcome.reason },
        }),
      };
  }
}

/** What an approval round of this evaluation binds: the call's arguments and risk level under its contract. */
function approvalSubject(evaluated: EvaluatedCall, requirement: ApprovalRequirement): ApprovalSubject {
  return {
    tool: evaluated.tool,
    args: evaluated.args,
    riskLevel: evaluated.riskLevel,
    contractDigest: evaluated.contractDigest,
    requirement,
  };
}

/** What execution produced: the output within its contract, and whether it was found after a lost answer. */
interface Executed {
  output: unknown;
  confirmedAfterLoss: boolean;
}

/**
 * Steps 6, 8 and 9 for one evaluated call: the tool's activities, with its retry and what it has. The
 * evaluation is the latest recorded one: a call judged again after a contract deploy goes on with it.
 */
class ToolSteps {
  private readSteps!: ToolCallActivities;
  private writeSteps!: ToolCallActivities;
  private activityInput!: ToolCallActivityInput;
  private current!: EvaluatedCall;

  constructor(
    private readonly call: CallRun,
    evaluated: EvaluatedCall,
  ) {
    this.judgedAgain(evaluated);
  }

  get evaluated(): EvaluatedCall {
    return this.current;
  }

  /** Goes on with a new evaluation of the call: its arguments, retry, capabilities and effect. */
  judgedAgain(evaluated: EvaluatedCall): void {
    this.current = evaluated;
    const { call } = this;
    const { retry } = evaluated;
    const options = {
      startToCloseTimeout: retry.attemptTimeoutMs,
      retry: {
        maximumAttempts: retry.maximumAttempts,
        initialInterval: retry.initialIntervalMs,
        maximumInterval: retry.maximumIntervalMs,
        backoffCoefficient: retry.backoffCoefficient,
      },
    };
    // Read-only steps (checks, previews, read-backs, a read tool's execution) run as local activities:
    // same retries, no server round trip each. A write's execution is a server-side activity.
    this.readSteps = proxyLocalActivities<ToolCallActivities>(options);
    this.writeSteps = proxyActivities<ToolCallActivities>(options);
    const context = call.proposal.context;
    this.activityInput = {
      tool: evaluated.tool,
      callId: call.callId,
      args: evaluated.args,
      // Only when the harness attached one, so the activities of a call without one run as before.
      ...(context ? { context } : {}),
    };
  }

  /** Step 6 (and 7b): the tool's read-only business checks; a refusal carries its domain code. */
  async check(): Promise<Step<undefined>> {
    this.call.progress('checking', `${this.evaluated.summary}: checking`);
    let check: CheckOutcome = { ok: true };
    try {
      if (this.evaluated.capabilities.check) check = await this.readSteps.checkToolCall(this.activityInput);
    } catch (error) {
      return { ok: false, result: this.unavailable({ error, effect: 'none' }) };
    }
    if (check.ok) return { ok: true, value: undefined };
    return {
      ok: false,
      result: this.call.reject({ code: check.code, message: check.message, ...withData(check.data) }),
    };
  }

  /** The exact effect for an approver to read: the tool's dry run, else the validated arguments. */
  async preview(): Promise<{ ok: true; preview: Record<string, unknown> } | { ok: false; stop: ToolResult }> {
    if (!this.evaluated.capabilities.preview) {
      return { ok: true, preview: { tool: this.evaluated.tool, arguments: this.evaluated.args } };
    }
    try {
      return { ok: true, ...(await this.readSteps.previewToolCall(this.activityInput)) };
    } catch (error) {
      return { ok: false, stop: this.unavailable({ error, effect: 'none' }) };
    }
  }

  /** Step 8: runs the tool; when retries run out on a write, asks the backend what it recorded. */
  async execute(approval: ExecutionApproval | undefined): Promise<Step<Executed>> {
    const { evaluated, call } = this;
    call.progress('executing', `${evaluated.summary}: executing`);
    const executor = evaluated.effect === 'read' ? this.readSteps : this.writeSteps;
    if (evaluated.effect === 'read') call.executedRead = true;
    try {
      const { output } = await executor.executeToolCall({
        ...this.activityInput,
        caller: call.proposal.caller,
        runId: call.runId,
        ...(approval ? { approval } : {}),
      });
      return { ok: true, value: { output, confirmedAfterLoss: false } };
    } catch (error) {
      const failure = failureOf(error);
      switch (failure.type) {
        case 'TOOL_REJECTED': {
          const details = failure.details?.[0] as {
            code: string;
            message: string;
            data?: Record<string, unknown>;
          };
          return { ok: false, result: call.reject({ ...details, ...withData(details.data) }) };
        }
        case 'PERMISSION_DENIED': {
          const reason = failure.message ?? 'no credential';
          const message = mintRefusedMessage({ tool: evaluated.tool, reason });
          return { ok: false, result: call.reject({ code: 'PERMISSION_DENIED', message }) };
        }
        case 'OUTPUT_CONTRACT_VIOLATION':
          return { ok: false, result: this.outputContractViolation() };
        case 'TOOL_DISABLED':
          // Turned off before the first attempt reached the backend: nothing was sent.
          return { ok: false, result: call.disabledResult(failure.details?.[0] as DisabledSwitch) };
        default:
          if (evaluated.effect === 'read')
            return { ok: false, result: this.unavailable({ error, effect: 'none' }) };
          // Retries ran out: never guess. Ask the backend what it recorded under this key.
          return this.lookUp(error);
      }
    }
  }

  /** After a write's retries ran out: the backend's record under the call's key decides. */
  private async lookUp(executionError: unknown): Promise<Step<Executed>> {
    const { retry } = this.evaluated;
    let found: LookupAnswer;
    try {
      found = await proxyActivities<ToolCallActivities>({
        startToCloseTimeout: retry.attemptTimeoutMs,
        retry: { maximumAttempts: 3, initialInterval: retry.initialIntervalMs },
      }).findAppliedEffect(this.activityInput);
    } catch {
      return { ok: false, result: this.unavailable({ error: executionError, effect: 'unknown' }) };
    }
    switch (found.status) {
      case 'applied':
        return { ok: true, value: { output: found.output, confirmedAfterLoss: true } };
      case 'not-seen':
        return { ok: false, result: this.unavailable({ error: executionError, effect: 'none' }) };
      case 'refused':
        // The backend refused under this key and the answer was lost: its domain code, nothing applied.
        return { ok: false, result: this.call.reject({ ...found, ...withData(found.data) }) };
      case 'broken':
        return {
          ok: false,
          result: found.problem === 'output-contract' ? this.outputContractViolation() : this.toolFailed(),
        };
    }
  }

  /** Step 9: the tool's read-back; a mismatch or an unreadable effect is `VERIFICATION_FAILED`. */
  async verify(output: unknown): Promise<Step<undefined>> {
    this.call.progress('verifying');
    let verification: CheckOutcome = { ok: true };
    try {
      if (this.evaluated.capabilities.verify) {
        verification = await this.readSteps.verifyToolEffect({ ...this.activityInput, output });
      }
    } catch {
      verification = { ok: false, code: 'VERIFICATION_FAILED', message: 'the effect could not be read back' };
    }
    if (verification.ok) return { ok: true, value: undefined };
    const message = verificationFailedMessage({
      summary: this.evaluated.summary,
      problem: verification.message,
    });
    return {
      ok: false,
      result: this.call.reject({ code: 'VERIFICATION_FAILED', message, effect: this.appliedEffect() }),
    };
  }

  succeeded(executed: Executed): ToolResult {
    const { evaluated } = this;
    return {
      ok: true,
      tool: evaluated.tool,
      code: 'OK',
      message: successMessage({ ...evaluated, confirmedAfterLoss: executed.confirmedAfterLoss }),
      effect: this.appliedEffect(),
      data: asData(executed.output),
      callId: this.call.callId,
    };
  }

  private appliedEffect(): Effect {
    return this.evaluated.effect === 'write' ? 'applied' : 'none';
  }

  private outputContractViolation(): ToolResult {
    const applied = this.evaluated.effect === 'write';
    const message = outputContractMessage({ tool: this.evaluated.tool, applied });
    return this.call.reject({ code: 'OUTPUT_CONTRACT_VIOLATION', message, effect: this.appliedEffect() });
  }

  private toolFailed(): ToolResult {
    return this.call.reject({ code: 'INTERNAL_ERROR', message: toolFailedMessage(this.evaluated) });
  }

  private unavailable(input: { error: unknown; effect: 'none' | 'unknown' }): ToolResult {
    if (failureOf(input.error).type === 'INTERNAL_ERROR' && input.effect === 'none') return this.toolFailed();
    const message = upstreamUnavailableMessage({ tool: this.evaluated.tool, effect: input.effect });
    return this.call.reject({
      code: 'UPSTREAM_UNAVAILABLE',
      message,
      effect: input.effect,
      data: { callId: this.call.callId },
    });
  }
}

/**
 * One run of a call: its queryable state, the handlers for proposals and decisions, the evaluation
 * it recorded, and its last step (audit record and session outcome, then the answer).
 */
class CallRun {
  readonly callId: string;
  readonly runId: string;
  readonly proposal: Proposal;
  readonly state: CallState;
  readonly approvals: CallApprovals;
  /** The approval notifications, once the call needs approval. */
  notifications?: ApprovalNotifications;
  private evaluation?: CallEvaluation;
  /** Set by an accepted cancellation: who (`caller x` or `operator y`) and why. */
  cancellation?: { by: string; reason: string; at: string };
  /** The counters of the call's limits across sessions and its room's id: released if it ends without an effect. */
  private quotaReservation: { reservationId: string; held: HeldReservation[] } = {
    reservationId: '',
    held: [],
  };
  /** A read's execution started: it counts toward its limits whatever it answers. */
  executedRead = false;
  /** The standing grant's use the call took (step 7): given back if it ends without an effect. */
  private grantUse?: { grantId: string; reservationId: string; runId: string };
  /** Set when the kill switch, read after the controls told the call, turned its tool off while it waited. */
  disabledSwitch?: DisabledSwitch;
  private switchWakeUps = 0;
  private readonly startedAt = Date.now();
  private readonly queuedAttributes: SearchAttributeUpdatePair[] = [];

  constructor(readonly input: ToolCallInput) {
    const info = workflowInfo();
    this.callId = info.workflowId;
    this.runId = info.runId;
    this.proposal = input.proposal;
    this.state = {
      stage: 'validating',
      tool: this.proposal.tool,
      caller: this.proposal.caller,
      session: this.proposal.session,
      ...(this.proposal.context !== undefined ? { context: this.proposal.context } : {}),
      decisions: [],
    };
    setHandler(callStateQuery, () => this.state);
    setHandler(proposeUpdate, (request) => this.answerProposal(request));
    setHandler(toolSwitchSignal, () => {
      this.switchWakeUps++;
    });
    setHandler(cancelUpdate, (request) => this.cancel(request), {
      validator: (request: SignedCancellation) => this.validateCancellation(request),
    });
    this.approvals = new CallApprovals({
      callId: this.callId,
      runId: this.runId,
      caller: this.proposal.caller,
      state: this.state,
      approvers: () => this.evaluation?.approvers,
      operators: () => this.evaluation?.operators,
      interrupted: () =>
        this.cancellation
          ? `the call was cancelled by ${this.cancellation.by}`
          : this.disabledSwitch
            ? `${this.disabledSwitch.tool} was turned off by operator ${this.disabledSwitch.operator}`
            : undefined,
      onStateChange: (value: ApprovalState) => {
        // Approval states are what ops watch live: written at once, with anything queued before them.
        this.setAttribute({ key: searchAttributes.approvalState, value }, { flush: true });
      },
    });
  }

  reject(input: {
    code: string;
    message: string;
    effect?: Effect;
    data?: Record<string, unknown>;
  }): ToolResult {
    return rejection({ tool: this.proposal.tool, callId: this.callId, ...input });
  }

  /** Starts the approval notifications the evaluation recorded (none when it recorded no plan). */
  notifyApprovals(input: {
    evaluated: EvaluatedCall;
    requirement: ApprovalRequirement;
  }): ApprovalNotifications {
    const { evaluated, requirement } = input;
    this.notifications = new ApprovalNotifications(
      {
        callId: this.callId,
        runId: this.runId,
        tool: evaluated.tool,
        caller: this.proposal.caller,
        ...(this.proposal.context && describeContext(this.proposal.context)
          ? { actingFor: describeContext(this.proposal.context) }
          : {}),
        summary: evaluated.summary,
        windowMs: requirement.windowMs,
      },
      requirement.notifications,
    );
    return this.notifications;
  }

  progress(stage: CallState['stage'], details?: string): void {
    this.state.stage = stage;
    if (details !== undefined) setCurrentDetails(details);
  }

  evaluated(evaluation: CallEvaluation): void {
    this.evaluation = evaluation;
    if (evaluation.args) this.state.validatedArguments = evaluation.args;
    if (evaluation.riskLevel) {
      this.state.riskLevel = evaluation.riskLevel;
      this.setAttribute({ key: searchAttributes.riskLevel, value: riskRank(evaluation.riskLevel) });
    }
  }

  /**
   * The last step, in the run's last workflow task: the worker appends the audit record and counts
   * the outcome in the session, in the same store, then the run closes and answers. The answer goes out only with the close, so a proposal made after it starts
   * a new run instead of joining this one.
   */
  async finish(result: ToolResult): Promise<void> {
    this.state.stage = 'recording';
    // A call that changed nothing does not count toward its limits; an effect that may have happened,
    // or a read that ran, does.
    if (this.quotaReservation.held.length && result.effect === 'none' && !this.executedRead) {
      try {
        await proxyLocalActivities<QuotaActivities>({
          startToCloseTimeout: '60s',
          retry: { maximumAttempts: 5, initialInterval: '500ms' },
        }).releaseQuotas({ held: this.quotaReservation.held });
      } catch (error) {
        log.error('a limit reservation could not be released; it counts until it leaves its window', {
          callId: this.callId,
          error: String(error),
        });
      }
    }
    if (this.grantUse && result.effect === 'none' && !this.executedRead) {
      try {
        await proxyLocalActivities<GrantActivities>({
          startToCloseTimeout: '60s',
          retry: { maximumAttempts: 5, initialInterval: '500ms' },
        }).releaseStandingGrant(this.grantUse);
      } catch (error) {
        log.error("a standing grant's use could not be given back; it stays counted", {
          callId: this.callId,
          error: String(error),
        });
      }
    }
    this.setAttribute({ key: searchAttributes.toolCode, value: result.code }, { flush: true });
    setCurrentDetails(
      `${this.evaluation?.summary ?? this.proposal.tool}: ${result.code} (effect ${result.effect})`,
    );
    const evaluated = this.evaluation?.ok ? this.evaluation.call : undefined;
    const untrusted = result.ok
      ? untrustedSources({
          tool: this.proposal.tool,
          marked: evaluated?.untrustedOutput,
          output: result.data,
        })
      : [];
    const outcome: CallOutcome = {
      callId: this.callId,
      runId: this.runId,
      tool: this.proposal.tool,
      code: result.code,
      ok: result.ok,
      ...(untrusted.length > 0 ? { untrusted } : {}),
    };
    try {
      await proxyLocalActivities<ToolCallActivities>({
        startToCloseTimeout: '10s',
        retry: { maximumAttempts: 10, maximumInterval: '5s' },
      }).finishToolCall({
        record: this.auditRecord(result),
        // Only the outcome of a proposal its session admitted counts in the session.
        ...(this.evaluation?.authenticated && this.evaluation.admitted ? { outcome } : {}),
      });
    } catch (error) {
      log.error('call could not be finished (audit record, session outcome)', {
        callId: this.callId,
        error: String(error),
      });
    }
    this.state.result = result;
    this.state.pending = undefined;
    this.state.stage = 'done';
  }

  /**
   * While the call waits for approval: each time the controls say its tool's switch changed (a
   * signal, trusted as a wake-up only), reads the switch (a recorded local activity) and stops the
   * wait when it is off. At most `maxSwitchReads` reads, so a flood of signals cannot grow the history
   * without bound; the check before execution stays.
   */
  async watchToolSwitch(tool: string): Promise<void> {
    let seen = 0;
    try {
      for (let reads = 0; reads < maxSwitchReads; reads++) {
        await condition(
          () =>
            this.state.result !== undefined ||
            this.state.stage === 'executing' ||
            (this.switchWakeUps > seen && this.state.stage === 'awaiting-approval'),
        );
        if (this.state.result !== undefined || this.state.stage === 'executing') return;
        seen = this.switchWakeUps;
        const off = await this.readToolSwitch(tool);
        if (off) {
          this.disabledSwitch = off;
          return;
        }
      }
    } catch (error) {
      // The switch could not be read now: the call reads it again before it executes.
      log.warn('the kill switch could not be read while the call waited', {
        callId: this.callId,
        error: String(error),
      });
    }
  }

  /**
   * What the call's room in a limit, or its use of a grant, is keyed by: a write's by its call id (a
   * run proposed again after an effect that may have happened reuses what its earlier run kept, never
   * counting one refund twice); a read's by its run (it runs again when proposed again, so each run counts).
   */
  private reservationIdOf(evaluated: EvaluatedCall): string {
    return evaluated.effect === 'write' ? this.callId : `${this.callId}:${this.runId}`;
  }

  /**
   * Step 7 by a standing grant: when the evaluation saw one covering the call, takes a use of it (a
   * recorded local activity: the grants workflow counts it atomically and the worker checks the grant
   * against its policy). The grant and its approvers join the call's state and audit record. Undefined
   * when no grant covers it (any more): the call then asks for approval as usual.
   */
  async useStandingGrant(evaluated: EvaluatedCall): Promise<ExecutionApproval | undefined> {
    if (evaluated.standingGrant === undefined) return undefined;
    const reservationId = this.reservationIdOf(evaluated);
    let used: Awaited<ReturnType<GrantActivities['useStandingGrant']>>;
    try {
      used = await proxyLocalActivities<GrantActivities>({
        startToCloseTimeout: '60s',
        retry: { maximumAttempts: 3, initialInterval: '500ms' },
      }).useStandingGrant({
        reservationId,
        callId: this.callId,
        runId: this.runId,
        caller: this.proposal.caller,
        tool: evaluated.tool,
        riskLevel: evaluated.riskLevel,
        ...(evaluated.amount !== undefined ? { amount: evaluated.amount } : {}),
      });
    } catch (error) {
      // The grants could not be asked: a human decides instead.
      log.warn('a standing grant could not be used; the call asks for approval', {
        callId: this.callId,
        error: String(error),
      });
      return undefined;
    }
    if (!used.ok) {
      this.state.grant = { outcome: 'not-covered', reason: used.reason };
      return undefined;
    }
    const { grant } = used.grant;
    this.grantUse = { grantId: grant.grantId, reservationId, runId: this.runId };
    this.state.grant = {
      outcome: 'used',
      grantId: grant.grantId,
      approvers: used.approvers,
      reason: grant.reason,
      expiresAt: grant.expiresAt,
    };
    this.setAttribute({ key: searchAttributes.approvalState, value: 'granted' }, { flush: true });
    return { grant: used.grant, reservationId };
  }

  /**
   * Reserves room for the call in the counters of its limits across sessions (none: no step at all);
   * `POLICY_LIMIT` with which limit, what is used and left, and when room frees up, when one is full.
   */
  async reserveQuotas(evaluated: EvaluatedCall): Promise<ToolResult | undefined> {
    if (!evaluated.quotas?.length) return undefined;
    const reservationId = this.reservationIdOf(evaluated);
    const { taskQueue } = workflowInfo();
    // Known before the reservation, so every counter is released if the call ends without an effect,
    // whatever the reservation step managed (releasing room not held changes nothing).
    this.quotaReservation = {
      reservationId,
      held: evaluated.quotas.map((quota) => ({
        workflowId: quotaWorkflowId({ taskQueue, quota }),
        reservationId,
        windowMs: quota.windowMs,
        runId: this.runId,
      })),
    };
    const admission = await proxyLocalActivities<QuotaActivities>({
      startToCloseTimeout: '60s',
      retry: { maximumAttempts: 3, initialInterval: '500ms' },
    }).reserveQuotas({
      reservationId: this.quotaReservation.reservationId,
      runId: this.runId,
      quotas: evaluated.quotas,
      ...(evaluated.amount !== undefined ? { amount: evaluated.amount } : {}),
    });
    if (admission.ok) return undefined;
    const { quota, usage, amount } = admission;
    const scope = quota.scope === 'caller' ? `caller ${quota.caller ?? ''}` : 'the whole deployment';
    return this.reject({
      code: 'POLICY_LIMIT',
      message: quotaExceededMessage({
        tool: quota.tool,
        scope,
        window: quota.window,
        ...(quota.maxCalls !== undefined ? { maxCalls: quota.maxCalls } : {}),
        ...(quota.maxAmount !== undefined ? { maxAmount: quota.maxAmount } : {}),
        amount,
        calls: usage.calls,
        used: usage.amount,
        ...(usage.resetsAt !== undefined ? { resetsAt: usage.resetsAt } : {}),
      }),
      data: {
        limit: {
          scope: quota.scope,
          ...(quota.caller !== undefined ? { caller: quota.caller } : {}),
          tool: quota.tool,
          window: quota.window,
          ...(quota.maxCalls !== undefined ? { maxCalls: quota.maxCalls } : {}),
          ...(quota.maxAmount !== undefined ? { maxAmount: quota.maxAmount } : {}),
        },
        amount,
        used: { calls: usage.calls, amount: usage.amount },
        remaining: {
          ...(usage.remainingCalls !== undefined ? { calls: usage.remainingCalls } : {}),
          ...(usage.remainingAmount !== undefined ? { amount: usage.remainingAmount } : {}),
        },
        ...(usage.resetsAt !== undefined ? { resetsAt: usage.resetsAt } : {}),
      },
    });
  }

  disabledResult(off: DisabledSwitch): ToolResult {
    return this.reject({
      code: 'TOOL_DISABLED',
      message: toolDisabledMessage({ tool: off.tool, reason: off.reason, since: off.since }),
      data: disabledData(off),
    });
  }

  /** The switch that stops this call now, or undefined; a switch that cannot be read stops it too (`INTERNAL_ERROR` upstream). */
  private async readToolSwitch(tool: string): Promise<DisabledSwitch | undefined> {
    const off = await proxyLocalActivities<ControlsActivities>({
      startToCloseTimeout: '10s',
      retry: { maximumAttempts: 5, initialInterval: '200ms' },
    }).currentToolSwitch({ tool, caller: this.proposal.caller });
    return off ?? undefined;
  }

  /** `APPROVAL_CANCELLED` when a cancellation was accepted, else undefined. */
  cancelledResult(summary: string): ToolResult | undefined {
    const { cancellation } = this;
    if (!cancellation) return undefined;
    return this.reject({
      code: 'APPROVAL_CANCELLED',
      message: approvalCancelledMessage({ summary, by: cancellation.by, reason: cancellation.reason }),
      data: { cancelledBy: cancellation.by, reason: cancellation.reason, cancelledAt: cancellation.at },
    });
  }

  /**
   * Refuses a cancellation that does not hold, before anything is recorded: a signature that is not
   * the call's caller's or a policy operator's over this run, or a call that is not waiting for
   * approval (execution started or about to: `CANCEL_TOO_LATE`).
   */
  private validateCancellation(request: SignedCancellation): void {
    const refuse = (code: CancellationRefusalCode, message: string): never => {
      // A refusal leaves no trace in history: the audit store keeps it, as it keeps refused decisions.
      this.auditCancellation(request, code);
      throw ApplicationFailure.create({ type: code, message, nonRetryable: true });
    };
    const { cancellation, signature } = request ?? {};
    const by = cancellation?.by as Record<string, unknown> | undefined;
    const reason = cancellation?.reason;
    if (typeof reason === 'string' && reason.length > maxCancellationReasonLength) {
      refuse(
        'CANCELLATION_INVALID',
        `the reason is ${reason.length} characters; give one of at most ${maxCancellationReasonLength}`,
      );
    }
    if (
      typeof reason !== 'string' ||
      reason.trim() === '' ||
      typeof signature !== 'string' ||
      cancellation.callId !== this.callId ||
      cancellation.runId !== this.runId ||
      typeof cancellation.issuedAt !== 'string'
    ) {
      refuse(
        'CANCELLATION_INVALID',
        `the cancellation must name this call and run, give a reason (at most ${maxCancellationReasonLength} characters) and be signed`,
      );
    }
    // Exactly one principal, named by a string: the handler names the one whose key was checked here.
    const principals = by !== null && typeof by === 'object' && !Array.isArray(by) ? Object.keys(by) : [];
    const principal = principals.length === 1 ? principals[0] : undefined;
    const name = principal !== undefined ? by?.[principal] : undefined;
    const key =
      typeof name !== 'string'
        ? undefined
        : principal === 'caller' && name === this.proposal.caller
          ? this.evaluation?.callerKeyHex
          : principal === 'operator'
            ? ownValue(this.evaluation?.operators, name)
            : undefined;
    if (
      !key ||
      !verifySignature({
        kind: 'cancellation',
        value: cancellation,
        signature: signature,
        publicKeyHex: key,
      })
    ) {
      refuse(
        'SIGNATURE_INVALID',
        "the cancellation is not signed by this call's caller or an operator of the policy",
      );
    }
    this.refuseUnlessWaiting(refuse);
  }

  private refuseUnlessWaiting(refuse: (code: CancellationRefusalCode, message: string) => never): void {
    const { stage, approval } = this.state;
    if (this.cancellation) refuse('CANCEL_TOO_LATE', 'the call is already cancelled');
    if (stage === 'awaiting-approval' && approval?.state === 'pending') return;
    if (approval !== undefined && approval.state !== 'pending') {
      refuse(
        'CANCEL_TOO_LATE',
        `the approval ended (${approval.state}) and the call went on: nothing was cancelled; read its result`,
      );
    }
    if (stage === 'executing' || stage === 'verifying' || stage === 'recording' || stage === 'done') {
      refuse(
        'CANCEL_TOO_LATE',
        'execution already started (or the call ended): nothing was cancelled; read its result',
      );
    }
    refuse(
      'NOT_AWAITING_APPROVAL',
      `the call is not waiting for approval (stage ${stage}); only a call that waits can be cancelled`,
    );
  }

  /** An accepted cancellation: the open round closes `cancelled` and the call answers `APPROVAL_CANCELLED`. */
  private cancel(request: SignedCancellation): CancellationReceipt {
    // The round may have been decided between the validator and this handler.
    this.refuseUnlessWaiting((code, message) => {
      this.auditCancellation(request, code);
      throw ApplicationFailure.create({ type: code, message, nonRetryable: true });
    });
    this.auditCancellation(request, 'accepted');
    const { by } = request.cancellation;
    const who = 'caller' in by ? `caller ${by.caller}` : `operator ${by.operator}`;
    this.cancellation = { by: who, reason: request.cancellation.reason, at: new Date().toISOString() };
    return { accepted: true, callId: this.callId, cancelledBy: who };
  }

  /**
   * Every cancellation attempt, accepted or refused, reaches the audit store with the decision
   * attempts (decision `cancel`, the canceller in place of the approver, the signed cancellation as
   * its envelope), once per update id and never during replay.
   */
  private auditCancellation(request: SignedCancellation, outcome: string): void {
    const by = (request as Partial<SignedCancellation> | null)?.cancellation?.by as
      Record<string, unknown> | undefined;
    const who =
      typeof by?.caller === 'string'
        ? `caller ${by.caller}`
        : typeof by?.operator === 'string'
          ? `operator ${by.operator}`
          : '(unknown)';
    proxySinks<ToolGateSinks>().audit.decisionAttempt({
      updateId: currentUpdateInfo()?.id ?? '(none)',
      callId: this.callId,
      runId: this.runId,
      approver: who.slice(0, 300),
      decision: 'cancel',
      outcome,
      // A forger's megabytes are not kept: what is larger than a real cancellation is marked, not stored.
      envelope: JSON.stringify(request ?? null).length <= 4096 ? (request ?? null) : { oversized: true },
    });
  }

  /** A proposal's answer: the run's result, or `APPROVAL_PENDING` while it waits for a human. */
  private async answerProposal(request: {
    proposalId: string;
    proposal: Proposal;
    signature?: string;
  }): Promise<ProposeResponse> {
    const startedRun = request.proposalId === this.input.proposalId;
    if (!startedRun) {
      // A joining proposal must be signed by the caller too; it waits for the evaluation to know the key.
      await condition(() => this.evaluation !== undefined || this.state.result !== undefined);
      if (!this.signedByCaller(request)) {
        return {
          startedRun,
          result: this.reject({
            code: 'UNAUTHENTICATED_CALLER',
            message: unauthenticatedMessage(this.proposal),
          }),
        };
      }
      const { intentId } = this.proposal;
      if (
        intentId !== undefined &&
        proposalArgumentsDigest(request.proposal) !== proposalArgumentsDigest(this.proposal)
      ) {
        const message = intentConflictMessage({ intentId, tool: this.proposal.tool });
        return { startedRun, result: this.reject({ code: 'IDEMPOTENCY_CONFLICT', message }) };
      }
      // A joining proposal is a step of its session like the first: the loop guard counts it.
      const admission = await this.admitJoining({ ...request, callId: this.callId });
      if (!admission.admitted) return { startedRun, result: admission.result };
      // Admitted, but joining a run its own starter's admission refused: that refusal is not this
      // proposal's answer, and the run runs nothing; the client proposes again once it has closed.
      if (this.evaluation?.authenticated && !this.evaluation.admitted && !this.evaluation.ok) {
        return { startedRun, result: this.reject(this.evaluation.refusal), proposeAgain: true };
      }
    }
    await condition(() => this.state.result !== undefined || this.state.pending !== undefined);
    if (this.state.result) {
      // A proposal that joined a run did not make anything run again.
      const { result } = this.state;
      return { startedRun, result: startedRun ? result : { ...result, replayed: true } };
    }
    return { startedRun, result: this.state.pending as ToolResult };
  }

  /** The session's admission of a proposal that joins this run (a recorded local activity). */
  private async admitJoining(request: {
    proposalId: string;
    callId: string;
    proposal: Proposal;
    signature?: string;
  }): Promise<{ admitted: true } | { admitted: false; result: ToolResult }> {
    try {
      return await proxyLocalActivities<SessionActivities>({
        startToCloseTimeout: '10s',
        retry: { maximumAttempts: 5, initialInterval: '200ms' },
      }).admitJoiningProposal(request);
    } catch (error) {
      log.error('a joining proposal could not be admitted', { callId: this.callId, error: String(error) });
      return {
        admitted: false,
        result: this.reject({ code: 'INTERNAL_ERROR', message: internalErrorMessage }),
      };
    }
  }

  private signedByCaller(request: { proposal: Proposal; signature?: string }): boolean {
    const key = this.evaluation?.callerKeyHex;
    if (!key || !request.signature) return false;
    return verifySignature({
      kind: 'proposal',
      value: { callId: this.callId, proposal: request.proposal },
      signature: request.signature,
      publicKeyHex: key,
    });
  }

  /** Search attributes are queued until the next wait or the close, and written together. */
  private setAttribute(pair: SearchAttributeUpdatePair, options: { flush?: boolean } = {}): void {
    this.queuedAttributes.push(pair);
    if (options.flush) upsertSearchAttributes(this.queuedAttributes.splice(0));
  }

  private auditRecord(result: ToolResult): AuditRecord {
    const finishedAt = Date.now();
    const { evaluation, proposal } = this;
    return {
      callId: this.callId,
      runId: this.runId,
      session: proposal.session,
      caller: proposal.caller,
      tool: proposal.tool,
      rawArguments: auditedRawArguments(proposal),
      ...(proposal.intentId !== undefined ? { intentId: proposal.intentId } : {}),
      ...(typeof proposal.userMessage === 'string' ? { userMessage: proposal.userMessage } : {}),
      ...(proposal.context !== undefined ? { context: proposal.context } : {}),
      ...(evaluation?.args ? { validatedArguments: evaluation.args } : {}),
      ...(evaluation?.riskLevel ? { riskLevel: evaluation.riskLevel } : {}),
      ...(evaluation ? { policyVersion: evaluation.policyVersion } : {}),
      ...(this.state.decisions.length ? { decisions: this.state.decisions } : {}),
      ...(this.state.grant?.outcome === 'used'
        ? { grant: { grantId: this.state.grant.grantId, approvers: this.state.grant.approvers } }
        : {}),
      code: result.code,
      ok: result.ok,
      effect: result.effect,
      result,
      startedAt: new Date(this.startedAt).toISOString(),
      finishedAt: new Date(finishedAt).toISOString(),
      durationMs: finishedAt - this.startedAt,
    };
  }
}

function withData(data: Record<string, unknown> | undefined): { data?: Record<string, unknown> } {
  return data ? { data } : {};
}

function failureOf(error: unknown): { type?: string; message?: string; details?: unknown[] } {
  // An activity's failure arrives wrapped in an ActivityFailure; a local activity's arrives as itself.
  const failure = error as
    { type?: unknown; message?: string; details?: unknown[]; cause?: unknown } | undefined;
  if (typeof failure?.type === 'string')
    return failure as { type: string; message?: string; details?: unknown[] };
  const cause = failure?.cause as { type?: string; message?: string; details?: unknown[] } | undefined;
  return cause ?? {};
}

function asData(output: unknown): Record<string, unknown> {
  return output !== null && typeof output === 'object' && !Array.isArray(output)
    ? (output as Record<string, unknown>)
    : { value: output };
}
