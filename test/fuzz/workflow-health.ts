// After a fuzz run: what the Temporal server recorded about every workflow run on the campaign's
// task queue. A workflow task that fails (a throw in workflow code, a nondeterminism, a payload the
// worker could not encode) leaves a WORKFLOW_TASK_FAILED event in its run's history even when a
// retry later succeeds, and a task that keeps failing leaves its run open; both are read here.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { sessionOperationWorkflowType, toolCallWorkflowType } from 'toolgate/protocol';

const eventTypes = temporal.api.enums.v1.EventType;
const taskFailedCauses = temporal.api.enums.v1.WorkflowTaskFailedCause;

/** One WORKFLOW_TASK_FAILED event: which run, why (the server's cause) and the worker's message. */
export interface TaskFailure {
  workflowId: string;
  runId: string;
  workflowType: string;
  cause: string;
  message: string;
}

/** A run that ended otherwise than the design allows, or that is still open without reason. */
export interface UnexpectedRun {
  workflowId: string;
  runId: string;
  workflowType: string;
  status: string;
  problem: string;
}

/** What the histories say. */
export interface WorkflowHealth {
  /** Runs on the task queue, by `type status` (e.g. `toolCall FAILED`). */
  runsByTypeAndStatus: Record<string, number>;
  /** Runs of the call workflow (every run, including those still waiting for approval). */
  callRuns: number;
  taskFailures: TaskFailure[];
  /** WORKFLOW_TASK_TIMED_OUT events: a worker too slow to answer (load), not a failure of the code. */
  taskTimeouts: number;
  unexpectedRuns: UnexpectedRun[];
  /** How long visibility took to show every run closed but the waiting ones. */
  settleMs: number;
}

type Payload = temporal.api.common.v1.IPayload;

/** Decodes a plain JSON payload (toolgate uses the default converter), or undefined. */
function decoded(payload: Payload | null | undefined): unknown {
  if (!payload?.data) return undefined;
  const encoding = Buffer.from(payload.metadata?.encoding ?? new Uint8Array()).toString('utf8');
  if (encoding !== 'json/plain') return undefined;
  return JSON.parse(Buffer.from(payload.data).toString('utf8')) as unknown;
}

function isToolResult(value: unknown): value is { ok: boolean; code: string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { ok?: unknown }).ok === 'boolean' &&
    typeof (value as { code?: unknown }).code === 'string'
  );
}

async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(lanes);
}

/**
 * Waits until visibility shows exactly `openCalls` runs still open on the task queue (the calls
 * waiting for approval; sessions must have been ended), then reads every run's history. A run left
 * open that should not be is reported, not waited for past `settleTimeoutMs`.
 */
export async function inspectWorkflows(input: {
  temporal: Client;
  taskQueue: string;
  /** Call ids whose runs are waiting for approval: the only runs that may stay open. */
  waitingCallIds: ReadonlySet<string>;
  settleTimeoutMs?: number;
}): Promise<WorkflowHealth> {
  const { temporal: client, taskQueue, waitingCallIds } = input;
  const onQueue = `TaskQueue = "${taskQueue}"`;
  const started = Date.now();
  const deadline = started + (input.settleTimeoutMs ?? 30_000);
  let previousTotal = -1;
  for (;;) {
    const [open, total] = await Promise.all([
      client.workflow.count(`${onQueue} AND ExecutionStatus = "Running"`),
      client.workflow.count(onQueue),
    ]);
    // Visibility is written after the fact: settled once the open runs are the waiting ones and the total holds still.
    if (open.count === waitingCallIds.size && total.count === previousTotal) break;
    previousTotal = total.count;
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const settleMs = Date.now() - started;

  const runs: { workflowId: string; runId: string; type: string; status: string }[] = [];
  for await (const execution of client.workflow.list({ query: onQueue })) {
    runs.push({
      workflowId: execution.workflowId,
      runId: execution.runId,
      type: execution.type,
      status: execution.status.name,
    });
  }

  const runsByTypeAndStatus: Record<string, number> = {};
  const taskFailures: TaskFailure[] = [];
  const unexpectedRuns: UnexpectedRun[] = [];
  let taskTimeouts = 0;
  await eachLimited(runs, 8, async (run) => {
    const label = `${run.type} ${run.status}`;
    runsByTypeAndStatus[label] = (runsByTypeAndStatus[label] ?? 0) + 1;
    const unexpected = (problem: string): void => {
      unexpectedRuns.push({
        workflowId: run.workflowId,
        runId: run.runId,
        workflowType: run.type,
        status: run.status,
        problem,
      });
    };
    const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    for (const event of history.events ?? []) {
      const type = eventTypes[event.eventType ?? 0];
      if (type === 'EVENT_TYPE_WORKFLOW_TASK_FAILED') {
        const attributes = event.workflowTaskFailedEventAttributes;
        taskFailures.push({
          workflowId: run.workflowId,
          runId: run.runId,
          workflowType: run.type,
          cause: (taskFailedCauses[attributes?.cause ?? 0] ?? String(attributes?.cause)).replace(
            /^WORKFLOW_TASK_FAILED_CAUSE_/,
            '',
          ),
          message: attributes?.failure?.message ?? '',
        });
      } else if (type === 'EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT') {
        taskTimeouts++;
      } else if (type === 'EVENT_TYPE_WORKFLOW_EXECUTION_FAILED') {
        // A rejection: an ApplicationFailure whose type is the code and whose details are the ToolResult.
        const failure = event.workflowExecutionFailedEventAttributes?.failure;
        const detail = decoded(failure?.applicationFailureInfo?.details?.payloads?.[0]);
        const code = failure?.applicationFailureInfo?.type;
        if (!isToolResult(detail) || detail.code !== code || detail.ok) {
          unexpected(
            `failed without a ToolResult of its code (type ${String(code)}): ${failure?.message ?? ''}`,
          );
        }
      } else if (type === 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED' && run.type === toolCallWorkflowType) {
        const result = decoded(event.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0]);
        if (!isToolResult(result) || !result.ok) unexpected('completed without an ok ToolResult');
      }
    }
    switch (run.status) {
      case 'COMPLETED':
      case 'FAILED':
        if (run.type === sessionOperationWorkflowType && run.status === 'FAILED') {
          unexpected('a session operation failed');
        }
        break;
      case 'CONTINUED_AS_NEW':
        unexpected('no call or session operation continues as new');
        break;
      case 'RUNNING':
        if (run.type !== toolCallWorkflowType || !waitingCallIds.has(run.workflowId)) {
          unexpected('still open, but nothing it runs for is pending (stuck)');
        }
        break;
      default:
        unexpected(`closed as ${run.status}`);
    }
  });
  const callRuns = runs.filter((run) => run.type === toolCallWorkflowType).length;
  return { runsByTypeAndStatus, callRuns, taskFailures, taskTimeouts, unexpectedRuns, settleMs };
}
