import {
  proxyLocalActivities,
  log,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { ToolCallActivities } from './activities';
import type { AuditRecord } from '../audit/audit-store';
import type { ApprovalRequirement, CallEvaluation, EvaluatedCall } from './call-evaluation';
import type { Proposal } from './proposal';
import { auditedRawArguments } from './proposal';
import type { CallOutcome } from '../sessions/session';
import type { CallState, ToolCallInput } from './protocol';
import { searchAttributes } from './protocol';
import type { Effect, ToolResult } from '../shared/tool-result';
import { rejection } from '../shared/tool-result';
import { riskRank } from '../tools/risk-levels';
import { ApprovalNotifications } from '../notifications/workflow-call-side';
import { describeContext } from './call-context';
import { untrustedSources } from '../shared/untrusted-text';

/** A step's answer: go on with a value, or stop with the model's result. */
export type Step<T> = { ok: true; value: T } | { ok: false; result: ToolResult };

/**
 * One run of a call, as its collaborators share it: who proposed what, its queryable state, the
 * evaluation it recorded, its search attributes, and its last step (the audit record and the
 * session outcome, then the answer). The handlers and the steps live in collaborators of their own
 * (`workflow.ts` wires them).
 */
export class CallRun {
  readonly callId: string;
  readonly runId: string;
  readonly proposal: Proposal;
  readonly state: CallState;
  /** The approval notifications, once the call needs approval. */
  notifications?: ApprovalNotifications;
  /** A read's execution started: it counts toward its limits whatever it answers. */
  executedRead = false;
  private recorded?: CallEvaluation;
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
  }

  /** The latest evaluation the call recorded (a call judged again after a deploy has a newer one). */
  get evaluation(): CallEvaluation | undefined {
    return this.recorded;
  }

  reject(input: {
    code: string;
    message: string;
    effect?: Effect;
    data?: Record<string, unknown>;
    replayed?: true;
  }): ToolResult {
    const { replayed, ...rest } = input;
    const result = rejection({ tool: this.proposal.tool, callId: this.callId, ...rest });
    return replayed ? { ...result, replayed } : result;
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
    this.recorded = evaluation;
    if (evaluation.args) this.state.validatedArguments = evaluation.args;
    if (evaluation.riskLevel) {
      this.state.riskLevel = evaluation.riskLevel;
      this.setAttribute({ key: searchAttributes.riskLevel, value: riskRank(evaluation.riskLevel) });
    }
  }

  /**
   * The last step, in the run's last workflow task: the worker appends the audit record and counts
   * the outcome in the session, in the same store, then the run closes and answers. The answer goes
   * out only with the close, so a proposal made after it starts a new run instead of joining this one.
   */
  async record(result: ToolResult): Promise<void> {
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

  /** Search attributes are queued until the next wait or the close, and written together. */
  setAttribute(pair: SearchAttributeUpdatePair, options: { flush?: boolean } = {}): void {
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
      ...(this.state.edits?.length ? { edits: this.state.edits } : {}),
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
