/**
 * What the server answers while a workflow cannot take an update right now, though nothing was
 * applied: load (more than 10 updates in flight on one workflow), a continue-as-new or a closing run,
 * a workflow task that failed to complete (a continue-as-new racing new updates, or a worker that died
 * mid-task), a deduplicated start, an update the run closed (or continued as new) without processing
 * (`UnprocessedUpdate`). Asking again with the same update id is safe: an update already accepted
 * answers with its result.
 */
export const transientUpdateFailure =
  /RESOURCE_EXHAUSTED|in-flight|continued as new|ContinuedAsNew|aborted|already completed|UNAVAILABLE|unexpected workflow task failure|Workflow Task in failed state|StartDeduped|UnprocessedUpdate|wasn't processed/i;

/** What the server answers when it refuses work for load: an update limit, a rate limit, a busy workflow. */
export const overloadFailure = /RESOURCE_EXHAUSTED|in-flight updates|limit on number|rate limit|busy/i;

/**
 * What the server answers a query while nothing is wrong but the workflow cannot answer yet: its newest
 * run has not had its first workflow task (just after a continue-as-new), or a task failed and waits to
 * be retried, or the server is briefly unavailable. Asking again is safe: a query changes nothing.
 */
export const transientQueryFailure =
  /Workflow task is not scheduled yet|first workflow task|Workflow Task in failed state|UNAVAILABLE/i;

/**
 * Runs `action` again while it fails with a transient update failure (or `failures`): backoff with
 * jitter from about 50 ms to 2 s, for `forMs` in all (default 30 s, long enough for a replacement worker
 * to take over a workflow task that a killed one left failed). Anything else is thrown at once.
 */
export async function retryingTransient<T>(
  action: () => Promise<T>,
  options: { forMs?: number; failures?: RegExp } = {},
): Promise<T> {
  const failures = options.failures ?? transientUpdateFailure;
  const deadline = Date.now() + (options.forMs ?? 30_000);
  for (let attempt = 1; ; attempt++) {
    try {
      return await action();
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause;
      const name = error instanceof Error ? error.name : '';
      const text = `${name} ${String(error)} ${cause?.message ?? ''}`;
      if (!failures.test(text) || Date.now() >= deadline) throw error;
      const ceiling = Math.min(2_000, 50 * 2 ** attempt);
      await new Promise((resolve) => setTimeout(resolve, ceiling / 2 + Math.random() * (ceiling / 2)));
    }
  }
}
