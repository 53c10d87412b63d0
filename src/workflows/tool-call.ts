import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  currentUpdateInfo,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { CheckOutcome, ExecutionApproval, ToolCallActivities } from '../activities/tool-call-activities';
import type { AuditRecord } from '../audit/audit-store';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { evaluatePolicy } from '../policy/evaluate-policy';
import type { CallSnapshot } from '../activities/tool-call-activities';
import type { DecisionRefusalCode } from '../shared/codes';
import type { SignedDecision } from '../shared/approval';
import { approvalNonce } from '../shared/approval';
import { digestOf } from '../shared/canonical-json';
import { intentConflictMessage } from '../shared/model-messages';
import { ownValue } from '../shared/own-records';
import { defaultApprovalWindowMs, durationMs } from '../shared/durations';
import type { Proposal } from '../shared/proposal';
import { deriveCallId, parseArguments, proposalArgumentsDigest } from '../shared/proposal';
import type { CallOutcome } from '../shared/session';
import { callOutcomeSignal, sessionWorkflowId } from '../shared/session';
import { verifySignature } from '../shared/signatures';
import type { ApprovalState, ApprovalView, CallState, ToolGateSinks } from '../shared/temporal';
import { callStateQuery, decideUpdate, proposeUpdate, searchAttributes } from '../shared/temporal';
import type { ToolResult } from '../shared/tool-result';
import { rejection } from '../shared/tool-result';
import type { AnyToolContract, ExecutionRetry, ToolContract, ToolInputSchema } from '../tools/define-tool';
import { declaresDomainCode } from '../tools/define-tool';
import type { RecordedOutcome } from '../tools/define-tool-implementation';
import type { RiskLevel } from '../tools/risk-levels';
import { riskRank } from '../tools/risk-levels';
import { createToolRegistry } from '../tools/tool-registry';
import { validateArguments } from '../tools/validate-arguments';
import type { z } from 'zod';

/** The input of a call's workflow: the proposal that started it, its update id and the caller's signature. */
export interface ToolCallInput {
  proposalId: string;
  proposal: Proposal;
  /** The caller's signature over `{ callId, proposal }` (kind `proposal`). */
  signature?: string;
}

/** Options of the call workflow, fixed in the user's workflows module. */
export interface ToolCallWorkflowOptions {
  /** The tool contracts this deployment knows (the only tool code the workflow imports). */
  tools: readonly ToolContract<ToolInputSchema, z.ZodType>[];
  /** Retry of business checks and execution, unless a tool overrides it. */
  retry?: Partial<ExecutionRetry>;
}

/** Bounded retries with backoff: four attempts over about two seconds, then the backend is asked by key. */
export const defaultExecutionRetry: ExecutionRetry = {
  maximumAttempts: 4,
  initialIntervalMs: 200,
  maximumIntervalMs: 5_000,
  backoffCoefficient: 2,
  attemptTimeoutMs: 10_000,
};

interface ApprovalRound extends ApprovalView {
  expiresAtMs: number;
  denial?: { approver: string; reason: string };
  accepted: SignedDecision[];
  usedSignatures: string[];
}

/**
 * Creates the workflow every proposed call runs as. Steps run in DESIGN.md's order; nothing reaches
 * a backend before the business checks and nothing changes the world before execution. Every
 * outcome is a `ToolResult`: a success closes the run completed, a rejection closes it failed with
 * the result in the failure's details, and nothing the model or an approver sends fails a task.
 */
