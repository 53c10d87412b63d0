import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import type { ApplicableQuota, HeldReservation, QuotaAdmission } from '../shared/quotas';
import { quotaWorkflowId, quotaWorkflowType, releaseQuotaUpdate, reserveQuotaUpdate } from '../shared/quotas';

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
            amount,
            windowMs: quota.windowMs,
            ...(quota.maxCalls !== undefined ? { maxCalls: quota.maxCalls } : {}),
            ...(quota.maxAmount !== undefined ? { maxAmount: quota.maxAmount } : {}),
          };
          // A plain update to a counter that runs (the usual case), and only when there is none yet,
          // update-with-start: it costs the server more.
          const answer = await withBackoff(async () => {
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
          });
          if (!answer.ok) {
            await releaseAll({ client, held });
            const { ok: _refused, ...usage } = answer;
            return { ok: false, quota, amount, usage };
          }
          held.push({ workflowId, reservationId, windowMs: quota.windowMs });
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
      await withBackoff(() =>
        input.client.workflow.getHandle(reservation.workflowId).executeUpdate(releaseQuotaUpdate, {
          args: [{ reservationId: reservation.reservationId, windowMs: reservation.windowMs }],
        }),
      );
    } catch (error) {
      // A counter that was never started holds nothing to release.
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }
}

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

/**
 * Runs `action` again while the server pushes back (at most 10 updates may be in flight per workflow:
 * many sessions reserving at once meet that limit) or a counter is between runs: backoff with jitter,
 * for about 25 s in all. Anything else is thrown at once, and the activity's retry decides.
 */
async function withBackoff<T>(action: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 25_000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await action();
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause;
      const text = `${(error as Error)?.name ?? ''} ${String(error)} ${cause?.message ?? ''}`;
      const pushedBack =
        /RESOURCE_EXHAUSTED|in-flight|concurrent|continued as new|Workflow Update was aborted/i.test(text);
      if (!pushedBack || Date.now() >= deadline) throw error;
      const ceiling = Math.min(2_000, 25 * 2 ** attempt);
      await new Promise((resolve) => setTimeout(resolve, ceiling / 2 + Math.random() * (ceiling / 2)));
    }
  }
}

/** The quota activities by name; workflows import this type only. */
export type QuotaActivities = ReturnType<typeof createQuotaActivities>;
