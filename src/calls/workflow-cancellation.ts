import { ApplicationFailure, currentUpdateInfo, proxySinks } from '@temporalio/workflow';
import { approvalCancelledMessage } from '../shared/model-messages';
import { ownValue } from '../shared/own-records';
import { verifySignature } from '../shared/signatures';
import type { CancellationReceipt, SignedCancellation } from './protocol';
import { maxCancellationReasonLength } from './protocol';
import type { ToolGateSinks } from '../shared/temporal';
import type { CancellationRefusalCode } from '../shared/codes';
import type { ToolResult } from '../shared/tool-result';
import type { CallRun } from './workflow-run';

/**
 * A call's cancellation while it waits for approval, by its caller or a policy operator: the
 * update's validator refuses what does not hold before anything is recorded, the handler accepts the
 * rest, and every attempt reaches the audit store.
 */
export class CallCancellation {
  /** Set by an accepted cancellation: who (`caller x` or `operator y`) and why. */
  accepted?: { by: string; reason: string; at: string };

  constructor(private readonly call: CallRun) {}

  /** Why the call stops waiting, once a cancellation was accepted. */
  interruption(): string | undefined {
    return this.accepted ? `the call was cancelled by ${this.accepted.by}` : undefined;
  }

  /** `APPROVAL_CANCELLED` when a cancellation was accepted, else undefined. */
  result(summary: string): ToolResult | undefined {
    const { accepted: cancellation } = this;
    if (!cancellation) return undefined;
    return this.call.reject({
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
  validate(request: SignedCancellation): void {
    const refuse = (code: CancellationRefusalCode, message: string): never => {
      // A refusal leaves no trace in history: the audit store keeps it, as it keeps refused decisions.
      this.audit(request, code);
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
      cancellation.callId !== this.call.callId ||
      cancellation.runId !== this.call.runId ||
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
        : principal === 'caller' && name === this.call.proposal.caller
          ? this.call.evaluation?.callerKeyHex
          : principal === 'operator'
            ? ownValue(this.call.evaluation?.operators, name)
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
    const { stage, approval } = this.call.state;
    if (this.accepted) refuse('CANCEL_TOO_LATE', 'the call is already cancelled');
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
  accept(request: SignedCancellation): CancellationReceipt {
    // The round may have been decided between the validator and this handler.
    this.refuseUnlessWaiting((code, message) => {
      this.audit(request, code);
      throw ApplicationFailure.create({ type: code, message, nonRetryable: true });
    });
    this.audit(request, 'accepted');
    const { by } = request.cancellation;
    const who = 'caller' in by ? `caller ${by.caller}` : `operator ${by.operator}`;
    this.accepted = { by: who, reason: request.cancellation.reason, at: new Date().toISOString() };
    return { accepted: true, callId: this.call.callId, cancelledBy: who };
  }

  /**
   * Every cancellation attempt, accepted or refused, reaches the audit store with the decision
   * attempts (decision `cancel`, the canceller in place of the approver, the signed cancellation as
   * its envelope), once per update id and never during replay.
   */
  private audit(request: SignedCancellation, outcome: string): void {
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
      callId: this.call.callId,
      runId: this.call.runId,
      approver: who.slice(0, 300),
      decision: 'cancel',
      outcome,
      // A forger's megabytes are not kept: what is larger than a real cancellation is marked, not stored.
      envelope: JSON.stringify(request ?? null).length <= 4096 ? (request ?? null) : { oversized: true },
    });
  }
}
