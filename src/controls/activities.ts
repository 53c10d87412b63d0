import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { AuditStore } from '../audit/audit-store';
import { verifyWithNode } from '../keys/key-files';
import type { LoadedPolicy } from '../policy/load-policy';
import type { ControlsView, DisabledSwitch, SignedSwitchChange } from './protocol';
import { controlsQuery, controlsWorkflowId, disabledSwitchFor, toolSwitchSignal } from './protocol';
import { ownValue } from '../shared/own-records';
import { retryingTransient, transientQueryFailure } from '../connection/transient-retry';
import { searchAttributes, toolCallWorkflowType } from '../calls/protocol';

/** The worker's verdict on a switch change, recorded in the controls workflow's history. */
export type SwitchChangeVerdict =
  { ok: true; policyVersion: string } | { ok: false; code: string; reason: string };

/**
 * The local activities of the kill switch. The controls workflow holds no policy and no keys: it asks
 * the worker whether an operator of the current policy signed a change (and audits the attempt), and
 * tells the calls that wait for approval of a tool just disabled. The call workflow asks for the
 * switch of its tool at evaluation (in `evaluateCall`), when told, and right before executing an
 * approved call.
 */
export function createControlsActivities(dependencies: {
  policy: () => LoadedPolicy;
  /** The tools this worker runs: a switch for another name is refused (a typo would disable nothing). */
  toolNames: readonly string[];
  audit: Pick<AuditStore, 'appendControlEvent' | 'controlEvents'>;
}) {
  return {
    /**
     * What a new run of the controls starts from, rebuilt from the audit store: the switches that are
     * off (the accepted changes, in order), and the ids of the changes attempted lately, accepted or
     * not, so none of them can be sent again (a change issued before `since` is refused as stale
     * anyway). A run started anew (after a terminate, or by a raw client with a crafted input)
     * therefore holds exactly what operators signed, and refuses what was already sent.
     */
    async restoreSwitches(input: { since?: string } = {}): Promise<{
      disabled: DisabledSwitch[];
      seen: string[];
    }> {
      const disabled = new Map<string, DisabledSwitch>();
      const seen: string[] = [];
      const since = input.since !== undefined ? Date.parse(input.since) : Number.NEGATIVE_INFINITY;
      for (const event of await dependencies.audit.controlEvents()) {
        if (!(Date.parse(event.issuedAt) < since)) seen.push(event.changeId);
        if (event.outcome !== 'accepted') continue;
        const key = JSON.stringify([event.tool, event.caller ?? null]);
        if (event.action === 'enable') disabled.delete(key);
        else {
          disabled.set(key, {
            tool: event.tool,
            ...(event.caller !== undefined ? { caller: event.caller } : {}),
            operator: event.operator,
            reason: event.reason,
            since: event.recordedAt,
            changeId: event.changeId,
          });
        }
      }
      return { disabled: [...disabled.values()], seen };
    },

    /**
     * Whether an operator of the current policy signed `change` (kind `tool-switch`), for a tool this
     * worker runs and a caller of the policy; the attempt, accepted or not, is appended to the audit
     * store once under its change id.
     */
    async checkSwitchChange(input: SignedSwitchChange): Promise<SwitchChangeVerdict> {
      const { change, signature } = input;
      const policy = dependencies.policy();
      const verdict = ((): SwitchChangeVerdict => {
        const publicKeyHex = ownValue(policy.operators, change.operator);
        if (!publicKeyHex) {
          return {
            ok: false,
            code: 'OPERATOR_UNKNOWN',
            reason: `no operator "${change.operator}" in the policy`,
          };
        }
        if (!verifyWithNode({ kind: 'tool-switch', value: change, signature, publicKeyHex })) {
          return { ok: false, code: 'SIGNATURE_INVALID', reason: `not signed with ${change.operator}'s key` };
        }
        if (!dependencies.toolNames.includes(change.tool)) {
          return {
            ok: false,
            code: 'UNKNOWN_TOOL',
            reason: `no tool "${change.tool}" on this deployment; tools: ${dependencies.toolNames.join(', ')}`,
          };
        }
        if (change.caller !== undefined && !policy.callerPolicy(change.caller)) {
          return { ok: false, code: 'CALLER_UNKNOWN', reason: `no caller "${change.caller}" in the policy` };
        }
        return { ok: true, policyVersion: policy.version };
      })();
      await dependencies.audit.appendControlEvent({
        changeId: change.changeId,
        action: change.action,
        tool: change.tool,
        ...(change.caller !== undefined ? { caller: change.caller } : {}),
        operator: change.operator,
        reason: change.reason,
        issuedAt: change.issuedAt,
        outcome: verdict.ok ? 'accepted' : verdict.code,
      });
      return verdict;
    },

    /**
     * The switch that stops `caller`'s calls of `tool` now, from this task queue's controls workflow;
     * null when none is off (or no switch was ever flipped). Throws when the controls cannot be read,
     * so a call never runs on a guess.
     */
    async currentToolSwitch(input: { tool: string; caller: string }): Promise<DisabledSwitch | null> {
      const { client, info } = Context.current();
      return disabledSwitchFor(await readControls({ client, taskQueue: info.taskQueue }), input) ?? null;
    },

    /**
     * Wakes every call of this task queue that waits for approval of `tool` (of `caller` only, when
     * given), so each reads its switch and closes `TOOL_DISABLED`; lists twice, a second apart, to
     * reach calls that visibility had not indexed yet (an approved call checks once more before it
     * executes anyway). Returns how many were told.
     */
    async tellWaitingCalls(input: { tool: string; caller?: string }): Promise<number> {
      const { client, info } = Context.current();
      const quoted = (value: string) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
      const query = [
        `WorkflowType = ${quoted(toolCallWorkflowType)}`,
        `ExecutionStatus = 'Running'`,
        `TaskQueue = ${quoted(info.taskQueue)}`,
        `${searchAttributes.toolName.name} = ${quoted(input.tool)}`,
        `${searchAttributes.approvalState.name} = 'pending'`,
        ...(input.caller !== undefined ? [`${searchAttributes.caller.name} = ${quoted(input.caller)}`] : []),
      ].join(' AND ');
      const told = new Set<string>();
      for (const pass of [0, 1]) {
        if (pass > 0) await new Promise((resolve) => setTimeout(resolve, 1000));
        for await (const execution of client.workflow.list({ query })) {
          if (told.has(execution.workflowId)) continue;
          await client.workflow
            .getHandle(execution.workflowId, execution.runId)
            .signal(toolSwitchSignal)
            .catch(() => undefined); // closed meanwhile: nothing to tell
          told.add(execution.workflowId);
          Context.current().heartbeat(told.size);
        }
      }
      return told.size;
    },
  };
}

/** The switches that are off on a task queue; none when its controls workflow was never started. */
export async function readControls(input: { client: Client; taskQueue: string }): Promise<ControlsView> {
  try {
    // Asked again, briefly, while the controls that just continued as new have not run their first task.
    return await retryingTransient(
      () => input.client.workflow.getHandle(controlsWorkflowId(input.taskQueue)).query(controlsQuery),
      { failures: transientQueryFailure, forMs: 3_000 },
    );
  } catch (error) {
    if (error instanceof Error && error.name === 'WorkflowNotFoundError') return { disabled: [] };
    throw error;
  }
}

/** The kill-switch activities by name; workflows import this type only. */
export type ControlsActivities = ReturnType<typeof createControlsActivities>;
