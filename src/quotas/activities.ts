import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import { retryingTransient } from '../connection/transient-retry';
import type { ApplicableQuota, HeldReservation, QuotaAdmission } from './protocol';
import { quotaWorkflowId, quotaWorkflowType, releaseQuotaUpdate, reserveQuotaUpdate } from './protocol';

/**
 * The local activities of limits across sessions: a call reserves room in each counter its limits
 * name (the deployment's, then its caller's) before its checks run, and releases what it holds when it
 * ends without an effect. Reserving in one counter and being refused by the next releases the first,
 * so a refused call holds nothing. Each answer is recorded in the call's history.
 */
export function createQuotaActivities() {
  return {
    async reserveQuotas(input: {
      /** Deterministic, so a retried attempt is answered, never counted twice (see `reservationIdOf`). */
      reservationId: string;
      /** The run reserving (see `QuotaReservationRequest.runId`). */
      runId?: string;
      quotas: ApplicableQuota[];
      amount?: number;
    }): Promise<QuotaAdmission> {
      const { client, info } = Context.current();
      const { reservationId } = input;
      const amount = input.amount ?? 0;
      const held: HeldReservation[] = [];
      try {
        for (const quota of input.quotas) {
          const workflowId = quotaWorkflowId({ taskQueue: info.taskQueue, quota });
          const request = {
            reservationId,
            ...(input.runId !== undefined ? { runId: input.runId } : {}),
            amount,
            windowMs: quota.windowMs,
            ...(quota.maxCalls !== undefined ? { maxCalls: quota.maxCalls } : {}),
            ...(quota.maxAmount !== undefined ? { maxAmount: quota.maxAmount } : {}),
          };
          // A plain update to a counter that runs (the usual case), and only when there is none yet,
          // update-with-start: it costs the server more.
          const answer = await retryingTransient(async () => {
            try {
              return await client.workflow
                .getHandle(workflowId)
                .executeUpdate(reserveQuotaUpdate, { args: [request] });
            } catch (error) {
              if (!(error instanceof WorkflowNotFoundError)) throw error;
              return client.workflow.executeUpdateWithStart(reserveQuotaUpdate, {
                args: [request],
                startWorkflowOperation: counterStart({ workflowId, taskQueue: info.taskQueue, quota }),
              });
            }
          }, reservationRetry);
          if (!answer.ok) {
            await releaseAll({ client, held });
            const { ok: _refused, ...usage } = answer;
            return { ok: false, quota, amount, usage };
          }
          held.push({
            workflowId,
            reservationId,
            windowMs: quota.windowMs,
            ...(input.runId !== undefined ? { runId: input.runId } : {}),
          });
        }
      } catch (error) {
        // Nothing half-held: what this attempt reserved is released before it fails (and the call,
        // ending without an effect, releases every counter of its limits again, idempotently).
        await releaseAll({ client, held }).catch(() => undefined);
        throw error;
      }
      return { ok: true, held };
    },

    /** Releases a call's room in the counters named (held or not: releasing what is not held changes nothing). */
    async releaseQuotas(input: { held: HeldReservation[] }): Promise<void> {
      await releaseAll({ client: Context.current().client, held: input.held });
    },
  };
}

async function releaseAll(input: { client: Client; held: HeldReservation[] }): Promise<void> {
  for (const reservation of input.held) {
    try {
      await retryingTransient(
        () =>
          input.client.workflow.getHandle(reservation.workflowId).executeUpdate(releaseQuotaUpdate, {
            args: [
              {
                reservationId: reservation.reservationId,
                windowMs: reservation.windowMs,
                ...(reservation.runId !== undefined ? { runId: reservation.runId } : {}),
              },
            ],
          }),
        reservationRetry,
      );
    } catch (error) {
      // A counter that was never started holds nothing to release.
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }
}

/** Pushed back by the server (many sessions at once): for 25 s at most, within the 60 s activity. */
const reservationRetry = { forMs: 25_000 };

function counterStart(input: { workflowId: string; taskQueue: string; quota: ApplicableQuota }) {
  const { quota } = input;
  const who = quota.scope === 'caller' ? `${quota.caller ?? ''}'s` : "the deployment's";
  return new WithStartWorkflowOperation(quotaWorkflowType, {
    workflowId: input.workflowId,
    taskQueue: input.taskQueue,
    args: [{}],
    workflowIdConflictPolicy: 'USE_EXISTING',
    staticSummary: `limit: ${who} calls of ${quota.tool} per ${quota.window}`,
  });
}

/** The quota activities by name; workflows import this type only. */
export type QuotaActivities = ReturnType<typeof createQuotaActivities>;
