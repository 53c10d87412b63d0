// A workflow that no deployment has: it asks a toolgate worker's executor to run a write with
// whatever approval it is handed, as a compromised or buggy workflow in the same namespace could.
// It runs on a worker of its own and sends the activity to the toolgate worker's task queue.
// The minter, not the workflow, is what must refuse it.
import { proxyActivities } from '@temporalio/workflow';
import type { ExecutionInput, ToolCallActivities } from 'toolgate/protocol';

/** What the executor did with a forged execution: ran it, or failed with this type (e.g. `PERMISSION_DENIED`). */
export type ForgedExecutionOutcome = { ok: true } | { ok: false; type: string; message: string };

/**
 * Runs `executeToolCall` once on the toolgate worker's task queue with the given input, approval
 * included, and reports how it ended.
 */
export async function forgedExecution(input: {
  executorTaskQueue: string;
  execution: ExecutionInput;
}): Promise<ForgedExecutionOutcome> {
  const { executeToolCall } = proxyActivities<ToolCallActivities>({
    taskQueue: input.executorTaskQueue,
    startToCloseTimeout: '10s',
    retry: { maximumAttempts: 1 },
  });
  try {
    await executeToolCall(input.execution);
    return { ok: true };
  } catch (error) {
    // An activity's failure arrives as an ActivityFailure whose cause carries the type.
    const cause = (error as { cause?: { type?: unknown; message?: unknown } }).cause;
    return {
      ok: false,
      type: typeof cause?.type === 'string' ? cause.type : 'UNKNOWN',
      message: typeof cause?.message === 'string' ? cause.message : String(error),
    };
  }
}
