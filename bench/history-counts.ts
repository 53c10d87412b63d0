// Round trips read from recorded histories: a figure of the design, not of the machine's load.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** The event types that stand for a round trip (or a step of one), in the order the table shows them. */
export const countedEvents = [
  ['WORKFLOW_TASK_SCHEDULED', 'workflow tasks scheduled'],
  ['WORKFLOW_TASK_COMPLETED', 'workflow tasks completed'],
  ['ACTIVITY_TASK_SCHEDULED', 'activity tasks'],
  ['MARKER_RECORDED', 'markers (local activities)'],
  ['WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'updates accepted'],
  ['WORKFLOW_EXECUTION_SIGNALED', 'signals received'],
  ['SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED', 'signals sent'],
  ['TIMER_STARTED', 'timers'],
  ['UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', 'search attribute upserts'],
] as const;

/** One workflow run's event counts. */
export interface HistoryCounts {
  id: string;
  label: string;
  workflowId: string;
  runId: string | undefined;
  /** How many calls this history serves (a session serves several). */
  calls: number;
  totalEvents: number;
  /** Every event type present, by its short name (`WORKFLOW_TASK_COMPLETED`). */
  counts: Record<string, number>;
}

const eventTypeNames = temporal.api.enums.v1.EventType;

/** Fetches a run's history (the latest run when no run id is given) and counts its events by type. */
export async function countHistory(input: {
  temporal: Client;
  id: string;
  label: string;
  workflowId: string;
  runId?: string;
  calls?: number;
}): Promise<HistoryCounts> {
  const handle = input.temporal.workflow.getHandle(input.workflowId, input.runId);
  const history = await handle.fetchHistory();
  const counts: Record<string, number> = {};
  const events = history.events ?? [];
  for (const event of events) {
    const name = (eventTypeNames[event.eventType ?? 0] ?? `TYPE_${String(event.eventType)}`).replace(
      /^EVENT_TYPE_/,
      '',
    );
    counts[name] = (counts[name] ?? 0) + 1;
  }
  const runId = input.runId ?? (await handle.describe()).runId;
  return {
    id: input.id,
    label: input.label,
    workflowId: input.workflowId,
    runId,
    calls: input.calls ?? 1,
    totalEvents: events.length,
    counts,
  };
}
