import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/*
 * The kill switch (docs/design.md step 1): an operator disables a tool for everyone, or for one caller,
 * fleet-wide and durably. The state lives in one workflow per task queue, `toolgate-controls:<queue>`;
 * every change is signed by an operator of the policy (kind `tool-switch`), checked by the worker
 * against its policy, and audited.
 */

/** The controls workflow's type. */
export const controlsWorkflowType = 'toolgateControls';

/** The controls workflow of a task queue: one per deployment's queue. */
export function controlsWorkflowId(taskQueue: string): string {
  return `toolgate-controls:${taskQueue}`;
}

/** What an operator signs to flip a switch (kind `tool-switch`). */
export interface SwitchChange {
  /** A fresh id (UUID): a change counts once, and keys its audit event. */
  changeId: string;
  action: 'disable' | 'enable';
  tool: string;
  /** One caller only; absent: every caller. */
  caller?: string;
  operator: string;
  reason: string;
  issuedAt: string;
}

/** A change with its Ed25519 signature (base64url) by the operator's key. */
export interface SignedSwitchChange {
  change: SwitchChange;
  signature: string;
}

/** A switch that is off: who turned it off, when and why. */
export interface DisabledSwitch {
  tool: string;
  /** Absent: every caller. */
  caller?: string;
  operator: string;
  reason: string;
  since: string;
  changeId: string;
}

/** What the controls workflow holds. */
export interface ControlsView {
  disabled: DisabledSwitch[];
}

/** What an operator learns when a change is accepted (a refused one fails the update with its code). */
export interface SwitchReceipt {
  accepted: true;
  changeId: string;
  /** Every switch that is off after the change. */
  disabled: DisabledSwitch[];
  /** Calls waiting for approval of the tool that were told to close (a disable only). */
  waitingCallsTold: number;
}

/** One kill-switch change attempt, as the audit store keeps it, accepted or refused. */
export interface ControlEvent {
  changeId: string;
  action: 'disable' | 'enable';
  tool: string;
  caller?: string;
  operator: string;
  reason: string;
  issuedAt: string;
  /** `accepted`, or the refusal's code. */
  outcome: string;
  /** Set by the audit store when read back (its clock). */
  recordedAt?: string;
}

/** Flips a switch; its validator and handler refuse with `switchRefusalCodes`. */
export const setSwitchUpdate = defineUpdate<SwitchReceipt, [SignedSwitchChange]>('setSwitch');

/** The switches that are off now. */
export const controlsQuery = defineQuery<ControlsView>('controls');

/** Tells a call waiting for approval that its tool's switch changed: a wake-up, it reads the switch itself. */
export const toolSwitchSignal = defineSignal('toolSwitchChanged');

/** The switch that stops `caller`'s calls of `tool`, if any: one for that caller, else one for everyone. */
export function disabledSwitchFor(
  view: ControlsView | undefined,
  input: { tool: string; caller: string },
): DisabledSwitch | undefined {
  const matching = (view?.disabled ?? []).filter((entry) => entry.tool === input.tool);
  return (
    matching.find((entry) => entry.caller === input.caller) ??
    matching.find((entry) => entry.caller === undefined)
  );
}

/** What a `TOOL_DISABLED` result tells: which switch, who turned it off, since when and why. */
export function disabledData(off: DisabledSwitch): Record<string, unknown> {
  return {
    tool: off.tool,
    ...(off.caller !== undefined ? { caller: off.caller } : {}),
    disabledBy: off.operator,
    reason: off.reason,
    since: off.since,
  };
}
