import type { ApproverView } from '../policy/load-policy';
import { riskRank } from '../tools/risk-levels';

/*
 * What the signed-in approver may do with a call, in words, for the page: the same rules the
 * workflow applies to a signed decision (src/approvals/decision-rules.ts), shown before the approver
 * tries. Only a display: the console relays every decision and the workflow alone judges it. Pure.
 */

/** Whether the approver may decide on a call now, and what the page says about it. */
export type DecisionPermission =
  { ok: true; notes: string[] } | { ok: false; reason: string; notes: string[] };

/** What the page knows of a call's open round. */
export interface RoundForPermission {
  caller: string;
  riskLevel: string;
  approvals: readonly string[];
  quorum: number;
  state: string;
}

/**
 * Judges, in the workflow's order, whether `approver` (with `grant`, or none when the policy does not
 * name them) may decide on the round: the round is open, the grant covers its level, the approver
 * does not operate the caller, and has not approved it already. `notes` say what else applies
 * (a quorum of distinct approvers).
 */
export function decisionPermission(input: {
  approver: string;
  grant: ApproverView | undefined;
  round: RoundForPermission;
}): DecisionPermission {
  const { approver, grant, round } = input;
  const notes: string[] = [];
  if (round.quorum > 1) {
    const others = round.approvals.filter((name) => name !== approver);
    notes.push(
      `${round.riskLevel} needs ${round.quorum} distinct approvers; approved so far by ` +
        `${round.approvals.length ? round.approvals.join(', ') : 'nobody'}` +
        (others.length < round.approvals.length ? ' (you count once)' : ''),
    );
  }
  if (round.state !== 'pending')
    return { ok: false, reason: `this call is ${round.state}: nothing to decide`, notes };
  if (!grant) return { ok: false, reason: `the policy names no approver ${approver}`, notes };
  const needed = riskRank(round.riskLevel as Parameters<typeof riskRank>[0]);
  if (needed < 0 || riskRank(grant.maxLevel) < needed) {
    return {
      ok: false,
      reason: `your grant goes up to ${grant.maxLevel}; this call is ${round.riskLevel}`,
      notes,
    };
  }
  if (grant.operates.includes(round.caller)) {
    return {
      ok: false,
      reason: `you operate ${round.caller}: approving its own calls would be self-approval`,
      notes,
    };
  }
  if (round.approvals.includes(approver)) {
    return {
      ok: false,
      reason: 'you have approved this round already; another approver must add theirs',
      notes,
    };
  }
  return { ok: true, notes };
}
