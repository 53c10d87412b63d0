import { log, proxyLocalActivities, setCurrentDetails } from '@temporalio/workflow';
import type { ToolCallActivities } from './activities';
import type { ExecutionApproval } from '../approvals/protocol';
import type { ApprovalSubject, CallApprovals, EditVerdict } from '../approvals/workflow-round';
import type { EditRecord } from './protocol';
import { canonicalJson } from '../shared/canonical-json';
import { argumentChanges } from '../shared/argument-changes';
import type { EditRefusalCode } from '../shared/codes';
import { editRefusalCodes } from '../shared/codes';
import type { ApprovalRequirement, CallEvaluation, EvaluatedCall, SignedProposal } from './call-evaluation';
import {
  approvalDeniedMessage,
  approvalExpiredMessage,
  approvalPendingMessage,
  argumentsEditedNote,
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
  const { run, reservations, toolSwitch } = parts;
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
  const proposed = steps.evaluated.args;
  const result = await approveAndRun(parts, steps);
  // The model is told when an approver edited its arguments, field by field, whatever the outcome.
  const edits = parts.run.state.edits;
  return edits?.length ? withEdits({ result, proposed, ran: steps.evaluated.args, edits }) : result;
}

/** Steps 7 to 9, and the call's success. */
async function approveAndRun(parts: CallParts, steps: ToolSteps): Promise<ToolResult> {
  const { cancellation } = parts;
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

/** The result with the approvers' edits: who, why, each field that changed; the message says so on a success. */
function withEdits(input: {
  result: ToolResult;
  proposed: Record<string, unknown>;
  ran: Record<string, unknown>;
  edits: readonly EditRecord[];
}): ToolResult {
  const { result, proposed, ran, edits } = input;
  const changes = argumentChanges(proposed, ran);
  const edited = { by: edits.map((edit) => edit.approver), reason: edits[edits.length - 1]!.reason, changes };
  return {
    ...result,
    ...(result.ok ? { message: result.message + argumentsEditedNote(edited) } : {}),
    edited,
  };
}

const evaluationActivities = proxyLocalActivities<ToolCallActivities>({
  startToCloseTimeout: '5s',
  retry: { maximumAttempts: 3 },
});

/**
 * Steps 1 to 5, in the worker: its answer is recorded, so replay never re-runs contract code. With
 * `edited`, an approver's edited arguments take the model's place (see `evaluateEdit`).
 */
async function evaluate(call: CallRun, edited?: Record<string, unknown>): Promise<Step<EvaluatedCall>> {
  let evaluation: CallEvaluation;
  try {
    const signed = signedProposalOf(call);
    evaluation = edited
      ? await evaluationActivities.evaluateEdit({ ...signed, edited })
      : await evaluationActivities.evaluateCall(signed);
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
  if (steps.evaluated.inputSchema) call.state.inputSchema = steps.evaluated.inputSchema;
  // A standing grant covered the call at evaluation: take a use of it, atomically, instead of waiting.
  const granted = await reservations.useStandingGrant(steps.evaluated);
  if (granted) return { ok: true, value: granted };
  const notifications = call.notifyApprovals({ evaluated: steps.evaluated, requirement });
  // The arguments an approver's edit made (absent: the model's): judged again with them after a deploy.
  let edited: Record<string, unknown> | undefined;
  let editedBy: string | undefined;
  const editedRequirement = (approver: string): ApprovalRequirement => ({
    ...withoutChain(requirement),
    quorum: 1,
    rule: `${approver} edited the arguments: they run once approved as edited`,
  });
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
      const evaluated = await evaluate(call, edited);
      if (!evaluated.ok) return { ok: false, stop: evaluated.result };
      steps.judgedAgain(evaluated.value);
      // The rule the new evaluation asks approval by; none when it lets the caller act alone, unless
      // an approver edited the arguments: those run only once approved as edited, whatever the deploy.
      const again = evaluated.value.approval ?? (editedBy ? editedRequirement(editedBy) : undefined);
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
    onTurn: (round) => {
      const step = round.chain?.steps[round.chain.step - 1];
      if (step) {
        setCurrentDetails(
          `${steps.evaluated.summary}, waiting for group ${step.group} (step ${round.chain!.step} of ` +
            `${round.chain!.steps.length}), expires ${round.expiresAt.slice(11, 16)} UTC`,
        );
      }
      notifications.turn(round);
    },
    onEnd: (round, ending) => notifications.ended(round, ending),
    judgeEdit: (args) => judgeEdit({ call, args, current: steps.evaluated }),
    applyEdit: (evaluation, edit) => {
      edited = evaluation.call.args;
      editedBy = edit.envelope.approver;
      call.evaluated(evaluation);
      steps.judgedAgain(evaluation.call);
      // Edited arguments run only once approved as edited, even where the policy would let them alone.
      const again = evaluation.call.approval ?? editedRequirement(editedBy);
      call.state.approvalRule = again.rule;
      if (evaluation.call.inputSchema) call.state.inputSchema = evaluation.call.inputSchema;
      return approvalSubject(evaluation.call, again);
    },
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

/** The call's proposal as its evaluations receive it. */
function signedProposalOf(call: CallRun): SignedProposal {
  return {
    proposalId: call.input.proposalId,
    callId: call.callId,
    proposal: call.proposal,
    ...(call.input.signature !== undefined ? { signature: call.input.signature } : {}),
  };
}

/** An approver's edited arguments, judged: they may go on, or the edit code and reason the approver is told. */
async function judgeEdit(input: {
  call: CallRun;
  args: Record<string, unknown>;
  /** The evaluation the call goes on with now: what its limits across sessions reserved. */
  current: EvaluatedCall;
}): Promise<EditVerdict> {
  const { call, args, current } = input;
  let evaluation: CallEvaluation;
  try {
    evaluation = await evaluationActivities.evaluateEdit({ ...signedProposalOf(call), edited: args });
  } catch {
    return { ok: false, code: 'EDIT_REFUSED', reason: 'the worker could not judge the edit; try again' };
  }
  if (evaluation.ok) {
    // The call's room in its limits was reserved for its limits and amount, before it waited: the edited
    // call must count toward the same limits, and may lower its amount, never raise it.
    if (canonicalJson(evaluation.call.quotas ?? []) !== canonicalJson(current.quotas ?? [])) {
      return {
        ok: false,
        code: 'EDIT_REFUSED',
        reason:
          'the limits across sessions this call counts toward changed since it reserved its room: ' +
          'deny, and let the agent propose it again',
      };
    }
    const edited = evaluation.call.amount;
    if (current.quotas?.length && edited !== undefined && edited > (current.amount ?? 0)) {
      return {
        ok: false,
        code: 'EDIT_REFUSED',
        reason:
          `the call counts toward a limit across sessions, reserved for ${current.amount ?? 0}; ` +
          `an edit may lower its amount, not raise it to ${edited}: deny, and let the agent propose it`,
      };
    }
    return { ok: true, evaluation };
  }
  const { code, message } = evaluation.refusal;
  return editRefusalCodes.includes(code as EditRefusalCode)
    ? { ok: false, code: code as EditRefusalCode, reason: message }
    : { ok: false, code: 'EDIT_REFUSED', reason: `${code}: ${message}` };
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

/** A requirement without its chain: what edited arguments that need no approval otherwise are asked under. */
function withoutChain(requirement: ApprovalRequirement): ApprovalRequirement {
  const { chain: _chain, ...rest } = requirement;
  return rest;
}
