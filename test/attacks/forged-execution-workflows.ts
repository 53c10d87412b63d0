// The tests' workflows plus one that no deployment has: a workflow that asks the worker's executor
// to run a write with whatever approval it is handed, as a compromised or buggy workflow could.
// The minter, not the workflow, is what must refuse it.
import { proxyActivities } from '@temporalio/workflow';
import type { ExecutionInput, ToolCallActivities } from '../../src/activities/tool-call-activities';

export { toolCall, toolSession } from '../../src/workflows/index';

const { executeToolCall } = proxyActivities<ToolCallActivities>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 1 },
});

/** What the executor did with a forged execution: ran it, or failed with this type (e.g. `PERMISSION_DENIED`). */
export type ForgedExecutionOutcome = { ok: true } | { ok: false; type: string; message: string };

/** Runs `executeToolCall` once with the given input, approval included, and reports how it ended. */
export async function forgedExecution(input: ExecutionInput): Promise<ForgedExecutionOutcome> {
  try {
    await executeToolCall(input);
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
