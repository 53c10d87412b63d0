import {
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ControlsActivities } from './activities';
import type { ControlsView, DisabledSwitch, SignedSwitchChange, SwitchReceipt } from './protocol';
import { controlsQuery, setSwitchUpdate } from './protocol';
import { refuse, refuseIf } from '../shared/refusal';

/**
 * What the controls carry across continue-as-new: the change ids seen (so a change sent again is still
 * refused). The switches, and the ids of the changes attempted lately, are rebuilt from the audit
 * store at every run's start: a run started anew after a terminate refuses a replayed change too.
 */
export interface ControlsInput {
  carried?: { seen: string[] };
  /** Continue as new after this many accepted changes in one run (default 500), besides Temporal's suggestion. */
  continueAsNewAfter?: number;
}

const maxNameLength = 200;
const maxReasonLength = 500;
/** A change signed longer ago (or further ahead) than this is refused: a captured change cannot be sent days later. */
const changeFreshnessMs = 10 * 60 * 1000;
/** Change ids remembered (a replayed change is refused); older ones fall out, and their freshness window with them. */
const seenKept = 2000;

const checks = proxyLocalActivities<ControlsActivities>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 3, initialInterval: '200ms' },
});
const waitingCalls = proxyActivities<ControlsActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '30s',
  retry: { maximumAttempts: 3, initialInterval: '1s' },
});

/**
 * The kill switch of a task queue (`toolgate-controls:<queue>`): which tools are off, for everyone or
 * one caller. A change is an operator's signed `tool-switch`: the validator refuses what is malformed,
 * stale or replayed before it reaches history; the handler asks the worker's current policy whether an
 * operator signed it (one recorded local activity, which also audits the attempt), applies it, and on a
 * disable tells the calls waiting for approval of that tool, which close `TOOL_DISABLED`. Calls read
 * the switches through `controlsQuery` when they are evaluated and before an approved call executes.
 */
export async function toolgateControls(input: ControlsInput = {}): Promise<void> {
  const switches = new ToolSwitches(Array.isArray(input.carried?.seen) ? input.carried.seen : []);

  setHandler(controlsQuery, () => switches.view());
  setHandler(setSwitchUpdate, (signed) => switches.change(signed), {
    validator: (signed: SignedSwitchChange) => switches.validate(signed),
  });

  // A change issued longer ago than its freshness is refused as stale: its id need not be remembered.
  switches.restore(
    await checks.restoreSwitches({ since: new Date(Date.now() - 2 * changeFreshnessMs).toISOString() }),
  );

  const limit = input.continueAsNewAfter ?? 500;
  await condition(() => switches.accepted >= limit || workflowInfo().continueAsNewSuggested);
  await condition(allHandlersFinished);
  await continueAsNew<typeof toolgateControls>({
    carried: { seen: switches.carried() },
    ...(input.continueAsNewAfter !== undefined ? { continueAsNewAfter: input.continueAsNewAfter } : {}),
  });
}

/** The switches of one task queue, the change ids seen, and the rules a change passes. */
class ToolSwitches {
  /** Changes accepted in this run (the workflow continues as new after its limit). */
  accepted = 0;
  private readonly disabled = new Map<string, DisabledSwitch>();
  private readonly seen: Set<string>;
  private readonly inFlight = new Set<string>();
  private restored = false;

  constructor(seen: string[]) {
    this.seen = new Set(seen);
  }

  view(): ControlsView {
    return { disabled: [...this.disabled.values()] };
  }

  /** What the audit store says is off, and the changes it saw lately: changes apply on top of it. */
  restore(state: { disabled: DisabledSwitch[]; seen: string[] }): void {
    for (const entry of state.disabled) this.disabled.set(switchKey(entry), entry);
    for (const changeId of state.seen) this.remember(changeId);
    this.restored = true;
  }

  carried(): string[] {
    return [...this.seen];
  }

  /** Applies a change an operator signed (the worker's policy says who), and tells the calls it stops. */
  async change(signed: SignedSwitchChange): Promise<SwitchReceipt> {
    const { change } = signed;
    await condition(() => this.restored);
    refuseIf(
      this.seen.has(change.changeId) || this.inFlight.has(change.changeId),
      'CHANGE_REPLAYED',
      'this change was sent already',
    );
    this.inFlight.add(change.changeId);
    try {
      const verdict = await checks.checkSwitchChange(signed);
      if (!verdict.ok) refuse(verdict.code, verdict.reason);
      this.remember(change.changeId);
      this.accepted++;
      const key = switchKey(change);
      if (change.action === 'enable') {
        this.disabled.delete(key);
        return {
          accepted: true,
          changeId: change.changeId,
          disabled: this.view().disabled,
          waitingCallsTold: 0,
        };
      }
      this.disabled.set(key, {
        tool: change.tool,
        ...(change.caller !== undefined ? { caller: change.caller } : {}),
        operator: change.operator,
        reason: change.reason,
        since: new Date().toISOString(),
        changeId: change.changeId,
      });
      const told = await waitingCalls.tellWaitingCalls({
        tool: change.tool,
        ...(change.caller !== undefined ? { caller: change.caller } : {}),
      });
      return {
        accepted: true,
        changeId: change.changeId,
        disabled: this.view().disabled,
        waitingCallsTold: told,
      };
    } finally {
      this.inFlight.delete(change.changeId);
    }
  }

  /** Refuses what is malformed, stale or replayed before it reaches history. */
  validate(signed: SignedSwitchChange): void {
    const change = signed?.change as Partial<SignedSwitchChange['change']> | undefined;
    const text = (value: unknown, max: number): boolean =>
      typeof value === 'string' && value.trim() !== '' && value.length <= max;
    refuseIf(
      !change ||
        typeof signed.signature !== 'string' ||
        !text(change.changeId, maxNameLength) ||
        (change.action !== 'disable' && change.action !== 'enable') ||
        !text(change.tool, maxNameLength) ||
        (change.caller !== undefined && !text(change.caller, maxNameLength)) ||
        !text(change.operator, maxNameLength) ||
        !text(change.reason, maxReasonLength) ||
        typeof change.issuedAt !== 'string',
      'SWITCH_INVALID',
      `a change names its id, action (disable or enable), tool, operator, a reason of at most ${maxReasonLength} characters and when it was issued, and is signed`,
    );
    const issuedAtMs = Date.parse(change!.issuedAt!);
    refuseIf(
      Number.isNaN(issuedAtMs) || Math.abs(Date.now() - issuedAtMs) > changeFreshnessMs,
      'SWITCH_INVALID',
      'the change was issued more than 10 minutes from now: sign it again',
    );
    refuseIf(this.seen.has(change!.changeId!), 'CHANGE_REPLAYED', 'this change was sent already');
  }

  private remember(changeId: string): void {
    this.seen.add(changeId);
    while (this.seen.size > seenKept) this.seen.delete(this.seen.values().next().value as string);
  }
}

function switchKey(entry: { tool: string; caller?: string }): string {
  return JSON.stringify([entry.tool, entry.caller ?? null]);
}
