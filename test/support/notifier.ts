import { expect } from 'vitest';
import type { ToolGateHarness } from './toolgate-harness';

/** The workflow a call's run started to deliver its notifications, found in that run's history. */
export async function notifierOf(harness: ToolGateHarness, callId: string, runId?: string) {
  const history = await harness.temporal.workflow.getHandle(callId, runId).fetchHistory();
  const started = history.events
    ?.map((event) => event.startChildWorkflowExecutionInitiatedEventAttributes)
    .find((attributes) => attributes);
  expect(started?.workflowType?.name).toBe('toolgateApprovalNotifications');
  return harness.temporal.workflow.getHandle(String(started?.workflowId));
}

/** Waits until a call's notifier finished: once the call closed and every delivery is done. */
export async function deliveriesDone(
  harness: ToolGateHarness,
  callId: string,
  runId?: string,
): Promise<void> {
  await (await notifierOf(harness, callId, runId)).result();
}
