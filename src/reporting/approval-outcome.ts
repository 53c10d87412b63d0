// How an audit record's approval ended, read from the record alone: what the worker's metrics count
// and what `toolgate report` summarises. Pure: no I/O, no clock.
import type { AuditRecord } from '../audit/audit-store';

/**
 * How a call's approval ended: approved (the quorum was reached), denied, expired, cancelled (by
 * its caller's harness or an operator, whatever approvals it had), or granted (a standing grant
 * covered it: no human was asked, no time waited).
 */
export type ApprovalOutcome = 'approved' | 'denied' | 'expired' | 'cancelled' | 'granted';

/** The approval outcomes, in the order reports list them. */
export const approvalOutcomes: readonly ApprovalOutcome[] = [
  'approved',
  'denied',
  'expired',
  'cancelled',
  'granted',
];

/**
 * A record's approval outcome and the time to it: from the run's start (when the round opened, give
 * or take its business checks) to the decision that ended it (the last approval, the denial) or to
 * the expiry. `undefined` for a call that never waited for a human (a read, an autonomous write, a
 * refusal before step 7); `granted`, at 0 seconds, for a call a standing grant covered.
 */
export function approvalOutcomeOf(
  record: Pick<AuditRecord, 'code' | 'decisions' | 'startedAt' | 'finishedAt' | 'grant'>,
): { outcome: ApprovalOutcome; seconds: number } | undefined {
  if (record.grant) return { outcome: 'granted', seconds: 0 };
  const decisions = record.decisions ?? [];
  const started = Date.parse(record.startedAt);
  const secondsUntil = (at: string | undefined): number => {
    const ended = Date.parse(at ?? record.finishedAt);
    return Number.isFinite(ended - started) ? Math.max(0, (ended - started) / 1000) : 0;
  };
  const last = (decision: 'approve' | 'deny') =>
    decisions.filter((taken) => taken.decision === decision && taken.outcome === 'accepted').at(-1);
  if (record.code === 'APPROVAL_DENIED')
    return { outcome: 'denied', seconds: secondsUntil(last('deny')?.at) };
  if (record.code === 'APPROVAL_EXPIRED') return { outcome: 'expired', seconds: secondsUntil(undefined) };
  if (record.code === 'APPROVAL_CANCELLED') return { outcome: 'cancelled', seconds: secondsUntil(undefined) };
  // Closed by the kill switch while it waited: whatever approvals it had, it was never approved to run.
  if (record.code === 'TOOL_DISABLED') return undefined;
  const approval = last('approve');
  if (!approval) return undefined;
  return { outcome: 'approved', seconds: secondsUntil(approval.at) };
}
