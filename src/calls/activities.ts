import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AuditRecord, AuditStore } from '../audit/audit-store';
import type { CredentialMinter } from '../credentials/credential-minter';
import type { LoadedPolicy } from '../policy/load-policy';
import type {
  CallEvaluation,
  CheckOutcome,
  ExecutionInput,
  ToolCallActivityInput,
  LookupAnswer,
  SignedProposal,
  ToolCapabilities,
} from './call-evaluation';
import type { ApprovalNotificationPlan } from '../notifications/notices';
import type { CallOutcome } from '../sessions/session';
import type { ToolResult } from '../shared/tool-result';
import { admitProposal } from '../sessions/activities';
import { deriveCallId } from './proposal';
import { checkContext } from './call-context';
import { contractDigestOf } from '../tools/contract-digest';
import type { ExecutionRetry } from '../tools/define-tool';
import { declaresDomainCode } from '../tools/define-tool';
import type {
  ImplementedTool,
  RecordedOutcome,
  ToolImplementation,
} from '../tools/define-tool-implementation';
import { toolErrorKind } from '../tools/tool-errors';
import { createToolRegistry } from '../tools/tool-registry';
import { disabledSwitchFor } from '../controls/protocol';
import { readControls } from '../controls/activities';
import { coveringGrant, readGrants } from '../grants/activities';
import { evaluateCall } from './evaluate-call';
import { durationMs } from '../shared/durations';
import { callerPolicyIn } from '../policy/context-policy';
import { deniedAgain, denialLifted, rememberedDenial } from '../approvals/denial-memory';

/** The ApplicationFailure types the executor raises; the workflow reads them, never `instanceof`. */
export const executionFailureTypes = {
  rejected: 'TOOL_REJECTED',
  transient: 'UPSTREAM_UNAVAILABLE',
  internal: 'INTERNAL_ERROR',
  outputContract: 'OUTPUT_CONTRACT_VIOLATION',
} as const;

/** What the activities need, passed in by the worker. */
export interface ToolCallActivityDependencies {
  tools: readonly ImplementedTool[];
  /** The current policy; workers may reload it, each call records the version it used. */
  policy: () => LoadedPolicy;
  audit: AuditStore;
  /** Mints a credential for each write attempt; without one, writes carry no credential. */
  minter?: CredentialMinter;
  /** Retry of business checks and execution, unless a tool overrides it. */
  retry: ExecutionRetry;
  /** Told once per circuit a counted outcome opens (the worker's metrics). */
  onCircuitOpened?: (opened: { tool: string; code: string }) => void;
  /** The approval notifications each call that needs approval records (none when absent). */
  notifications?: ApprovalNotificationPlan;
}

/**
 * Builds the activities of the call workflow. Business refusals come back as values or
 * non-retryable failures; transient failures are retryable; anything unexpected is logged here
 * and reported to the workflow as `INTERNAL_ERROR` without its details.
 */
