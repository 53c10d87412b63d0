import { log, proxyLocalActivities, setCurrentDetails } from '@temporalio/workflow';
import type { ToolCallActivities } from './activities';
import type { ExecutionApproval } from '../approvals/protocol';
import type { ApprovalSubject, CallApprovals } from '../approvals/workflow-round';
import type { ApprovalRequirement, CallEvaluation, EvaluatedCall } from './call-evaluation';
import {
  approvalDeniedMessage,
  approvalExpiredMessage,
  approvalPendingMessage,
  evaluationFailedMessage,
} from '../shared/model-messages';
import type { ToolResult } from '../shared/tool-result';
import type { CallCancellation } from './workflow-cancellation';
import type { CallReservations } from './workflow-reservations';
import type { CallRun, Step } from './workflow-run';
import { ToolSteps } from './workflow-steps';
import type { ToolSwitchWatch } from './workflow-tool-switch';

/** A call's collaborators, as its workflow wires them: each holds one concern of the run. */
export interface CallParts {
  run: CallRun;
  approvals: CallApprovals;
  cancellation: CallCancellation;
  toolSwitch: ToolSwitchWatch;
  reservations: CallReservations;
}

/**
 * docs/design.md's pipeline, step by step. Nothing reaches a backend before the business checks and
 * nothing changes the world before execution.
 */
export async function pipeline(parts: CallParts): Promise<ToolResult> {
  const { run, cancellation, reservations, toolSwitch } = parts;
  // Steps 1 to 5: signature, tool, allowlist, call id, parse, schema, risk level, policy.
  const evaluated = await evaluate(run);
  if (!evaluated.ok) return evaluated.result;
  // Step 5, limits across sessions: room reserved in each durable counter, released if no effect follows.
  const reserved = await reservations.reserveQuotas(evaluated.value);
  if (reserved) return reserved;
  const steps = new ToolSteps(run, toolSwitch, evaluated.value);
  // Step 6: business checks (read-only).
  const checked = await steps.check();
  if (!checked.ok) return checked.result;
  // Step 7: human approval, when the risk level is above the caller's autonomy.
  const approved = await approve(parts, steps);
  if (!approved.ok) return approved.result;
  // A cancellation accepted while the round was open, handled as its last decision came in.
  const cancelled = cancellation.result(steps.evaluated.summary);
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
async function approve(parts: CallParts, steps: ToolSteps): Promise<Step<ExecutionApproval | undefined>> {
  const { run: call, approvals, cancellation, reservations, toolSwitch } = parts;
  const requirement = steps.evaluated.approval;
  if (!requirement) return { ok: true, value: undefined };
  call.state.approvalRule = requirement.rule;
  // A standing grant covered the call at evaluation: take a use of it, atomically, instead of waiting.
  const granted = await reservations.useStandingGrant(steps.evaluated);
  if (granted) return { ok: true, value: granted };
  const notifications = call.notifyApprovals({ evaluated: steps.evaluated, requirement });
  // While it waits, an operator may turn the tool off: the controls tell the call, which reads the switch.
  void toolSwitch.watch(steps.evaluated.tool);
  const outcome = await approvals.obtain<ToolResult>({
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
      const { accepted } = cancellation;
      if (accepted) {
        return {
          reason: `cancelled by ${accepted.by}: ${accepted.reason}`,
          stop: () => cancellation.result(steps.evaluated.summary) as ToolResult,
        };
      }
      const { disabled } = toolSwitch;
      if (disabled) {
        return {
          reason: `${disabled.tool} turned off by operator ${disabled.operator}: ${disabled.reason}`,
          stop: () => toolSwitch.disabledResult(disabled),
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
