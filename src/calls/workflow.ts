import { allHandlersFinished, ApplicationFailure, condition, log, setHandler } from '@temporalio/workflow';
import type { SignedDecision, SignedEdit } from '../approvals/protocol';
import { CallApprovals } from '../approvals/workflow-round';
import { toolSwitchSignal } from '../controls/protocol';
import { internalErrorMessage } from '../shared/model-messages';
import type { ToolResult } from '../shared/tool-result';
import type { ApprovalState, SignedCancellation, ToolCallInput } from './protocol';
import {
  callStateQuery,
  cancelUpdate,
  decideUpdate,
  editUpdate,
  proposeUpdate,
  searchAttributes,
} from './protocol';
import { CallCancellation } from './workflow-cancellation';
import { pipeline } from './workflow-pipeline';
import { CallProposals } from './workflow-proposals';
import { CallReservations } from './workflow-reservations';
import { CallRun } from './workflow-run';
import { ToolSwitchWatch } from './workflow-tool-switch';

/**
 * The workflow every proposed call runs as: docs/design.md's pipeline, step by step. The worker evaluates
 * the proposal against the contracts and the policy (steps 1 to 5) in one recorded local activity; the
 * workflow runs no tool code, so a contract deploy cannot change a waiting call on replay. A success
 * closes the run completed; a rejection closes it failed with the result in the failure's details;
 * nothing the model or an approver sends fails a task.
 *
 * This function only wires: each concern of the run is a collaborator of its own, and every message
 * the run answers is registered here, before its first wait.
 */
export async function toolCall(input: ToolCallInput): Promise<ToolResult> {
  const run = new CallRun(input);
  const cancellation = new CallCancellation(run);
  const toolSwitch = new ToolSwitchWatch(run);
  const reservations = new CallReservations(run);
  const proposals = new CallProposals(run);
  const approvals = new CallApprovals({
    callId: run.callId,
    runId: run.runId,
    caller: run.proposal.caller,
    state: run.state,
    approvers: () => run.evaluation?.approvers,
    operators: () => run.evaluation?.operators,
    interrupted: () => cancellation.interruption() ?? toolSwitch.interruption(),
    onStateChange: (value: ApprovalState) => {
      // Approval states are what ops watch live: written at once, with anything queued before them.
      run.setAttribute({ key: searchAttributes.approvalState, value }, { flush: true });
    },
  });

  setHandler(callStateQuery, () => run.state);
  setHandler(proposeUpdate, (request) => proposals.answer(request));
  setHandler(toolSwitchSignal, () => toolSwitch.wakeUp());
  setHandler(cancelUpdate, (request) => cancellation.accept(request), {
    validator: (request: SignedCancellation) => cancellation.validate(request),
  });
  setHandler(decideUpdate, (decision) => approvals.decide(decision), {
    validator: (decision: SignedDecision) => approvals.validate(decision),
  });
  setHandler(editUpdate, (edit) => approvals.edit(edit), {
    validator: (edit: SignedEdit) => approvals.validateEdit(edit),
  });

  let result: ToolResult;
  try {
    result = await pipeline({ run, approvals, cancellation, toolSwitch, reservations });
  } catch (error) {
    log.error('call pipeline failed unexpectedly', { callId: run.callId, error: String(error) });
    result = run.reject({ code: 'INTERNAL_ERROR', message: internalErrorMessage });
  }
  run.progress('recording');
  await reservations.release(result);
  await run.record(result);
  // Tells the notifications' own workflow that the call closes; it never waits for a webhook.
  await run.notifications?.closed();
  await condition(allHandlersFinished);
  if (result.ok) return result;
  throw ApplicationFailure.create({
    type: result.code,
    message: result.message,
    details: [result],
    nonRetryable: true,
  });
}
