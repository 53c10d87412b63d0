import { condition, log, proxyLocalActivities } from '@temporalio/workflow';
import type { ControlsActivities } from '../controls/activities';
import type { DisabledSwitch } from '../controls/protocol';
import { disabledData } from '../controls/protocol';
import { toolDisabledMessage } from '../shared/model-messages';
import type { ToolResult } from '../shared/tool-result';
import type { CallRun } from './workflow-run';

/** How often a waiting call reads its kill switch when told it changed (then only before execution). */
const maxSwitchReads = 20;

/**
 * A call's kill switch while it waits for approval: the controls' signal is a wake-up only, the
 * switch itself is read by a recorded local activity. The check before execution is the tool's
 * activity's own.
 */
export class ToolSwitchWatch {
  /** Set when the switch, read after the controls told the call, turned its tool off while it waited. */
  disabled?: DisabledSwitch;
  private wakeUps = 0;

  constructor(private readonly call: CallRun) {}

  /** The controls' signal: the switch changed, read it (never trusted as its value). */
  wakeUp(): void {
    this.wakeUps++;
  }

  /** Why the call stops waiting, when its tool was turned off. */
  interruption(): string | undefined {
    const off = this.disabled;
    return off ? `${off.tool} was turned off by operator ${off.operator}` : undefined;
  }

  /**
   * While the call waits for approval: at each wake-up, reads the switch and stops the wait when it is
   * off. At most `maxSwitchReads` reads, so a flood of signals cannot grow the history without bound.
   */
  async watch(tool: string): Promise<void> {
    const { state } = this.call;
    let seen = 0;
    try {
      for (let reads = 0; reads < maxSwitchReads; reads++) {
        await condition(
          () =>
            state.result !== undefined ||
            state.stage === 'executing' ||
            (this.wakeUps > seen && state.stage === 'awaiting-approval'),
        );
        if (state.result !== undefined || state.stage === 'executing') return;
        seen = this.wakeUps;
        const off = await this.read(tool);
        if (off) {
          this.disabled = off;
          return;
        }
      }
    } catch (error) {
      // The switch could not be read now: the call reads it again before it executes.
      log.warn('the kill switch could not be read while the call waited', {
        callId: this.call.callId,
        error: String(error),
      });
    }
  }

  /** `TOOL_DISABLED`, with who turned the tool off, when and why. */
  disabledResult(off: DisabledSwitch): ToolResult {
    return this.call.reject({
      code: 'TOOL_DISABLED',
      message: toolDisabledMessage({ tool: off.tool, reason: off.reason, since: off.since }),
      data: disabledData(off),
    });
  }

  /** The switch that stops this call now, or undefined; a switch that cannot be read throws. */
  private async read(tool: string): Promise<DisabledSwitch | undefined> {
    const off = await proxyLocalActivities<ControlsActivities>({
      startToCloseTimeout: '10s',
      retry: { maximumAttempts: 5, initialInterval: '200ms' },
    }).currentToolSwitch({ tool, caller: this.call.proposal.caller });
    return off ?? undefined;
  }
}
