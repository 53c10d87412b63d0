// What `toolgate report` prints: from the audit records of a window, the figures the design asks ops
// to watch (rejection rate per tool and code, recovery after INVALID_ARGUMENTS, approval outcomes,
// replays and loop guards). Pure: records in, figures out; the command reads the store.
import type { AuditRecord } from '../audit/audit-store';
import type { ApprovalOutcome } from './approval-outcome';
import { approvalOutcomeOf, approvalOutcomes } from './approval-outcome';

/** One tool's outcomes in the window: calls, rejections and how they split by code. */
export interface ToolRejections {
  tool: string;
  /** Audited outcomes: finished calls and proposals refused at admission. */
  calls: number;
  rejected: number;
  /** rejected / calls. */
  rejectionRate: number;
  /** Rejections by code, most frequent first. */
  codes: { code: string; count: number; rate: number }[];
}

/** Seconds to the decision (or expiry) of the approvals that ended one way. */
export interface DecisionTimes {
  count: number;
  medianSeconds?: number;
  p90Seconds?: number;
  maxSeconds?: number;
}

/** The report over one window of the audit store. */
export interface AuditReport {
  since: string;
  until: string;
  recordsRead: number;
  totals: { calls: number; rejected: number; rejectionRate: number };
  tools: ToolRejections[];
  /** After an INVALID_ARGUMENTS, does the session's next call succeed? */
  recovery: {
    invalidArguments: number;
    /** The session's next call succeeded. */
    recovered: number;
    /** The session's next call was rejected too. */
    notRecovered: number;
    /** The session made no call after it (yet). */
    noNextCall: number;
    /** recovered / (recovered + notRecovered); undefined when no INVALID_ARGUMENTS had a next call. */
    rate?: number;
  };
  approvals: Record<ApprovalOutcome, DecisionTimes>;
  /**
   * Replays are answered from Temporal's history and run nothing, so they write no audit record:
   * the worker's and client's `toolgate_replays_total` counts them. What the store shows of a stuck
   * agent: loop guards (LOOP_DETECTED) and calls that ran more than once (a read proposed again, a
   * write run again after a rejection).
   */
  repeats: { loopDetected: number; callsRunMoreThanOnce: number };
}

/**
 * Builds the report. `records`: the window's records; `sessionRecords`: every record of each session
 * that had an INVALID_ARGUMENTS in the window (its next call may fall after the window's end).
 */
export function buildAuditReport(input: {
  since: string;
  until: string;
  records: readonly AuditRecord[];
  sessionRecords: ReadonlyMap<string, readonly AuditRecord[]>;
}): AuditReport {
  const { records } = input;
  const byTool = new Map<string, { calls: number; codes: Map<string, number> }>();
  for (const record of records) {
    const tool = byTool.get(record.tool) ?? { calls: 0, codes: new Map<string, number>() };
    byTool.set(record.tool, tool);
    tool.calls++;
    if (!record.ok) tool.codes.set(record.code, (tool.codes.get(record.code) ?? 0) + 1);
  }
  const tools = [...byTool.entries()]
    .map(([tool, { calls, codes }]): ToolRejections => {
      const rejected = [...codes.values()].reduce((sum, count) => sum + count, 0);
      return {
        tool,
        calls,
        rejected,
        rejectionRate: ratio(rejected, calls),
        codes: [...codes.entries()]
          .map(([code, count]) => ({ code, count, rate: ratio(count, calls) }))
          .sort((a, b) => b.count - a.count || a.code.localeCompare(b.code)),
      };
    })
    .sort((a, b) => b.rejected - a.rejected || a.tool.localeCompare(b.tool));
  const rejected = records.filter((record) => !record.ok).length;
  const approvalSeconds = new Map<ApprovalOutcome, number[]>(
    approvalOutcomes.map((outcome) => [outcome, []]),
  );
  for (const record of records) {
    const approval = approvalOutcomeOf(record);
    if (approval) approvalSeconds.get(approval.outcome)!.push(approval.seconds);
  }
  const runsPerCall = new Map<string, number>();
  for (const record of records) {
    if (!record.runId.startsWith('admission:'))
      runsPerCall.set(record.callId, (runsPerCall.get(record.callId) ?? 0) + 1);
  }
  return {
    since: input.since,
    until: input.until,
    recordsRead: records.length,
    totals: { calls: records.length, rejected, rejectionRate: ratio(rejected, records.length) },
    tools,
    recovery: recoveryAfterInvalidArguments(records, input.sessionRecords),
    approvals: Object.fromEntries(
      approvalOutcomes.map((outcome) => [outcome, decisionTimes(approvalSeconds.get(outcome)!)]),
    ) as Record<ApprovalOutcome, DecisionTimes>,
    repeats: {
      loopDetected: records.filter((record) => record.code === 'LOOP_DETECTED').length,
      callsRunMoreThanOnce: [...runsPerCall.values()].filter((runs) => runs > 1).length,
    },
  };
}

/** The sessions whose records the report needs beyond the window: those with an INVALID_ARGUMENTS in it. */
export function sessionsToFollow(records: readonly AuditRecord[]): string[] {
  return [...new Set(records.filter((record) => record.code === 'INVALID_ARGUMENTS').map((r) => r.session))];
}

function recoveryAfterInvalidArguments(
  records: readonly AuditRecord[],
  sessionRecords: ReadonlyMap<string, readonly AuditRecord[]>,
): AuditReport['recovery'] {
  let recovered = 0;
  let notRecovered = 0;
  let noNextCall = 0;
  const invalid = records.filter((record) => record.code === 'INVALID_ARGUMENTS');
  for (const record of invalid) {
    // The session's calls in the order they were proposed (a call waiting for approval finishes later).
    const session = [
      ...(sessionRecords.get(record.session) ?? records.filter((r) => r.session === record.session)),
    ]
      .map((candidate, index) => ({ candidate, index }))
      .sort((a, b) => a.candidate.startedAt.localeCompare(b.candidate.startedAt) || a.index - b.index)
      .map(({ candidate }) => candidate);
    const position = session.findIndex(
      (candidate) => candidate.callId === record.callId && candidate.runId === record.runId,
    );
    const next = position >= 0 ? session[position + 1] : undefined;
    if (!next) noNextCall++;
    else if (next.ok) recovered++;
    else notRecovered++;
  }
  return {
    invalidArguments: invalid.length,
    recovered,
    notRecovered,
    noNextCall,
    ...(recovered + notRecovered > 0 ? { rate: ratio(recovered, recovered + notRecovered) } : {}),
  };
}

function decisionTimes(seconds: number[]): DecisionTimes {
  if (seconds.length === 0) return { count: 0 };
  const sorted = [...seconds].sort((a, b) => a - b);
  const at = (quantile: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil(quantile * sorted.length) - 1)]!;
  return { count: sorted.length, medianSeconds: at(0.5), p90Seconds: at(0.9), maxSeconds: sorted.at(-1)! };
}

function ratio(part: number, whole: number): number {
  return whole === 0 ? 0 : part / whole;
}
