import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { readControls } from './activities';
import { signValue } from '../keys/key-files';
import type { ControlsView, SwitchChange, SwitchReceipt } from './protocol';
import { controlsWorkflowId, controlsWorkflowType, setSwitchUpdate } from './protocol';
import { defaultTaskQueue } from '../shared/temporal';

/** A switch change the controls refused, with its code (see `switchRefusalCodes`) and why; nothing changed. */
export type SwitchRefusal = { accepted: false; code: string; message: string };

/**
 * Turns a tool off (`disable`) or on again (`enable`), for every caller or one, on the task queue's
 * workers: signed with the operator's key, checked by the workers against their policy, audited, and
 * durable (the controls workflow holds it). A disable stops new calls at once (`TOOL_DISABLED`) and
 * closes the calls of that tool waiting for approval; `waitingCallsTold` says how many were told.
 */
export async function setToolSwitch(input: {
  client: Client;
  taskQueue?: string;
  action: 'disable' | 'enable';
  tool: string;
  caller?: string;
  operator: string;
  operatorKey: KeyObject;
  reason: string;
  now?: () => Date;
}): Promise<SwitchReceipt | SwitchRefusal> {
  const taskQueue = input.taskQueue ?? defaultTaskQueue;
  const change: SwitchChange = {
    changeId: randomUUID(),
    action: input.action,
    tool: input.tool,
    ...(input.caller !== undefined ? { caller: input.caller } : {}),
    operator: input.operator,
    reason: input.reason.trim(),
    issuedAt: (input.now?.() ?? new Date()).toISOString(),
  };
  const signature = signValue({ kind: 'tool-switch', value: change, privateKey: input.operatorKey });
  try {
    return await input.client.workflow.executeUpdateWithStart(setSwitchUpdate, {
      args: [{ change, signature }],
      updateId: change.changeId,
      startWorkflowOperation: new WithStartWorkflowOperation(controlsWorkflowType, {
        workflowId: controlsWorkflowId(taskQueue),
        taskQueue,
        args: [{}],
        workflowIdConflictPolicy: 'USE_EXISTING',
        staticSummary: 'kill switch: tools turned off by operators',
      }),
    });
  } catch (error) {
    const cause = (error as { cause?: { type?: string; message?: string } }).cause;
    if (!cause?.type) throw error;
    return { accepted: false, code: cause.type, message: cause.message ?? cause.type };
  }
}

/** The switches that are off on a task queue (none when no switch was ever flipped). */
export function listToolSwitches(input: { client: Client; taskQueue?: string }): Promise<ControlsView> {
  return readControls({ client: input.client, taskQueue: input.taskQueue ?? defaultTaskQueue });
}
