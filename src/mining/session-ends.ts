// How sessions ended, read from Temporal: a session's end reason (`handoff`, `idle`, ...) is its
// workflow's result, and its end is the close of its last run. The audit store does not keep session
// ends, so this is bounded by the namespace's retention: a session closed longer ago than that is gone.
import type { Client } from '@temporalio/client';
import type { SessionStats } from '../shared/session';
import { sessionWorkflowType } from '../shared/session';
import { searchAttributes } from '../shared/temporal';
import type { SessionEnd } from './mined-candidates';

/** How many session results are read at once. */
const concurrentReads = 8;

/**
 * The sessions on `taskQueue` whose workflow completed from `since` (inclusive) to `until`
 * (exclusive), with their end reason. `worthReading` skips a session before its result is fetched
 * (mining reads only those with audited calls). A result that cannot be read (the run was removed
 * meanwhile) is left out. Never changes anything.
 */
export async function readSessionEnds(input: {
  client: Client;
  taskQueue: string;
  since: Date;
  until: Date;
  worthReading?: (session: string) => boolean | Promise<boolean>;
}): Promise<SessionEnd[]> {
  // The queue name is configuration, never a request's; quotes are dropped all the same.
  const query =
    `WorkflowType = "${sessionWorkflowType}" AND ExecutionStatus = "Completed"` +
    ` AND TaskQueue = "${input.taskQueue.replace(/"/g, '')}"` +
    ` AND CloseTime >= "${input.since.toISOString()}" AND CloseTime < "${input.until.toISOString()}"`;
  const closed: { workflowId: string; runId: string; session: string; endedAt: string }[] = [];
  for await (const execution of input.client.workflow.list({ query })) {
    const session = execution.typedSearchAttributes.get(searchAttributes.sessionId);
    if (session === undefined || !execution.closeTime) continue;
    if (input.worthReading && !(await input.worthReading(session))) continue;
    closed.push({
      workflowId: execution.workflowId,
      runId: execution.runId,
      session,
      endedAt: execution.closeTime.toISOString(),
    });
  }
  const ends: SessionEnd[] = [];
  for (let start = 0; start < closed.length; start += concurrentReads) {
    const batch = closed.slice(start, start + concurrentReads);
    const read = await Promise.all(
      batch.map(async (entry): Promise<SessionEnd | undefined> => {
        let stats: SessionStats;
        try {
          stats = (await input.client.workflow
            .getHandle(entry.workflowId, entry.runId)
            .result()) as SessionStats;
        } catch {
          return undefined;
        }
        return {
          session: entry.session,
          ...(typeof stats?.caller === 'string' ? { caller: stats.caller } : {}),
          reason: typeof stats?.closedReason === 'string' ? stats.closedReason : 'ended',
          endedAt: entry.endedAt,
        };
      }),
    );
    for (const end of read) if (end) ends.push(end);
  }
  return ends;
}