export function createToolCallActivities(dependencies: ToolCallActivityDependencies) {
  const byName = new Map(dependencies.tools.map((tool) => [tool.contract.name, tool]));
  const registry = createToolRegistry({ tools: dependencies.tools.map((tool) => tool.contract) });
  const capabilities: Record<string, ToolCapabilities> = Object.fromEntries(
    dependencies.tools.map((tool) => [
      tool.contract.name,
      {
        check: tool.implementation.check !== undefined,
        preview: tool.implementation.preview !== undefined,
        verify: tool.implementation.verify !== undefined,
      },
    ]),
  );
  const toolNamed = (name: string): ImplementedTool => {
    const tool = byName.get(name);
    if (!tool) {
      throw ApplicationFailure.nonRetryable(
        `no implementation registered for tool "${name}"`,
        'INTERNAL_ERROR',
      );
    }
    return tool;
  };

  const evaluationContext = () => ({
    registry,
    policy: dependencies.policy(),
    capabilities,
    retry: dependencies.retry,
    ...(dependencies.notifications ? { notifications: dependencies.notifications } : {}),
  });

  /**
   * With the caller's policy `rememberDenials.acrossSessions` (as it applies in the call's context),
   * the denials of `tool` for the call's end user in any session within that window; none otherwise,
   * or when the store cannot be read.
   */
  const endUserDenials = async (
    input: SignedProposal,
    tool: string,
  ): Promise<{ records: AuditRecord[]; since?: string }> => {
    const context = input.proposal.context;
    const ownPolicy = dependencies.policy().callerPolicy(input.proposal.caller);
    const across = ownPolicy
      ? callerPolicyIn({ callerPolicy: ownPolicy, context }).approval?.rememberDenials?.acrossSessions
      : undefined;
    const endUser = typeof context?.onBehalfOf === 'string' ? context.onBehalfOf : undefined;
    if (across === undefined || endUser === undefined) return { records: [] };
    const since = new Date(Date.now() - durationMs(across)).toISOString();
    const records = await dependencies.audit
      .deniedForEndUser({
        caller: input.proposal.caller,
        endUser,
        ...(typeof context?.tenant === 'string' ? { tenant: context.tenant } : {}),
        tool,
        since,
      })
      .catch(() => []);
    return { records, since };
  };

  /**
   * A call that needs approval, denied by a person earlier in its session with these same arguments
   * (or, per the policy, for its end user in another session): the evaluation that answers it with
   * that denial (no round, no notification), unless someone lifted it since. A store that cannot
   * be read remembers nothing: a person is asked again, the safe side.
   */
  const metDenial = async (
    input: SignedProposal,
    evaluation: CallEvaluation & { ok: true },
  ): Promise<CallEvaluation | undefined> => {
    const { call } = evaluation;
    if (!call.approval) return undefined;
    const records = await dependencies.audit
      .deniedInSession({ session: input.proposal.session, tool: call.tool })
      .catch(() => []);
    const elsewhere = await endUserDenials(input, call.tool);
    const denial =
      rememberedDenial({ records, args: call.args }) ??
      rememberedDenial({ records: elsewhere.records, args: call.args, deniedSince: elsewhere.since });
    if (!denial) return undefined;
    // An approver or an operator may have lifted it since: then a person is asked again.
    const attempts = await dependencies.audit.decisionAttemptsOf(denial.deniedCallId).catch(() => []);
    const lifted = denialLifted({
      denial,
      attempts,
      riskLevel: call.riskLevel,
      caller: input.proposal.caller,
      approvers: evaluation.approvers,
      operators: evaluation.operators ?? {},
    });
    return lifted ? undefined : deniedAgain(evaluation, call, denial);
  };

  const failureFrom = (input: {
    tool: ImplementedTool;
    error: unknown;
    stage: string;
  }): ApplicationFailure => {
    const { tool, error } = input;
    const kind = toolErrorKind(error);
    if (kind === 'transient') {
      return ApplicationFailure.retryable((error as Error).message, executionFailureTypes.transient);
    }
    if (kind === 'rejection') {
      const rejection = error as Error & { code: string; data?: Record<string, unknown> };
      if (declaresDomainCode(tool.contract, rejection.code)) {
        return ApplicationFailure.nonRetryable(rejection.message, executionFailureTypes.rejected, {
          code: rejection.code,
          message: rejection.message,
          data: rejection.data,
        });
      }
      log.error('tool answered with an undeclared domain code', {
        tool: tool.contract.name,
        code: rejection.code,
      });
    } else {
      log.error(`tool ${input.stage} failed unexpectedly`, {
        tool: tool.contract.name,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
    }
    return ApplicationFailure.nonRetryable('the tool failed unexpectedly', executionFailureTypes.internal);
  };

  return {
    /**
     * Steps 1 to 5 for one proposal (signature, tool, allowlist, call id, parse, schema, risk level,
     * policy), run as a local activity: the call records this answer and never runs tool code itself.
     */
    async evaluateCall(input: SignedProposal): Promise<CallEvaluation> {
      const context = evaluationContext();
      // Step 0, the session's admission, in the same local activity: the signature, then one transaction
      // of the store. Asked again under the same proposal id (a retried attempt, a call judged again after
      // a deploy), it answers what it answered and counts nothing twice.
      // A run under a workflow id that is not the proposal's call id is never admitted (its key would be
      // another call's): the evaluation refuses it SESSION_REQUIRED, and no session is charged.
      const contract = input.proposal.toolNameTruncated ? undefined : registry.get(input.proposal.tool);
      // (A context that is no context is the admission's to refuse, CONTEXT_INVALID, changing nothing.)
      const ownCallId =
        !checkContext(input.proposal.context).ok ||
        deriveCallId({
          proposal: input.proposal,
          idempotencyFields: contract?.idempotencyFields,
          boundParameters: contract?.boundParameters,
        }) === input.callId;
      const admitted =
        input.proposalId !== undefined && ownCallId
          ? await admitProposal({
              policy: context.policy,
              audit: dependencies.audit,
              proposal: { ...input, proposalId: input.proposalId },
            })
          : undefined;
      if (admitted?.signed && !admitted.admission.admitted) {
        const { result } = admitted.admission;
        // The loop guard stops a call repeated in its session; when a person denied that very call,
        // their denial is the answer (it says who and why). The session still counts the repetition.
        if (result.code === 'LOOP_DETECTED') {
          const repeated = evaluateCall({
            context,
            check: { ...input, untrusted: [] },
            admitted: () => true,
            disabled: () => undefined,
          });
          const denied = repeated.ok ? await metDenial(input, repeated) : undefined;
          if (denied) return { ...denied, admitted: false };
        }
        return refusedAtAdmission({ policy: context.policy, caller: input.proposal.caller, result });
      }
      const check: SignedProposal =
        admitted?.admission.admitted && admitted.admission.untrusted
          ? { ...input, untrusted: admitted.admission.untrusted }
          : { ...input, untrusted: [] };
      // The kill switch, read from this task queue's controls at every evaluation: a switch turned off
      // stops the next call at once, on every worker. Unreadable controls fail the evaluation (retried).
      const { client, info } = Context.current();
      const controls = await readControls({ client, taskQueue: info.taskQueue });
      const evaluation = evaluateCall({
        context,
        check,
        admitted: () => admitted?.admission.admitted === true,
        disabled: (call) => disabledSwitchFor(controls, call),
      });
      // Denial memory, before grants: a standing grant never overrides a person's no to this very call.
      if (evaluation.ok) {
        const denied = await metDenial(input, evaluation);
        if (denied) return denied;
      }
      // A call that needs approval: does a standing grant cover it now? (Read only here; the call
      // takes a use atomically at step 7, and waits for a human when none is left by then.) Never one
      // the untrusted-text rule holds: a person looks at a write that text the model read may have asked for;
      // never one whose level asks a chain: the groups it names decide each call.
      if (
        evaluation.ok &&
        evaluation.call.approval &&
        !evaluation.call.approval.untrustedText &&
        !evaluation.call.approval.chain
      ) {
        const { call } = evaluation;
        // Grants that cannot be read cover nothing: the call waits for a human, the safe side.
        const grants = await readGrants({ client, taskQueue: info.taskQueue }).catch(() => ({ grants: [] }));
        const grant = coveringGrant(
          grants,
          {
            caller: input.proposal.caller,
            tool: call.tool,
            riskLevel: call.riskLevel,
            ...(call.amount !== undefined ? { amount: call.amount } : {}),
          },
          Date.now(),
        );
        if (grant) return { ...evaluation, call: { ...call, standingGrant: grant.grantId } };
      }
      return evaluation;
    },

    /**
     * Steps 1 to 5 once more for an approver's edit of a waiting call's arguments, run as a local
     * activity: the proposal as the first evaluation judged it (its signature, its session's answer
     * under the same proposal id, which counts nothing twice, the kill switch now), with the edited
     * arguments in the model's place. No denial memory and no standing grant: a person is deciding.
     */
    async evaluateEdit(input: SignedProposal & { edited: Record<string, unknown> }): Promise<CallEvaluation> {
      const context = evaluationContext();
      const admitted =
        input.proposalId !== undefined
          ? await admitProposal({
              policy: context.policy,
              audit: dependencies.audit,
              proposal: { ...input, proposalId: input.proposalId },
            })
          : undefined;
      const untrusted =
        admitted?.admission.admitted && admitted.admission.untrusted ? admitted.admission.untrusted : [];
      const { client, info } = Context.current();
      const controls = await readControls({ client, taskQueue: info.taskQueue });
      return evaluateCall({
        context,
        check: { ...input, untrusted },
        admitted: () => admitted?.admission.admitted === true,
        disabled: (call) => disabledSwitchFor(controls, call),
        edited: input.edited,
      });
    },

    /**
     * The digest of a tool's contract on this worker now (`contractDigestOf`; null when it has no
     * such tool), run as a local activity: a waiting call asks it before it counts a decision and
     * before it runs, so a deploy that changed the contract while it waited opens a new round. Cheap:
     * a registry lookup and a digest cached per contract.
     */
    async currentContractDigest(input: { tool: string }): Promise<{ contractDigest: string | null }> {
      const contract = registry.get(input.tool);
      return { contractDigest: contract ? contractDigestOf({ contract }) : null };
    },

    /** Runs the tool's read-only business checks; a refusal is a value, never retried. */
    async checkToolCall(input: ToolCallActivityInput): Promise<CheckOutcome> {
      const tool = toolNamed(input.tool);
      if (!tool.implementation.check) return { ok: true };
      try {
        await tool.implementation.check({
          args: input.args,
          callId: input.callId,
          context: input.context ?? {},
        });
        return { ok: true };
      } catch (error) {
        const failure = failureFrom({ tool, error, stage: 'check' });
        if (failure.type === executionFailureTypes.rejected) {
          const details = failure.details?.[0] as {
            code: string;
            message: string;
            data?: Record<string, unknown>;
          };
          return {
            ok: false,
            code: details.code,
            message: details.message,
            ...(details.data ? { data: details.data } : {}),
          };
        }
        throw failure;
      }
    },

    /** The exact effect for an approver to read: the tool's own dry run, else the validated arguments. */
    async previewToolCall(input: ToolCallActivityInput): Promise<{ preview: Record<string, unknown> }> {
      const tool = toolNamed(input.tool);
      if (!tool.implementation.preview) return { preview: { tool: input.tool, arguments: input.args } };
      try {
        return {
          preview: await tool.implementation.preview({
            args: input.args,
            callId: input.callId,
            context: input.context ?? {},
          }),
        };
      } catch (error) {
        throw failureFrom({ tool, error, stage: 'preview' });
      }
    },

    /**
     * Performs the call with the call id as idempotency key on every attempt; a write first gets a
     * credential minted for this attempt, which the minter refuses unless its own checks pass.
     */
    async executeToolCall(input: ExecutionInput): Promise<{ output: unknown }> {
      const tool = toolNamed(input.tool);
      const { client, info } = Context.current();
      // The kill switch, read once more right before a write's first attempt reaches the backend: a
      // call evaluated just before an operator turned its tool off (or approved hours ago) does not
      // run. A later attempt goes on, since an earlier one may have been applied (its answer lost) and
      // only the key's lookup can tell. A read, evaluated a moment ago and changing nothing, is not
      // asked again.
      if (info.attempt === 1 && tool.contract.effect === 'write') {
        const off = disabledSwitchFor(await readControls({ client, taskQueue: info.taskQueue }), {
          tool: input.tool,
          caller: input.caller,
        });
        if (off) throw ApplicationFailure.nonRetryable(off.reason, 'TOOL_DISABLED', off);
      }
      let credential: string | undefined;
      if (tool.contract.effect === 'write' && dependencies.minter) {
        try {
          credential = await dependencies.minter.mint({
            contract: tool.contract,
            caller: input.caller,
            callId: input.callId,
            runId: input.runId,
            args: input.args,
            ...(input.context ? { context: input.context } : {}),
            ...(input.approval ? { approval: input.approval } : {}),
          });
        } catch (error) {
          log.warn('credential refused', { callId: input.callId, reason: String(error) });
          throw ApplicationFailure.nonRetryable((error as Error).message, 'PERMISSION_DENIED');
        }
      }
      let output: unknown;
      try {
        output = await tool.implementation.execute({
          args: input.args,
          callId: input.callId,
          context: input.context ?? {},
          idempotencyKey: input.callId,
          attempt: Context.current().info.attempt,
          ...(credential !== undefined ? { credential } : {}),
        });
      } catch (error) {
        throw failureFrom({ tool, error, stage: 'execute' });
      }
      // The output contract, here and not in the workflow: a bad answer is never retried (a write
      // may have been applied), and the workflow reports it with the effect it knows.
      const checked = tool.contract.output.safeParse(output);
      if (!checked.success) {
        log.error('tool output broke its contract', {
          tool: tool.contract.name,
          callId: input.callId,
          issues: checked.error.issues,
        });
        throw ApplicationFailure.nonRetryable(
          'the output breaks its contract',
          executionFailureTypes.outputContract,
        );
      }
      return { output: checked.data };
    },

    /**
     * Asks the backend what it recorded under the call's key: applied, refused or not seen, checked
     * against the contract (an output outside it, or a code the tool does not declare, is `broken`).
     * A failure here, or an answer outside that shape, means the effect is unknown.
     */
    async findAppliedEffect(input: ToolCallActivityInput): Promise<LookupAnswer> {
      const tool = toolNamed(input.tool);
      const findApplied: ToolImplementation['findApplied'] = tool.implementation.findApplied;
      if (!findApplied) return { status: 'not-seen' };
      let found: RecordedOutcome<unknown>;
      try {
        found = await findApplied({
          args: input.args,
          callId: input.callId,
          context: input.context ?? {},
          idempotencyKey: input.callId,
        });
      } catch (error) {
        throw failureFrom({ tool, error, stage: 'lookup' });
      }
      const recorded = recordedOutcomeOf(found);
      if (!recorded) {
        log.error('tool lookup answered outside { status: applied | refused | not-seen }', {
          tool: tool.contract.name,
          callId: input.callId,
        });
        throw ApplicationFailure.nonRetryable('the lookup answered outside its contract', 'INTERNAL_ERROR');
      }
      switch (recorded.status) {
        case 'not-seen':
          return recorded;
        case 'refused':
          if (declaresDomainCode(tool.contract, recorded.code)) return recorded;
          log.error('tool lookup answered with an undeclared domain code', {
            tool: tool.contract.name,
            callId: input.callId,
            code: recorded.code,
          });
          return { status: 'broken', problem: 'undeclared-code' };
        case 'applied': {
          const checked = tool.contract.output.safeParse(recorded.output);
          if (checked.success) return { status: 'applied', output: checked.data };
          log.error('tool output broke its contract', {
            tool: tool.contract.name,
            callId: input.callId,
            issues: checked.error.issues,
          });
          return { status: 'broken', problem: 'output-contract' };
        }
      }
    },

    /** Reads the effect back; a mismatch is a value, an unreachable backend is retried. */
    async verifyToolEffect(input: ToolCallActivityInput & { output: unknown }): Promise<CheckOutcome> {
      const tool = toolNamed(input.tool);
      if (!tool.implementation.verify) return { ok: true };
      try {
        await tool.implementation.verify({
          args: input.args,
          callId: input.callId,
          context: input.context ?? {},
          output: input.output,
        });
        return { ok: true };
      } catch (error) {
        if (toolErrorKind(error) === 'transient') throw failureFrom({ tool, error, stage: 'verify' });
        log.warn('effect verification failed', {
          tool: input.tool,
          callId: input.callId,
          error: String(error),
        });
        return { ok: false, code: 'VERIFICATION_FAILED', message: (error as Error).message };
      }
    },

    /**
     * A call's last step: appends its audit record, then counts its outcome in its session, in the same
     * store, so the circuit breaker sees it before the call answers. Both are idempotent: a retried
     * append writes once, and the session counts a run's outcome once.
     */
    async finishToolCall(input: FinishCallInput): Promise<{ appended: boolean; counted: boolean }> {
      const appended = await dependencies.audit.append(input.record);
      if (!input.outcome) return { appended, counted: false };
      const { opened } = await dependencies.audit.sessions.countOutcome({
        ...input.outcome,
        session: input.record.session,
      });
      if (opened) dependencies.onCircuitOpened?.({ tool: input.outcome.tool, code: opened.code });
      return { appended, counted: true };
    },
  };
}

/** What `finishToolCall` receives: the audit record and, for an admitted proposal, the outcome its session counts. */
export interface FinishCallInput {
  record: AuditRecord;
  outcome?: CallOutcome;
}

/** The evaluation of a proposal its session refused: the refusal, and what the call records of its caller. */
function refusedAtAdmission(input: {
  policy: LoadedPolicy;
  caller: string;
  result: ToolResult;
}): CallEvaluation {
  const snapshot = input.policy.snapshotFor(input.caller);
  return {
    ok: false,
    policyVersion: snapshot.version,
    callerKeyHex: snapshot.callerKeyHex,
    authenticated: true,
    admitted: false,
    approvers: snapshot.approvers,
    operators: snapshot.operators,
    refusal: {
      code: input.result.code,
      message: input.result.message,
      ...(input.result.data !== undefined ? { data: input.result.data } : {}),
    },
  };
}

/** The implementation's answer as plain data, or undefined when it is not one of the three shapes. */
function recordedOutcomeOf(found: unknown): RecordedOutcome<unknown> | undefined {
  const answer = found as Partial<Record<'status' | 'output' | 'code' | 'message' | 'data', unknown>> | null;
  if (typeof answer !== 'object' || answer === null) return undefined;
  if (answer.status === 'applied') return { status: 'applied', output: answer.output };
  if (answer.status === 'not-seen') return { status: 'not-seen' };
  if (answer.status !== 'refused' || typeof answer.code !== 'string' || typeof answer.message !== 'string') {
    return undefined;
  }
  const data = answer.data;
  const isRecord = typeof data === 'object' && data !== null && !Array.isArray(data);
  return {
    status: 'refused',
    code: answer.code,
    message: answer.message,
    ...(isRecord ? { data: data as Record<string, unknown> } : {}),
  };
}

/** The activities a call workflow schedules, by name; workflows import this type only. */
export type ToolCallActivities = ReturnType<typeof createToolCallActivities>;
