import { beyondApprovalMessage, policyLimitMessage } from '../shared/model-messages';
import type { AnyToolContract } from '../tools/define-tool';
import type { RiskLevel } from '../tools/risk-levels';
import { riskRank } from '../tools/risk-levels';
import type { CallerPolicy } from './policy-schema';

/** The policy's answer for one validated call: allowed at a risk level (maybe with approval), or refused. */
export type PolicyVerdict =
  | { ok: true; riskLevel: RiskLevel; needsApproval: boolean }
  | {
      ok: false;
      code: 'POLICY_LIMIT' | 'PERMISSION_DENIED';
      riskLevel: RiskLevel;
      message: string;
      data: Record<string, unknown>;
    };

/** True when the caller's allowlist names the tool. */
export function isToolAllowed(input: { callerPolicy: CallerPolicy | null; tool: string }): boolean {
  return input.callerPolicy?.tools.includes(input.tool) ?? false;
}

/**
 * Classifies a validated call and applies the caller's policy, in docs/design.md's order: per-tool
 * limits, then the highest level this caller may have approved, then autonomy. Pure.
 */
export function evaluatePolicy(input: {
  contract: AnyToolContract;
  args: Record<string, unknown>;
  caller: string;
  callerPolicy: CallerPolicy;
}): PolicyVerdict {
  const { contract, args, caller, callerPolicy } = input;
  const riskLevel = contract.risk({ args });
  const limits = callerPolicy.limits?.[contract.name] ?? {};
  for (const [field, limit] of Object.entries(limits)) {
    const value = args[field];
    if (typeof value !== 'number') continue;
    const over = limit.max !== undefined && value > limit.max;
    const under = limit.min !== undefined && value < limit.min;
    if (over || under) {
      const bound = over
        ? `above this caller's limit of ${limit.max}`
        : `below this caller's minimum of ${limit.min}`;
      return {
        ok: false,
        code: 'POLICY_LIMIT',
        riskLevel,
        message: policyLimitMessage({ tool: contract.name, field, value, bound }),
        data: { field, value, ...limit },
      };
    }
  }
  const needsApproval = riskRank(riskLevel) > riskRank(callerPolicy.autonomy);
  if (!needsApproval) return { ok: true, riskLevel, needsApproval };
  const ceiling = callerPolicy.approval?.ceiling ?? null;
  if (ceiling === null || riskRank(riskLevel) > riskRank(ceiling)) {
    const reason =
      ceiling === null
        ? `no human approval is configured for ${caller}`
        : `approvals for ${caller} go up to "${ceiling}" only`;
    return {
      ok: false,
      code: 'PERMISSION_DENIED',
      riskLevel,
      message: beyondApprovalMessage({
        tool: contract.name,
        riskLevel,
        caller,
        autonomy: callerPolicy.autonomy,
        reason,
      }),
      data: { riskLevel, autonomy: callerPolicy.autonomy },
    };
  }
  return { ok: true, riskLevel, needsApproval };
}
