import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  CallerPolicySnapshot,
  CheckOutcome,
  ToolCallActivities,
} from '../activities/tool-call-activities';
import type { AuditRecord } from '../audit/audit-store';
import { evaluatePolicy } from '../policy/evaluate-policy';
import type { Proposal } from '../shared/proposal';
import { deriveCallId, parseArguments, proposalArgumentsDigest } from '../shared/proposal';
import type { CallState } from '../shared/temporal';
import { callStateQuery, proposeUpdate, searchAttributes } from '../shared/temporal';
import type { ToolResult } from '../shared/tool-result';
import { rejection } from '../shared/tool-result';
import type { AnyToolContract, ExecutionRetry, ToolContract, ToolInputSchema } from '../tools/define-tool';
import { riskRank } from '../tools/risk-levels';
import { createToolRegistry } from '../tools/tool-registry';
import { validateArguments } from '../tools/validate-arguments';
import type { z } from 'zod';

/** The input of a call's workflow: the proposal that started it and that proposal's update id. */
export interface ToolCallInput {
  proposalId: string;
  proposal: Proposal;
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

/**
 * Creates the workflow every proposed call runs as. Steps run in DESIGN.md's order; nothing reaches
 * a backend before the business checks and nothing changes the world before execution. Every
 * outcome is a `ToolResult`: a success closes the run completed, a rejection closes it failed with
 * the result in the failure's details, and nothing the model sends fails a workflow task.
 */
export function createToolCallWorkflow(options: ToolCallWorkflowOptions) {
  const registry = createToolRegistry({ tools: options.tools });
  const baseRetry: ExecutionRetry = { ...defaultExecutionRetry, ...options.retry };

  return async function toolCall(input: ToolCallInput): Promise<ToolResult> {
    const info = workflowInfo();
    const callId = info.workflowId;
    const { proposal } = input;
    const startedAt = Date.now();
    const state: CallState = { stage: 'validating' };
    const record: Partial<AuditRecord> = {};

    setHandler(callStateQuery, () => state);
    setHandler(proposeUpdate, async (request) => {
      const startedRun = request.proposalId === input.proposalId;
      if (
        !startedRun &&
        proposal.intentId !== undefined &&
        proposalArgumentsDigest(request.proposal) !== proposalArgumentsDigest(proposal)
      ) {
        return { startedRun, result: intentConflict({ proposal, callId }) };
      }
      await condition(() => state.result !== undefined);
      const result = state.result as ToolResult;
      // A proposal that joined a run did not make anything run again.
      return { startedRun, result: startedRun ? result : { ...result, replayed: true } };
    });

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
    upsertSearchAttributes([{ key: searchAttributes.toolCode, value: result.code }]);
    setCurrentDetails(
      `${record.validatedArguments ? summaryOf() : proposal.tool}: ${result.code} (effect ${result.effect})`,
    );
    // The answer goes out only with the run's close, so a proposal made after it starts a new run
    // (a fresh read, a retry after a rejection) instead of joining this one.
    await recordAudit(result);
    state.result = result;
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

    async function runPipeline(): Promise<ToolResult> {
      // Step 1: the policy (loaded by the worker, recorded in history), the tool, the allowlist.
      const policy = await loadPolicy();
      if (!policy) {
        return reject(
          'INTERNAL_ERROR',
          'The policy could not be loaded; nothing was applied. Do not retry; tell the user.',
        );
      }
      record.policyVersion = policy.version;
      const available = policy.callerPolicy?.tools ?? [];
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
      const summary = summaryOf();

      // Step 5: risk level and the caller's policy (pure).
      const verdict = evaluatePolicy({
        contract,
        args,
        caller: proposal.caller,
        callerPolicy: policy.callerPolicy ?? { tools: [], autonomy: 'read' },
        approvalCeiling: policy.approvalCeiling,
      });
      record.riskLevel = verdict.riskLevel;
      upsertSearchAttributes([{ key: searchAttributes.riskLevel, value: riskRank(verdict.riskLevel) }]);
      if (!verdict.allowed)
        return reject(verdict.code, verdict.message, { effect: 'none', data: verdict.data });

      const retry = { ...baseRetry, ...contract.retry };
      const activities = proxyActivities<ToolCallActivities>({
        startToCloseTimeout: retry.attemptTimeoutMs,
        retry: {
          maximumAttempts: retry.maximumAttempts,
          initialInterval: retry.initialIntervalMs,
          maximumInterval: retry.maximumIntervalMs,
          backoffCoefficient: retry.backoffCoefficient,
        },
      });
      const activityInput = { tool: contract.name, callId, args };

      // Step 6: business checks (read-only).
      state.stage = 'checking';
      setCurrentDetails(`${summary}: checking`);
      let check: CheckOutcome;
      try {
        check = await activities.checkToolCall(activityInput);
      } catch (error) {
        return unavailable({ error, contract, effect: 'none' });
      }
      if (!check.ok) {
        return reject(check.code, check.message, {
          effect: 'none',
          ...(check.data ? { data: check.data } : {}),
        });
      }

      // Step 8: execute, the call id as idempotency key on every attempt.
      state.stage = 'executing';
      setCurrentDetails(`${summary}: executing`);
      let output: unknown;
      let confirmedAfterLoss = false;
      try {
        output = (await activities.executeToolCall(activityInput)).output;
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
        if (contract.effect === 'read') return unavailable({ error, contract, effect: 'none' });
        // Retries ran out: never guess. Ask the backend whether this key was applied.
        let found: { applied: boolean; output?: unknown };
        try {
          found = await proxyActivities<ToolCallActivities>({
            startToCloseTimeout: retry.attemptTimeoutMs,
            retry: { maximumAttempts: 3, initialInterval: retry.initialIntervalMs },
          }).findAppliedEffect(activityInput);
        } catch {
          return unavailable({ error, contract, effect: 'unknown' });
        }
        if (!found.applied) return unavailable({ error, contract, effect: 'none' });
        output = found.output;
        confirmedAfterLoss = true;
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
      let verification: CheckOutcome;
      try {
        verification = await activities.verifyToolEffect({ ...activityInput, output: outputCheck.data });
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
    }

    async function loadPolicy(): Promise<CallerPolicySnapshot | undefined> {
      try {
        return await proxyLocalActivities<ToolCallActivities>({
          startToCloseTimeout: '5s',
          retry: { maximumAttempts: 3 },
        }).loadCallerPolicy({ caller: proposal.caller });
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
        return reject(
          'INTERNAL_ERROR',
          `${contract.name} failed unexpectedly and nothing was applied. Do not retry; tell the user.`,
        );
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

    async function recordAudit(finalResult: ToolResult): Promise<void> {
      const finishedAt = Date.now();
      const auditRecord: AuditRecord = {
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
        code: finalResult.code,
        ok: finalResult.ok,
        effect: finalResult.effect,
        result: finalResult,
        startedAt: new Date(startedAt).toISOString(),
        finishedAt: new Date(finishedAt).toISOString(),
        durationMs: finishedAt - startedAt,
      };
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
    message:
      `intent "${input.proposal.intentId}" was already used for ${input.proposal.tool} with other arguments. ` +
      'Nothing was applied for this proposal. Do not retry; ask the user to confirm the request again.',
  });
}

function failureOf(error: unknown): { type?: string; details?: unknown[] } {
  const cause = (error as { cause?: { type?: string; details?: unknown[] } } | undefined)?.cause;
  return cause ?? {};
}

function asData(output: unknown): Record<string, unknown> {
  return output !== null && typeof output === 'object' && !Array.isArray(output)
    ? (output as Record<string, unknown>)
    : { value: output };
}
