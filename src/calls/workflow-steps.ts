import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ToolCallActivities } from './activities';
import type { ExecutionApproval } from '../approvals/protocol';
import type { CheckOutcome, EvaluatedCall, LookupAnswer, ToolCallActivityInput } from './call-evaluation';
import {
  mintRefusedMessage,
  outputContractMessage,
  successMessage,
  toolFailedMessage,
  upstreamUnavailableMessage,
  verificationFailedMessage,
} from '../shared/model-messages';
import type { DisabledSwitch } from '../controls/protocol';
import type { Effect, ToolResult } from '../shared/tool-result';
import type { CallRun, Step } from './workflow-run';
import type { ToolSwitchWatch } from './workflow-tool-switch';

/** What execution produced: the output within its contract, and whether it was found after a lost answer. */
export interface Executed {
  output: unknown;
  confirmedAfterLoss: boolean;
}

/**
 * Steps 6, 8 and 9 for one evaluated call: the tool's activities, with its retry and what it has. The
 * evaluation is the latest recorded one: a call judged again after a contract deploy goes on with it.
 */
export class ToolSteps {
  private readSteps!: ToolCallActivities;
  private writeSteps!: ToolCallActivities;
  private activityInput!: ToolCallActivityInput;
  private current!: EvaluatedCall;

  constructor(
    private readonly call: CallRun,
    private readonly toolSwitch: ToolSwitchWatch,
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
          return {
            ok: false,
            result: this.toolSwitch.disabledResult(failure.details?.[0] as DisabledSwitch),
          };
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
