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
  /**
   * Where this one run's time went, in ms (server timestamps; one sample, so it varies with load):
   * first to last event, and summed over tasks the wait for a worker (scheduled to started) and
   * the worker's time (started to completed), for workflow tasks and activity tasks.
   */
  timings: {
    totalMs: number;
    workflowTaskWaitMs: number;
    workflowTaskRunMs: number;
    activityTaskWaitMs: number;
    activityTaskRunMs: number;
  };
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
  const timings = {
    totalMs: 0,
    workflowTaskWaitMs: 0,
    workflowTaskRunMs: 0,
    activityTaskWaitMs: 0,
    activityTaskRunMs: 0,
  };
  const timeOf = new Map<number, number>();
  const at = (event: (typeof events)[number]): number =>
    Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
  const since = (eventId: unknown, now: number): number => {
    const then = timeOf.get(Number(eventId));
    return then === undefined ? 0 : now - then;
  };
  for (const event of events) {
    const name = (eventTypeNames[event.eventType ?? 0] ?? `TYPE_${String(event.eventType)}`).replace(
      /^EVENT_TYPE_/,
      '',
    );
    counts[name] = (counts[name] ?? 0) + 1;
    const now = at(event);
    timeOf.set(Number(event.eventId), now);
    const workflowTaskStarted = event.workflowTaskStartedEventAttributes;
    const workflowTaskCompleted = event.workflowTaskCompletedEventAttributes;
    const activityStarted = event.activityTaskStartedEventAttributes;
    const activityCompleted = event.activityTaskCompletedEventAttributes;
    if (workflowTaskStarted) timings.workflowTaskWaitMs += since(workflowTaskStarted.scheduledEventId, now);
    if (workflowTaskCompleted) timings.workflowTaskRunMs += since(workflowTaskCompleted.startedEventId, now);
    if (activityStarted) timings.activityTaskWaitMs += since(activityStarted.scheduledEventId, now);
    if (activityCompleted) timings.activityTaskRunMs += since(activityCompleted.startedEventId, now);
  }
  const first = events[0];
  const last = events[events.length - 1];
  if (first && last) timings.totalMs = at(last) - at(first);
  for (const key of Object.keys(timings) as (keyof typeof timings)[])
    timings[key] = Math.round(timings[key] * 10) / 10;
  const runId = input.runId ?? (await handle.describe()).runId;
  return {
    id: input.id,
    label: input.label,
    workflowId: input.workflowId,
    runId,
    calls: input.calls ?? 1,
    totalEvents: events.length,
    counts,
    timings,
  };
}