export function createToolCallWorkflow(options: ToolCallWorkflowOptions) {
  const registry = createToolRegistry({ tools: options.tools });
  const baseRetry: ExecutionRetry = { ...defaultExecutionRetry, ...options.retry };

  return async function toolCall(input: ToolCallInput): Promise<ToolResult> {
    const info = workflowInfo();
    const callId = info.workflowId;
    // Runs from this version on close in one workflow task when nothing waits: the worker appends the
    // audit record and reports the outcome to the session in one local activity, search attributes
    // are written together, and the older patches below are implied (one marker instead of three).
    // Runs recorded before it replay the way they ran.
    const oneTask = patched('call-closes-in-one-task');
    const since = (patch: string): boolean => oneTask || patched(patch);
    const queuedAttributes: SearchAttributeUpdatePair[] = [];
    const { proposal } = input;
    const startedAt = Date.now();
    const sinks = proxySinks<ToolGateSinks>();
    const state: CallState = {
      stage: 'validating',
      tool: proposal.tool,
      caller: proposal.caller,
      session: proposal.session,
      decisions: [],
    };
    const record: Partial<AuditRecord> = {};
    let policy: CallSnapshot | undefined;
    let round: ApprovalRound | undefined;
    let authenticated = false;

    setHandler(callStateQuery, () => state);

    setHandler(proposeUpdate, async (request) => {
      const startedRun = request.proposalId === input.proposalId;
      if (!startedRun) {
        // A joining proposal must be signed by the caller too; it waits for the policy to know the key.
        await condition(() => policy !== undefined || state.result !== undefined);
        if (!signedByCaller({ proposal: request.proposal, signature: request.signature })) {
          return { startedRun, result: unauthenticated() };
        }
        if (
          proposal.intentId !== undefined &&
          proposalArgumentsDigest(request.proposal) !== proposalArgumentsDigest(proposal)
        ) {
          return { startedRun, result: intentConflict({ proposal, callId }) };
        }
      }
      await condition(() => state.result !== undefined || state.pending !== undefined);
      if (state.result) {
        // A proposal that joined a run did not make anything run again.
        return { startedRun, result: startedRun ? state.result : { ...state.result, replayed: true } };
      }
      return { startedRun, result: state.pending as ToolResult };
    });

    setHandler(
      decideUpdate,
      (decision) => {
        const current = round;
        if (!current)
          throw refuseDecision({ decision, code: 'ALREADY_DECIDED', reason: 'no approval is open' });
        current.usedSignatures.push(decision.signature);
        const { envelope } = decision;
        if (envelope.decision === 'deny') {
          current.denial = { approver: envelope.approver, reason: envelope.reason };
          current.state = 'denied';
        } else {
          current.approvals = [...current.approvals, envelope.approver];
          current.accepted.push(decision);
          if (current.approvals.length >= current.quorum) current.state = 'approved';
        }
        recordDecision({ decision, outcome: 'accepted' });
        state.approval = viewOf(current);
        return Promise.resolve({
          accepted: true as const,
          state: current.state,
          approvals: [...current.approvals],
          quorum: current.quorum,
        });
      },
      { validator: (decision: SignedDecision) => validateDecision(decision) },
    );

    const reject = (code: string, message: string, extra?: Pick<ToolResult, 'effect' | 'data'>): ToolResult =>
      rejection({ tool: proposal.tool, callId, code, message, ...extra });

    let result: ToolResult;
    try {
      result = await runPipeline();
    } catch (error) {
      log.error('call pipeline failed unexpectedly', { callId, error: String(error) });
      result = reject(
        'INTERNAL_ERROR',
        'toolgate failed unexpectedly and applied nothing. Do not retry; tell the user.',
      );
    }
    state.stage = 'recording';
    setAttribute({ key: searchAttributes.toolCode, value: result.code }, { flush: true });
    setCurrentDetails(
      `${record.validatedArguments ? summaryOf() : proposal.tool}: ${result.code} (effect ${result.effect})`,
    );
    // The answer goes out only with the run's close, so a proposal made after it starts a new run
    // (a fresh read, a retry after a rejection) instead of joining this one. The session counts this
    // outcome before the agent sees it, so its next admission already knows.
    if (oneTask) {
      await finishCall(result);
    } else {
      await recordAudit(result);
      // Histories recorded before sessions existed replay without the signal.
      if (authenticated && patched('report-outcome-to-session')) await reportOutcome(result);
    }
    state.result = result;
    state.pending = undefined;
    state.stage = 'done';
    await condition(allHandlersFinished);
    if (result.ok) return result;
    throw ApplicationFailure.create({
      type: result.code,
      message: result.message,
      details: [result],
      nonRetryable: true,
    });

    function summaryOf(): string {
      try {
        return contractOf()?.summarize(record.validatedArguments ?? {}) ?? proposal.tool;
      } catch {
        return proposal.tool;
      }
    }

    function contractOf(): AnyToolContract | undefined {
      return proposal.toolNameTruncated ? undefined : registry.get(proposal.tool);
    }

    function signedByCaller(input: { proposal: Proposal; signature: string | undefined }): boolean {
      const key = policy?.callerKeyHex;
      if (!key || !input.signature) return false;
      return verifySignature({
        kind: 'proposal',
        value: { callId, proposal: input.proposal },
        signature: input.signature,
        publicKeyHex: key,
      });
    }

    function unauthenticated(): ToolResult {
      return reject(
        'UNAUTHENTICATED_CALLER',
        `This proposal is not signed with ${proposal.caller}'s key. Nothing ran. Do not retry; tell the operator.`,
      );
    }

    function outcomeOf(final: ToolResult): CallOutcome {
      return { callId, runId: info.runId, tool: proposal.tool, code: final.code, ok: final.ok };
    }

    async function reportOutcome(final: ToolResult): Promise<void> {
      try {
        const { runId: _runId, ...outcome } = outcomeOf(final);
        await getExternalWorkflowHandle(sessionWorkflowId(proposal.session)).signal(
          callOutcomeSignal,
          outcome,
        );
      } catch {
        // The session has ended (it ignores late outcomes) or was never started (a raw client): nothing to count.
      }
    }

    /**
     * The last step, in the run's last workflow task: the worker appends the audit record and signals
     * the outcome to the session (the signal is in the session's history when the activity returns),
     * then the run closes and answers.
     */
    async function finishCall(final: ToolResult): Promise<void> {
      try {
        await proxyLocalActivities<ToolCallActivities>({
          startToCloseTimeout: '10s',
          retry: { maximumAttempts: 10, maximumInterval: '5s' },
        }).finishToolCall({
          record: auditRecordOf(final),
          ...(authenticated
            ? {
                report: { sessionWorkflowId: sessionWorkflowId(proposal.session), outcome: outcomeOf(final) },
              }
            : {}),
        });
      } catch (error) {
        log.error('call could not be finished (audit record, session report)', {
          callId,
          error: String(error),
        });
      }
    }

    /** A search attribute: written at once by older runs; queued until the next wait or the close by newer ones. */
    function setAttribute(pair: SearchAttributeUpdatePair, options: { flush?: boolean } = {}): void {
      if (!oneTask) {
        upsertSearchAttributes([pair]);
        return;
      }
      queuedAttributes.push(pair);
      if (options.flush) upsertSearchAttributes(queuedAttributes.splice(0));
    }

    function setApprovalState(value: ApprovalState): void {
      // Approval states are what ops watch live: written at once, with anything queued before them.
      setAttribute({ key: searchAttributes.approvalState, value }, { flush: true });
    }

    async function runPipeline(): Promise<ToolResult> {
      // Step 1: the policy (loaded by the worker, recorded in history), the signature, the tool, the allowlist.
      const snapshot = await loadPolicy();
      if (!snapshot) {
        return reject(
          'INTERNAL_ERROR',
          'The policy could not be loaded; nothing was applied. Do not retry; tell the user.',
        );
      }
      policy = snapshot;
      record.policyVersion = snapshot.version;
      // The worker checks the signature natively while it loads the policy (one local activity); runs
      // recorded before that replay the sandbox's own check.
      const signed = since('signature-checked-by-worker')
        ? snapshot.proposalSigned === true
        : signedByCaller({ proposal, signature: input.signature });
      if (!signed) return unauthenticated();
      authenticated = true;
      const available = snapshot.callerPolicy?.tools ?? [];
      const contract = contractOf();
      if (!contract) {
        return reject(
          'UNKNOWN_TOOL',
          `There is no tool named "${proposal.tool}". ` +
            (available.length ? `Use one of: ${available.join(', ')}.` : 'You have no tools available.'),
          { effect: 'none', data: { available } },
        );
      }
      if (!available.includes(contract.name)) {
        return reject(
          'TOOL_NOT_ALLOWED',
          `${contract.name} is not available to you. Do not retry it; ` +
            (available.length ? `you may use: ${available.join(', ')}.` : 'you have no tools available.'),
          { effect: 'none', data: { available } },
        );
      }
      // The workflow ID is the idempotency key: refuse a run started under an ID that is not this proposal's key.
      if (deriveCallId({ proposal, idempotencyFields: contract.idempotencyFields }) !== callId) {
        return reject(
          'IDEMPOTENCY_CONFLICT',
          'This call id does not belong to this proposal (client and workers disagree on the tool definitions). ' +
            'Do not retry; tell the user.',
        );
      }

      // Step 2: parse.
      if (proposal.argumentsTooLarge) {
        return reject(
          'INVALID_JSON',
          `The arguments are ${proposal.argumentsTooLarge.bytes} bytes; the limit is 262144. ` +
            `Send only the fields ${contract.name} takes.`,
        );
      }
      if (proposal.argumentsUnreadable !== undefined) {
        return reject(
          'INVALID_JSON',
          `The arguments could not be read as JSON: ${proposal.argumentsUnreadable}. ` +
            `Send one JSON object with the fields ${contract.name} takes.`,
        );
      }
      const parsed = parseArguments(proposal.rawArguments);
      if (!parsed.ok) return reject('INVALID_JSON', parsed.message);

      // Step 3: schema.
      const validation = validateArguments({ contract, value: parsed.value });
      if (!validation.success) {
        return reject('INVALID_ARGUMENTS', validation.message, {
          effect: 'none',
          data: { issues: validation.issues },
        });
      }
      const args = validation.args;
      record.validatedArguments = args;
      state.validatedArguments = args;
      const summary = summaryOf();

      // Step 5: risk level and the caller's policy (pure).
      const callerPolicy = snapshot.callerPolicy ?? { publicKey: '', tools: [], autonomy: 'read' as const };
      const verdict = evaluatePolicy({ contract, args, caller: proposal.caller, callerPolicy });
      record.riskLevel = verdict.riskLevel;
      state.riskLevel = verdict.riskLevel;
      setAttribute({ key: searchAttributes.riskLevel, value: riskRank(verdict.riskLevel) });
      if (!verdict.allowed)
        return reject(verdict.code, verdict.message, { effect: 'none', data: verdict.data });

      const retry = { ...baseRetry, ...contract.retry };
      const activityOptions = {
        startToCloseTimeout: retry.attemptTimeoutMs,
        retry: {
          maximumAttempts: retry.maximumAttempts,
          initialInterval: retry.initialIntervalMs,
          maximumInterval: retry.maximumIntervalMs,
          backoffCoefficient: retry.backoffCoefficient,
        },
      };
      const activities = proxyActivities<ToolCallActivities>(activityOptions);
      // Read-only steps (checks, previews, read-backs, and a read tool's execution) run as local
      // activities: same retries, no server round trip each. Runs recorded before this replay as they ran.
      const readSteps = since('local-read-steps')
        ? proxyLocalActivities<ToolCallActivities>(activityOptions)
        : activities;
      const executor = contract.effect === 'read' ? readSteps : activities;
      // What the implementation has (recorded with the policy): a step it lacks costs nothing.
      const has = ownValue(snapshot.capabilities, contract.name) ?? {
        check: true,
        preview: true,
        verify: true,
      };
      const activityInput = { tool: contract.name, callId, args };

      // Step 6: business checks (read-only).
      const checked = await runChecks();
      if (checked) return checked;

      // Step 7: approval, when the risk level is above the caller's autonomy.
      let approval: ExecutionApproval | undefined;
      if (verdict.needsApproval) {
        state.approvalRule =
          `${contract.name} at risk level "${verdict.riskLevel}" is above ${proposal.caller}'s autonomy ` +
          `("${callerPolicy.autonomy}"): approval by ${quorumOf(verdict.riskLevel)} approver(s) granted "${verdict.riskLevel}"`;
        const approved = await awaitApproval({ riskLevel: verdict.riskLevel });
        if ('result' in approved) return approved.result;
        approval = approved.approval;
      }

      // Step 8: execute, the call id as idempotency key on every attempt, a credential minted per attempt.
      state.stage = 'executing';
      setCurrentDetails(`${summary}: executing`);
      const executionInput = {
        ...activityInput,
        caller: proposal.caller,
        runId: info.runId,
        ...(approval ? { approval } : {}),
      };
      let output: unknown;
      let confirmedAfterLoss = false;
      try {
        output = (await executor.executeToolCall(executionInput)).output;
      } catch (error) {
        const failure = failureOf(error);
        if (failure.type === 'TOOL_REJECTED') {
          const details = failure.details?.[0] as {
            code: string;
            message: string;
            data?: Record<string, unknown>;
          };
          return reject(details.code, details.message, {
            effect: 'none',
            ...(details.data ? { data: details.data } : {}),
          });
        }
        if (failure.type === 'PERMISSION_DENIED') {
          return reject(
            'PERMISSION_DENIED',
            `The credential minter refused ${contract.name} (${failure.message ?? 'no credential'}); nothing was applied. ` +
              'Do not retry; tell the user.',
          );
        }
        if (contract.effect === 'read') return unavailable({ error, contract, effect: 'none' });
        // Retries ran out: never guess. Ask the backend what it recorded under this key.
        let found: RecordedOutcome<unknown>;
        try {
          found = asRecordedOutcome(
            await proxyActivities<ToolCallActivities>({
              startToCloseTimeout: retry.attemptTimeoutMs,
              retry: { maximumAttempts: 3, initialInterval: retry.initialIntervalMs },
            }).findAppliedEffect(activityInput),
          );
        } catch {
          return unavailable({ error, contract, effect: 'unknown' });
        }
        switch (found.status) {
          case 'not-seen':
            return unavailable({ error, contract, effect: 'none' });
          case 'refused':
            return refusedByBackend(found);
          case 'applied':
            output = found.output;
            confirmedAfterLoss = true;
        }
      }

      // Step 9: the output contract, then the tool's own read-back.
      const effect = contract.effect === 'write' ? 'applied' : 'none';
      state.stage = 'verifying';
      const outputCheck = contract.output.safeParse(output);
      if (!outputCheck.success) {
        log.error('tool output broke its contract', {
          callId,
          tool: contract.name,
          issues: outputCheck.error.issues,
        });
        return reject(
          'OUTPUT_CONTRACT_VIOLATION',
          `${contract.name} answered with data that breaks its output contract` +
            (effect === 'applied' ? ', after its effect was applied. Do not retry; ' : '. Do not retry; ') +
            'tell the user the result could not be confirmed.',
          { effect },
        );
      }
      let verification: CheckOutcome = { ok: true };
      try {
        if (has.verify)
          verification = await readSteps.verifyToolEffect({ ...activityInput, output: outputCheck.data });
      } catch {
        verification = {
          ok: false,
          code: 'VERIFICATION_FAILED',
          message: 'the effect could not be read back',
        };
      }
      if (!verification.ok) {
        return reject(
          'VERIFICATION_FAILED',
          `${summary}: the effect could not be confirmed (${verification.message}). Do not retry; tell the user.`,
          { effect },
        );
      }
      const data = asData(outputCheck.data);
      const message =
        contract.effect === 'read'
          ? `${contract.name} succeeded.`
          : `${summary}: done, applied once` +
            (confirmedAfterLoss ? ' (the backend confirmed it after its response was lost)' : '') +
            '. Do not call it again for the same request.';
      return { ok: true, tool: contract.name, code: 'OK', message, effect, data, callId };

      // The backend refused under this key and the answer was lost: its domain code, nothing applied.
      // A code the contract does not declare is the tool's bug, hidden from the model as on execution.
      function refusedByBackend(found: {
        code: string;
        message: string;
        data?: Record<string, unknown>;
      }): ToolResult {
        if (!declaresDomainCode(contract!, found.code)) {
          log.error('tool lookup answered with an undeclared domain code', {
            callId,
            tool: contract!.name,
            code: found.code,
          });
          return internalError(contract!);
        }
        return reject(found.code, found.message, {
          effect: 'none',
          ...(found.data ? { data: found.data } : {}),
        });
      }

      async function runChecks(): Promise<ToolResult | undefined> {
        state.stage = 'checking';
        setCurrentDetails(`${summary}: checking`);
        let check: CheckOutcome = { ok: true };
        try {
          if (has.check) check = await readSteps.checkToolCall(activityInput);
        } catch (error) {
          return unavailable({ error, contract: contract!, effect: 'none' });
        }
        if (!check.ok) {
          return reject(check.code, check.message, {
            effect: 'none',
            ...(check.data ? { data: check.data } : {}),
          });
        }
        return undefined;
      }

      function quorumOf(level: RiskLevel): number {
        return callerPolicy.approval?.quorum?.[level] ?? 1;
      }

      async function preview(): Promise<{ preview: Record<string, unknown> } | { result: ToolResult }> {
        try {
          if (!has.preview) return { preview: { tool: contract!.name, arguments: args } };
          return await readSteps.previewToolCall(activityInput);
        } catch (error) {
          return { result: unavailable({ error, contract: contract!, effect: 'none' }) };
        }
      }

      async function awaitApproval(input: {
        riskLevel: RiskLevel;
      }): Promise<{ result: ToolResult } | { approval: ExecutionApproval }> {
        const windowValue = callerPolicy.approval?.windows?.[input.riskLevel];
        const windowMs = windowValue === undefined ? defaultApprovalWindowMs : durationMs(windowValue);
        const argsDigest = digestOf(args);
        const first = await preview();
        if ('result' in first) return first;
        let previewValue = first.preview;
        for (let number = 1; ; number++) {
          const previewDigest = digestOf(previewValue);
          const expiresAtMs = Date.now() + windowMs;
          const current: ApprovalRound = {
            round: number,
            nonce: approvalNonce({ runId: info.runId, round: number, previewDigest }),
            runId: info.runId,
            argsDigest,
            previewDigest,
            preview: previewValue,
            riskLevel: input.riskLevel,
            quorum: quorumOf(input.riskLevel),
            approvals: [],
            expiresAt: new Date(expiresAtMs).toISOString(),
            expiresAtMs,
            state: 'pending',
            accepted: [],
            usedSignatures: [],
          };
          round = current;
          state.approval = viewOf(current);
          state.stage = 'awaiting-approval';
          setApprovalState('pending');
          const waiting = () =>
            `${summary}, waiting for ${current.quorum - current.approvals.length} approval(s), ` +
            `expires ${current.expiresAt.slice(11, 16)} UTC`;
          setCurrentDetails(waiting());
          state.pending = reject(
            'APPROVAL_PENDING',
            `${summary} needs a human approval before it runs; nothing has happened yet. ` +
              `Tell the user it is waiting for approval (until ${current.expiresAt}); do not call it again.`,
            {
              effect: 'none',
              data: {
                callId,
                expiresAt: current.expiresAt,
                preview: previewValue,
                riskLevel: input.riskLevel,
                quorum: current.quorum,
                round: number,
              },
            },
          );
          const decided = await condition(
            () => current.denial !== undefined || current.approvals.length >= current.quorum,
            windowMs,
          );
          round = undefined;
          if (!decided) {
            current.state = 'expired';
            state.approval = viewOf(current);
            setApprovalState('expired');
            return {
              result: reject(
                'APPROVAL_EXPIRED',
                `Nobody approved ${summary} before ${current.expiresAt}; nothing was applied. ` +
                  'This is not a denial: tell the user it expired and ask whether to request it again.',
                { effect: 'none', data: { expiresAt: current.expiresAt } },
              ),
            };
          }
          state.approval = viewOf(current);
          if (current.denial) {
            setApprovalState('denied');
            return {
              result: reject(
                'APPROVAL_DENIED',
                `${current.denial.approver} denied ${summary}: "${current.denial.reason}". Nothing was applied. ` +
                  'Do not retry; tell the user why.',
                {
                  effect: 'none',
                  data: { approver: current.denial.approver, reason: current.denial.reason },
                },
              ),
            };
          }
          setApprovalState('approved');
          // Step 7b: the world may have changed while the call waited: check and preview again.
          const rechecked = await runChecks();
          if (rechecked) return { result: rechecked };
          const again = await preview();
          if ('result' in again) return again;
          const fresh = again.preview;
          if (digestOf(fresh) === previewDigest) {
            return {
              approval: {
                round: number,
                nonce: current.nonce,
                previewDigest,
                decisions: current.accepted,
              },
            };
          }
          // The approver approved something else than what would now run: a new round.
          previewValue = fresh;
        }
      }
    }

    function validateDecision(decision: SignedDecision): void {
      const current = round;
      const envelope = decision?.envelope;
      if (!envelope || typeof decision.signature !== 'string') {
        throw refuseDecision({ decision, code: 'SIGNATURE_INVALID', reason: 'not a signed decision' });
      }
      if (!current) {
        const expired = state.approval?.state === 'expired';
        throw refuseDecision({
          decision,
          code: expired ? 'APPROVAL_EXPIRED' : 'ALREADY_DECIDED',
          reason: expired ? 'the approval window has closed' : 'this call has no open approval',
        });
      }
      if (Date.now() >= current.expiresAtMs) {
        throw refuseDecision({
          decision,
          code: 'APPROVAL_EXPIRED',
          reason: 'the approval window has closed',
        });
      }
      if (current.denial || current.approvals.length >= current.quorum) {
        throw refuseDecision({ decision, code: 'ALREADY_DECIDED', reason: 'this round is already decided' });
      }
      const approver = ownValue(policy?.approvers, envelope.approver);
      if (!approver) throw refuseDecision({ decision, code: 'APPROVER_UNKNOWN', reason: 'no such approver' });
      const signed = verifySignature({
        kind: 'decision',
        value: envelope,
        signature: decision.signature,
        publicKeyHex: approver.publicKeyHex,
      });
      if (!signed)
        throw refuseDecision({
          decision,
          code: 'SIGNATURE_INVALID',
          reason: "not signed with the approver's key",
        });
      if (riskRank(approver.maxLevel) < riskRank(current.riskLevel as RiskLevel)) {
        throw refuseDecision({
          decision,
          code: 'APPROVER_NOT_ALLOWED',
          reason: `${envelope.approver} may approve up to "${approver.maxLevel}", this call is "${current.riskLevel}"`,
        });
      }
      if (approver.operates.includes(proposal.caller)) {
        throw refuseDecision({
          decision,
          code: 'SELF_APPROVAL',
          reason: `${envelope.approver} operates ${proposal.caller} and may not approve its calls`,
        });
      }
      const bound =
        envelope.callId === callId &&
        envelope.runId === info.runId &&
        envelope.nonce === current.nonce &&
        envelope.argsDigest === current.argsDigest &&
        envelope.previewDigest === current.previewDigest;
      if (!bound) {
        throw refuseDecision({
          decision,
          code: 'DIGEST_MISMATCH',
          reason:
            'the decision is not for this round: call, run, nonce, arguments and preview must all match',
        });
      }
      if (
        current.usedSignatures.includes(decision.signature) ||
        current.approvals.includes(envelope.approver)
      ) {
        throw refuseDecision({
          decision,
          code: 'DECISION_REPLAYED',
          reason: 'this approver already decided this round',
        });
      }
      if (envelope.decision !== 'approve' && envelope.decision !== 'deny') {
        throw refuseDecision({
          decision,
          code: 'SIGNATURE_INVALID',
          reason: 'a decision is "approve" or "deny"',
        });
      }
    }

    function refuseDecision(input: {
      decision: SignedDecision;
      code: DecisionRefusalCode;
      reason: string;
    }): Error {
      recordDecision({ decision: input.decision, outcome: input.code });
      return ApplicationFailure.create({
        type: input.code,
        message: `${input.code}: ${input.reason}`,
        nonRetryable: true,
      });
    }

    function recordDecision(input: { decision: SignedDecision; outcome: string }): void {
      const envelope = input.decision?.envelope;
      const approver = typeof envelope?.approver === 'string' ? envelope.approver : '(unknown)';
      const decision = typeof envelope?.decision === 'string' ? envelope.decision : '(none)';
      if (input.outcome === 'accepted') {
        state.decisions.push({
          approver,
          decision: envelope.decision,
          reason: typeof envelope.reason === 'string' ? envelope.reason : '',
          round: round?.round ?? 0,
          outcome: input.outcome,
          at: new Date(Date.now()).toISOString(),
        });
      }
      // Refused decisions leave no trace in history: the sink writes them (not during replay).
      sinks.audit.decisionAttempt({
        updateId: currentUpdateInfo()?.id ?? '(none)',
        callId,
        runId: info.runId,
        approver,
        decision,
        outcome: input.outcome,
        envelope: envelope ?? null,
      });
    }

    function viewOf(current: ApprovalRound): ApprovalView {
      return {
        round: current.round,
        nonce: current.nonce,
        runId: current.runId,
        argsDigest: current.argsDigest,
        previewDigest: current.previewDigest,
        preview: current.preview,
        riskLevel: current.riskLevel,
        quorum: current.quorum,
        approvals: [...current.approvals],
        expiresAt: current.expiresAt,
        state: current.state,
      };
    }

    async function loadPolicy(): Promise<CallSnapshot | undefined> {
      try {
        return await proxyLocalActivities<ToolCallActivities>({
          startToCloseTimeout: '5s',
          retry: { maximumAttempts: 3 },
        }).loadCallerPolicy({
          caller: proposal.caller,
          check: {
            callId,
            proposal,
            ...(input.signature !== undefined ? { signature: input.signature } : {}),
          },
        });
      } catch (error) {
        log.error('policy could not be loaded', { callId, error: String(error) });
        return undefined;
      }
    }

    function unavailable(input: {
      error: unknown;
      contract: AnyToolContract;
      effect: 'none' | 'unknown';
    }): ToolResult {
      const { contract, effect } = input;
      if (failureOf(input.error).type === 'INTERNAL_ERROR' && effect === 'none') {
        return internalError(contract);
      }
      const outcome =
        effect === 'unknown'
          ? 'and it could not tell whether the call was applied. Do not retry now; tell the user it is being checked'
          : 'and nothing was applied. Do not retry now; tell the user';
      return reject('UPSTREAM_UNAVAILABLE', `The backend of ${contract.name} is unavailable, ${outcome}.`, {
        effect,
        data: { callId },
      });
    }

    function internalError(contract: AnyToolContract): ToolResult {
      return reject(
        'INTERNAL_ERROR',
        `${contract.name} failed unexpectedly and nothing was applied. Do not retry; tell the user.`,
      );
    }

    function auditRecordOf(finalResult: ToolResult): AuditRecord {
      const finishedAt = Date.now();
      return {
        callId,
        runId: info.runId,
        session: proposal.session,
        caller: proposal.caller,
        tool: proposal.tool,
        rawArguments: proposal.argumentsTooLarge
          ? `(${proposal.argumentsTooLarge.bytes} bytes, sha256 ${proposal.argumentsTooLarge.sha256})`
          : proposal.rawArguments,
        ...(proposal.intentId !== undefined ? { intentId: proposal.intentId } : {}),
        ...(record.validatedArguments ? { validatedArguments: record.validatedArguments } : {}),
        ...(record.riskLevel ? { riskLevel: record.riskLevel } : {}),
        ...(record.policyVersion ? { policyVersion: record.policyVersion } : {}),
        ...(state.decisions.length ? { decisions: state.decisions } : {}),
        code: finalResult.code,
        ok: finalResult.ok,
        effect: finalResult.effect,
        result: finalResult,
        startedAt: new Date(startedAt).toISOString(),
        finishedAt: new Date(finishedAt).toISOString(),
        durationMs: finishedAt - startedAt,
      };
    }

    async function recordAudit(finalResult: ToolResult): Promise<void> {
      const auditRecord = auditRecordOf(finalResult);
      try {
        // A local activity: the store is the worker's own, and the append costs no server round trip.
        await proxyLocalActivities<ToolCallActivities>({
          startToCloseTimeout: '10s',
          retry: { maximumAttempts: 10, maximumInterval: '5s' },
        }).appendAuditRecord(auditRecord);
      } catch (error) {
        log.error('audit record could not be appended', { callId, error: String(error) });
      }
    }
  };
}

function intentConflict(input: { proposal: Proposal; callId: string }): ToolResult {
  return rejection({
    tool: input.proposal.tool,
    callId: input.callId,
    code: 'IDEMPOTENCY_CONFLICT',
    message: intentConflictMessage({ intentId: input.proposal.intentId, tool: input.proposal.tool }),
  });
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

/**
 * Reads `findAppliedEffect`'s result. Runs recorded before a backend could report a refusal hold
 * `{ applied, output? }`: it reads as applied or not seen, so those runs replay as they ran.
 */
function asRecordedOutcome(
  found: RecordedOutcome<unknown> | { applied: boolean; output?: unknown },
): RecordedOutcome<unknown> {
  if ('status' in found) return found;
  return found.applied ? { status: 'applied', output: found.output } : { status: 'not-seen' };
}

function asData(output: unknown): Record<string, unknown> {
  return output !== null && typeof output === 'object' && !Array.isArray(output)
    ? (output as Record<string, unknown>)
    : { value: output };
}
