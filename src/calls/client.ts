import type { KeyObject } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { signValue } from '../keys/key-files';
import type { Cancellation, Canceller, SignedCancellation } from './protocol';
import { isCallId } from './proposal';
import {
  cancelUpdate,
  maxCancellationReasonLength,
  searchAttributes,
  toolCallWorkflowType,
} from './protocol';

/** How a cancellation ended: accepted (the call closes `APPROVAL_CANCELLED`), or refused with a stable code. */
export type CancelOutcome =
  | { cancelled: true; callId: string; cancelledBy: string }
  | {
      cancelled: false;
      callId: string;
      /** `CALL_NOT_FOUND`, `CANCELLATION_INVALID`, `CANCEL_TOO_LATE`, `NOT_AWAITING_APPROVAL` or `SIGNATURE_INVALID`. */
      code: string;
      message: string;
    };

/**
 * Cancels one call that waits for approval, signed by its caller's key (`by: { caller }`, what the
 * agent's harness holds) or an operator's (`by: { operator }`). The workflow checks the signature
 * against the keys its evaluation recorded and accepts only while the call waits: a call whose
 * execution started is refused (`CANCEL_TOO_LATE`) and runs on. The signature binds the run, so it
 * cannot cancel a later run of the same call id. A caller cancels only its own calls: another
 * caller's call is `CALL_NOT_FOUND`, as it is everywhere a caller looks a call up.
 */
export async function cancelCall(input: {
  client: Client;
  callId: string;
  by: Canceller;
  privateKey: KeyObject;
  reason: string;
  now?: () => Date;
}): Promise<CancelOutcome> {
  const { callId } = input;
  const refused = (code: string, message: string): CancelOutcome => ({
    cancelled: false,
    callId,
    code,
    message,
  });
  if (!isCallId(callId)) return refused('CALL_NOT_FOUND', `No call ${callId} is visible to you.`);
  const reason = input.reason.trim();
  if (reason === '') return refused('CANCELLATION_INVALID', 'give a reason for the cancellation');
  if (reason.length > maxCancellationReasonLength) {
    return refused(
      'CANCELLATION_INVALID',
      `the reason is ${reason.length} characters; give one of at most ${maxCancellationReasonLength}`,
    );
  }
  const handle = input.client.workflow.getHandle(callId);
  let runId: string;
  try {
    const description = await handle.describe();
    const caller = description.typedSearchAttributes.get(searchAttributes.caller);
    if (description.type !== toolCallWorkflowType || ('caller' in input.by && caller !== input.by.caller)) {
      return refused('CALL_NOT_FOUND', `No call ${callId} is visible to you.`);
    }
    if (description.status.name !== 'RUNNING') {
      return refused(
        'CANCEL_TOO_LATE',
        `call ${callId} has already ended: nothing was cancelled; read its result`,
      );
    }
    runId = description.runId;
  } catch (error) {
    if (error instanceof Error && error.name === 'WorkflowNotFoundError') {
      return refused('CALL_NOT_FOUND', `No call ${callId} is visible to you.`);
    }
    throw error;
  }
  const cancellation: Cancellation = {
    callId,
    runId,
    by: input.by,
    reason,
    issuedAt: (input.now?.() ?? new Date()).toISOString(),
  };
  const signed: SignedCancellation = {
    cancellation,
    signature: signValue({ kind: 'cancellation', value: cancellation, privateKey: input.privateKey }),
  };
  try {
    const receipt = await input.client.workflow
      .getHandle(callId, runId)
      .executeUpdate(cancelUpdate, { args: [signed] });
    return { cancelled: true, callId, cancelledBy: receipt.cancelledBy };
  } catch (error) {
    const cause = (error as { cause?: { type?: string; message?: string } }).cause;
    if (cause?.type) return refused(cause.type, cause.message ?? cause.type);
    const message = error instanceof Error ? error.message : String(error);
    if (/completed|closed|not found/i.test(message)) {
      return refused(
        'CANCEL_TOO_LATE',
        `call ${callId} has already ended: nothing was cancelled; read its result`,
      );
    }
    throw error;
  }
}
