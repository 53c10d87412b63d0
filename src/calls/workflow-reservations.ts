import { log, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { ExecutionApproval } from '../approvals/protocol';
import type { EvaluatedCall } from './call-evaluation';
import { quotaExceededMessage } from '../shared/model-messages';
import { searchAttributes } from './protocol';
import type { GrantActivities } from '../grants/activities';
import type { QuotaActivities } from '../quotas/activities';
import type { HeldReservation } from '../quotas/protocol';
import { quotaWorkflowId } from '../quotas/protocol';
import type { ToolResult } from '../shared/tool-result';
import type { CallRun } from './workflow-run';

/**
 * What a call holds of what is shared across sessions: its room in the counters of its limits (step
 * 5) and the use of a standing grant it took instead of waiting (step 7). Both are given back when the
 * call ends without an effect.
 */
export class CallReservations {
  /** The counters of the call's limits and its room's id: released if it ends without an effect. */
  private quotaReservation: { reservationId: string; held: HeldReservation[] } = {
    reservationId: '',
    held: [],
  };
  /** The standing grant's use the call took (step 7): given back if it ends without an effect. */
  private grantUse?: { grantId: string; reservationId: string; runId: string };

  constructor(private readonly call: CallRun) {}

  /**
   * Gives back what the call held when it changed nothing: a call that changed nothing does not count
   * toward its limits; an effect that may have happened, or a read that ran, does.
   */
  async release(result: ToolResult): Promise<void> {
    if (this.quotaReservation.held.length && result.effect === 'none' && !this.call.executedRead) {
      try {
        await proxyLocalActivities<QuotaActivities>({
          startToCloseTimeout: '60s',
          retry: { maximumAttempts: 5, initialInterval: '500ms' },
        }).releaseQuotas({ held: this.quotaReservation.held });
      } catch (error) {
        log.error('a limit reservation could not be released; it counts until it leaves its window', {
          callId: this.call.callId,
          error: String(error),
        });
      }
    }
    if (this.grantUse && result.effect === 'none' && !this.call.executedRead) {
      try {
        await proxyLocalActivities<GrantActivities>({
          startToCloseTimeout: '60s',
          retry: { maximumAttempts: 5, initialInterval: '500ms' },
        }).releaseStandingGrant(this.grantUse);
      } catch (error) {
        log.error("a standing grant's use could not be given back; it stays counted", {
          callId: this.call.callId,
          error: String(error),
        });
      }
    }
  }

  /**
   * What the call's room in a limit, or its use of a grant, is keyed by: a write's by its call id (a
   * run proposed again after an effect that may have happened reuses what its earlier run kept, never
   * counting one refund twice); a read's by its run (it runs again when proposed again, so each run counts).
   */
  private reservationIdOf(evaluated: EvaluatedCall): string {
    return evaluated.effect === 'write' ? this.call.callId : `${this.call.callId}:${this.call.runId}`;
  }

  /**
   * Step 7 by a standing grant: when the evaluation saw one covering the call, takes a use of it (a
   * recorded local activity: the grants workflow counts it atomically and the worker checks the grant
   * against its policy). The grant and its approvers join the call's state and audit record. Undefined
   * when no grant covers it (any more): the call then asks for approval as usual.
   */
  async useStandingGrant(evaluated: EvaluatedCall): Promise<ExecutionApproval | undefined> {
    if (evaluated.standingGrant === undefined) return undefined;
    const reservationId = this.reservationIdOf(evaluated);
    let used: Awaited<ReturnType<GrantActivities['useStandingGrant']>>;
    try {
      used = await proxyLocalActivities<GrantActivities>({
        startToCloseTimeout: '60s',
        retry: { maximumAttempts: 3, initialInterval: '500ms' },
      }).useStandingGrant({
        reservationId,
        callId: this.call.callId,
        runId: this.call.runId,
        caller: this.call.proposal.caller,
        tool: evaluated.tool,
        riskLevel: evaluated.riskLevel,
        ...(evaluated.amount !== undefined ? { amount: evaluated.amount } : {}),
      });
    } catch (error) {
      // The grants could not be asked: a human decides instead.
      log.warn('a standing grant could not be used; the call asks for approval', {
        callId: this.call.callId,
        error: String(error),
      });
      return undefined;
    }
    if (!used.ok) {
      this.call.state.grant = { outcome: 'not-covered', reason: used.reason };
      return undefined;
    }
    const { grant } = used.grant;
    this.grantUse = { grantId: grant.grantId, reservationId, runId: this.call.runId };
    this.call.state.grant = {
      outcome: 'used',
      grantId: grant.grantId,
      approvers: used.approvers,
      reason: grant.reason,
      expiresAt: grant.expiresAt,
    };
    this.call.setAttribute({ key: searchAttributes.approvalState, value: 'granted' }, { flush: true });
    return { grant: used.grant, reservationId };
  }

  /**
   * Reserves room for the call in the counters of its limits across sessions (none: no step at all);
   * `POLICY_LIMIT` with which limit, what is used and left, and when room frees up, when one is full.
   */
  async reserveQuotas(evaluated: EvaluatedCall): Promise<ToolResult | undefined> {
    if (!evaluated.quotas?.length) return undefined;
    const reservationId = this.reservationIdOf(evaluated);
    const { taskQueue } = workflowInfo();
    // Known before the reservation, so every counter is released if the call ends without an effect,
    // whatever the reservation step managed (releasing room not held changes nothing).
    this.quotaReservation = {
      reservationId,
      held: evaluated.quotas.map((quota) => ({
        workflowId: quotaWorkflowId({ taskQueue, quota }),
        reservationId,
        windowMs: quota.windowMs,
        runId: this.call.runId,
      })),
    };
    const admission = await proxyLocalActivities<QuotaActivities>({
      startToCloseTimeout: '60s',
      retry: { maximumAttempts: 3, initialInterval: '500ms' },
    }).reserveQuotas({
      reservationId: this.quotaReservation.reservationId,
      runId: this.call.runId,
      quotas: evaluated.quotas,
      ...(evaluated.amount !== undefined ? { amount: evaluated.amount } : {}),
    });
    if (admission.ok) return undefined;
    const { quota, usage, amount } = admission;
    const scope = quota.scope === 'caller' ? `caller ${quota.caller ?? ''}` : 'the whole deployment';
    return this.call.reject({
      code: 'POLICY_LIMIT',
      message: quotaExceededMessage({
        tool: quota.tool,
        scope,
        window: quota.window,
        ...(quota.maxCalls !== undefined ? { maxCalls: quota.maxCalls } : {}),
        ...(quota.maxAmount !== undefined ? { maxAmount: quota.maxAmount } : {}),
        amount,
        calls: usage.calls,
        used: usage.amount,
        ...(usage.resetsAt !== undefined ? { resetsAt: usage.resetsAt } : {}),
      }),
      data: {
        limit: {
          scope: quota.scope,
          ...(quota.caller !== undefined ? { caller: quota.caller } : {}),
          tool: quota.tool,
          window: quota.window,
          ...(quota.maxCalls !== undefined ? { maxCalls: quota.maxCalls } : {}),
          ...(quota.maxAmount !== undefined ? { maxAmount: quota.maxAmount } : {}),
        },
        amount,
        used: { calls: usage.calls, amount: usage.amount },
        remaining: {
          ...(usage.remainingCalls !== undefined ? { calls: usage.remainingCalls } : {}),
          ...(usage.remainingAmount !== undefined ? { amount: usage.remainingAmount } : {}),
        },
        ...(usage.resetsAt !== undefined ? { resetsAt: usage.resetsAt } : {}),
      },
    });
  }
}
