import { condition, log, proxyLocalActivities } from '@temporalio/workflow';
import type { SessionActivities } from '../sessions/activities';
import {
  intentConflictMessage,
  internalErrorMessage,
  unauthenticatedMessage,
} from '../shared/model-messages';
import type { Proposal } from './proposal';
import { proposalArgumentsDigest } from './proposal';
import { verifySignature } from '../shared/signatures';
import type { ProposeResponse } from './protocol';
import type { ToolResult } from '../shared/tool-result';
import type { CallRun } from './workflow-run';

/**
 * The proposals a run answers: the one that started it, and those that join it (the same call id
 * proposed again while it runs), each signed by the caller and admitted by the session as a step of
 * its own.
 */
export class CallProposals {
  constructor(private readonly call: CallRun) {}

  /** A proposal's answer: the run's result, or `APPROVAL_PENDING` while it waits for a human. */
  async answer(request: {
    proposalId: string;
    proposal: Proposal;
    signature?: string;
  }): Promise<ProposeResponse> {
    const startedRun = request.proposalId === this.call.input.proposalId;
    if (!startedRun) {
      // A joining proposal must be signed by the caller too; it waits for the evaluation to know the key.
      await condition(() => this.call.evaluation !== undefined || this.call.state.result !== undefined);
      if (!this.signedByCaller(request)) {
        return {
          startedRun,
          result: this.call.reject({
            code: 'UNAUTHENTICATED_CALLER',
            message: unauthenticatedMessage(this.call.proposal),
          }),
        };
      }
      const { intentId } = this.call.proposal;
      if (
        intentId !== undefined &&
        proposalArgumentsDigest(request.proposal) !== proposalArgumentsDigest(this.call.proposal)
      ) {
        const message = intentConflictMessage({ intentId, tool: this.call.proposal.tool });
        return { startedRun, result: this.call.reject({ code: 'IDEMPOTENCY_CONFLICT', message }) };
      }
      // A joining proposal is a step of its session like the first: the loop guard counts it.
      const admission = await this.admitJoining({ ...request, callId: this.call.callId });
      if (!admission.admitted && !this.metSameDenial(admission.result, request.proposal)) {
        return { startedRun, result: admission.result };
      }
      // Admitted, but joining a run its own starter's admission refused: that refusal is not this
      // proposal's answer, and the run runs nothing; the client proposes again once it has closed.
      if (this.call.evaluation?.authenticated && !this.call.evaluation.admitted && !this.call.evaluation.ok) {
        return { startedRun, result: this.call.reject(this.call.evaluation.refusal), proposeAgain: true };
      }
    }
    await condition(() => this.call.state.result !== undefined || this.call.state.pending !== undefined);
    if (this.call.state.result) {
      // A proposal that joined a run did not make anything run again.
      const { result } = this.call.state;
      return { startedRun, result: startedRun ? result : { ...result, replayed: true } };
    }
    return { startedRun, result: this.call.state.pending as ToolResult };
  }

  /** The session's admission of a proposal that joins this run (a recorded local activity). */
  private async admitJoining(request: {
    proposalId: string;
    callId: string;
    proposal: Proposal;
    signature?: string;
  }): Promise<{ admitted: true } | { admitted: false; result: ToolResult }> {
    try {
      return await proxyLocalActivities<SessionActivities>({
        startToCloseTimeout: '10s',
        retry: { maximumAttempts: 5, initialInterval: '200ms' },
      }).admitJoiningProposal(request);
    } catch (error) {
      log.error('a joining proposal could not be admitted', {
        callId: this.call.callId,
        error: String(error),
      });
      return {
        admitted: false,
        result: this.call.reject({ code: 'INTERNAL_ERROR', message: internalErrorMessage }),
      };
    }
  }

  /**
   * The loop guard refused a joining proposal, but the run it joins was answered by a person's
   * denial of these same arguments (denial memory): that denial is the answer, as for the run.
   */
  private metSameDenial(refused: ToolResult, proposal: Proposal): boolean {
    const evaluation = this.call.evaluation;
    return (
      refused.code === 'LOOP_DETECTED' &&
      evaluation !== undefined &&
      !evaluation.ok &&
      evaluation.refusal.replayed === true &&
      evaluation.refusal.code === 'APPROVAL_DENIED' &&
      proposalArgumentsDigest(proposal) === proposalArgumentsDigest(this.call.proposal)
    );
  }

  private signedByCaller(request: { proposal: Proposal; signature?: string }): boolean {
    const key = this.call.evaluation?.callerKeyHex;
    if (!key || !request.signature) return false;
    return verifySignature({
      kind: 'proposal',
      value: { callId: this.call.callId, proposal: request.proposal },
      signature: request.signature,
      publicKeyHex: key,
    });
  }
}
