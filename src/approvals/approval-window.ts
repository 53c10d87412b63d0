import { defaultApprovalWindowMs, durationMs } from '../shared/durations';
import { ownValue } from '../shared/own-records';
import type { RiskLevel } from '../tools/risk-levels';
import type { CallerPolicy, PolicyFile } from '../policy/policy-schema';

/** The longest an approval may wait when the policy names no `maxApprovalWindow`: toolgate's default namespace retention. */
export const defaultMaxApprovalWindow = '30d';

/** The policy's `maxApprovalWindow`, in milliseconds (its default when absent). */
export function maxApprovalWindowMs(input: { policy: Pick<PolicyFile, 'maxApprovalWindow'> }): number {
  return durationMs(input.policy.maxApprovalWindow ?? defaultMaxApprovalWindow);
}

/**
 * How long an approval of one call may wait: the shortest of the windows that apply (the tool's for
 * the level, the caller's for the level), 4h when neither is set, never above `maxApprovalWindow`.
 * Pure; with no `tools` section it is the caller's window, as before tools had windows.
 */
export function approvalWindowMs(input: {
  policy: Pick<PolicyFile, 'tools' | 'maxApprovalWindow'>;
  tool: string;
  callerPolicy: Pick<CallerPolicy, 'approval'>;
  level: RiskLevel;
}): number {
  const { policy, tool, callerPolicy, level } = input;
  const applying = [
    ownValue(policy.tools, tool)?.approvalWindows?.[level],
    callerPolicy.approval?.windows?.[level],
  ].flatMap((window) => (window === undefined ? [] : [durationMs(window)]));
  const chosen = applying.length ? Math.min(...applying) : defaultApprovalWindowMs;
  return Math.min(chosen, maxApprovalWindowMs({ policy }));
}
