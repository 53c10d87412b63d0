import { describe, expect, it } from 'vitest';
import type { AuditRecord } from '../audit/audit-store';
import { approvalOutcomeOf } from './approval-outcome';
import { buildAuditReport, sessionsToFollow } from './audit-report';

let sequence = 0;

/** A planted record: `minute` is when its call started, minutes after 10:00 UTC. */
function record(input: {
  session: string;
  tool: string;
  code: string;
  minute: number;
  callId?: string;
  runId?: string;
  finishedMinute?: number;
  decisions?: AuditRecord['decisions'];
}): AuditRecord {
  sequence++;
  const at = (minute: number) => new Date(Date.UTC(2025, 0, 31, 10, minute)).toISOString();
  const ok = input.code === 'OK';
  return {
    callId: input.callId ?? `tc-${sequence}`,
    runId: input.runId ?? `run-${sequence}`,
    session: input.session,
    caller: 'support-bot',
    tool: input.tool,
    rawArguments: '{}',
    code: input.code,
    ok,
    effect: 'none',
    result: { ok, tool: input.tool, code: input.code, message: '', effect: 'none', callId: 'x' },
    ...(input.decisions ? { decisions: input.decisions } : {}),
    startedAt: at(input.minute),
    finishedAt: at(input.finishedMinute ?? input.minute),
    durationMs: 0,
  };
}

const decision = (decision: 'approve' | 'deny', minute: number) => ({
  approver: 'alice',
  decision,
  reason: 'r',
  round: 1,
  outcome: 'accepted',
  at: new Date(Date.UTC(2025, 0, 31, 10, minute)).toISOString(),
});

describe('the audit report', () => {
  it('gives each tool its rejection rate, split by code, most rejected first', () => {
    const records = [
      record({ session: 's1', tool: 'get_order', code: 'OK', minute: 0 }),
      record({ session: 's1', tool: 'refund_order', code: 'INVALID_ARGUMENTS', minute: 1 }),
      record({ session: 's1', tool: 'refund_order', code: 'INVALID_ARGUMENTS', minute: 2 }),
      record({ session: 's1', tool: 'refund_order', code: 'ORDER_NOT_FOUND', minute: 3 }),
      record({ session: 's1', tool: 'refund_order', code: 'OK', minute: 4 }),
    ];
    const report = buildAuditReport({ since: 'a', until: 'b', records, sessionRecords: new Map() });
    expect(report.totals).toEqual({ calls: 5, rejected: 3, rejectionRate: 0.6 });
    expect(report.tools).toEqual([
      {
        tool: 'refund_order',
        calls: 4,
        rejected: 3,
        rejectionRate: 0.75,
        codes: [
          { code: 'INVALID_ARGUMENTS', count: 2, rate: 0.5 },
          { code: 'ORDER_NOT_FOUND', count: 1, rate: 0.25 },
        ],
      },
      { tool: 'get_order', calls: 1, rejected: 0, rejectionRate: 0, codes: [] },
    ]);
  });

  it('counts a recovery when the next call of the session succeeds, even one recorded after the window', () => {
    const inWindow = [
      // s1: rejected, then rejected again, then succeeded.
      record({ session: 's1', tool: 'refund_order', code: 'INVALID_ARGUMENTS', minute: 1 }),
      record({ session: 's1', tool: 'refund_order', code: 'INVALID_ARGUMENTS', minute: 2 }),
      record({ session: 's1', tool: 'refund_order', code: 'OK', minute: 3 }),
      // s2: rejected, and its next call waited for approval and was recorded after the window.
      record({ session: 's2', tool: 'refund_order', code: 'INVALID_ARGUMENTS', minute: 5 }),
      // s3: rejected, then nothing.
      record({ session: 's3', tool: 'refund_order', code: 'INVALID_ARGUMENTS', minute: 7 }),
    ];
    const later = record({ session: 's2', tool: 'refund_order', code: 'OK', minute: 6, finishedMinute: 90 });
    expect(sessionsToFollow(inWindow)).toEqual(['s1', 's2', 's3']);
    const sessionRecords = new Map([
      ['s1', inWindow.slice(0, 3)],
      ['s2', [inWindow[3]!, later]],
      ['s3', [inWindow[4]!]],
    ]);
    const report = buildAuditReport({ since: 'a', until: 'b', records: inWindow, sessionRecords });
    expect(report.recovery).toEqual({
      invalidArguments: 4,
      recovered: 2,
      notRecovered: 1,
      noNextCall: 1,
      rate: 2 / 3,
    });
  });

  it('orders a session by when its calls started, not when they finished', () => {
    const invalid = record({ session: 's1', tool: 'refund_order', code: 'INVALID_ARGUMENTS', minute: 1 });
    // Started before the rejection, finished after it (it waited for approval): not its next call.
    const earlier = record({
      session: 's1',
      tool: 'refund_order',
      code: 'OK',
      minute: 0,
      finishedMinute: 30,
    });
    const next = record({ session: 's1', tool: 'get_order', code: 'ORDER_NOT_FOUND', minute: 2 });
    const report = buildAuditReport({
      since: 'a',
      until: 'b',
      records: [invalid, next, earlier],
      sessionRecords: new Map([['s1', [invalid, next, earlier]]]),
    });
    expect(report.recovery).toMatchObject({ recovered: 0, notRecovered: 1 });
  });

  it('splits approvals into approved, denied, expired, cancelled and granted with the time to each', () => {
    const records = [
      record({
        session: 's',
        tool: 'refund_order',
        code: 'OK',
        minute: 0,
        decisions: [decision('approve', 2)],
      }),
      record({
        session: 's',
        tool: 'refund_order',
        code: 'OK',
        minute: 0,
        decisions: [decision('approve', 4)],
      }),
      record({
        session: 's',
        tool: 'refund_order',
        code: 'APPROVAL_DENIED',
        minute: 0,
        decisions: [decision('deny', 10)],
      }),
      record({ session: 's', tool: 'refund_order', code: 'APPROVAL_EXPIRED', minute: 0, finishedMinute: 60 }),
      record({ session: 's', tool: 'get_order', code: 'OK', minute: 0 }),
      // Cancelled after one of two approvals: cancelled, not approved; closed by the kill switch: neither.
      record({
        session: 's',
        tool: 'refund_order',
        code: 'APPROVAL_CANCELLED',
        minute: 0,
        finishedMinute: 5,
        decisions: [decision('approve', 3)],
      }),
      record({
        session: 's',
        tool: 'refund_order',
        code: 'TOOL_DISABLED',
        minute: 0,
        finishedMinute: 7,
        decisions: [decision('approve', 6)],
      }),
      // Covered by a standing grant: granted, no human asked, no time waited.
      {
        ...record({ session: 's', tool: 'refund_order', code: 'OK', minute: 0, finishedMinute: 1 }),
        grant: { grantId: 'g-1', approvers: ['alice'] },
      },
    ];
    const report = buildAuditReport({ since: 'a', until: 'b', records, sessionRecords: new Map() });
    expect(report.approvals).toEqual({
      approved: { count: 2, medianSeconds: 120, p90Seconds: 240, maxSeconds: 240 },
      denied: { count: 1, medianSeconds: 600, p90Seconds: 600, maxSeconds: 600 },
      expired: { count: 1, medianSeconds: 3600, p90Seconds: 3600, maxSeconds: 3600 },
      cancelled: { count: 1, medianSeconds: 300, p90Seconds: 300, maxSeconds: 300 },
      granted: { count: 1, medianSeconds: 0, p90Seconds: 0, maxSeconds: 0 },
    });
    expect(approvalOutcomeOf(records[4]!)).toBeUndefined();
    expect(approvalOutcomeOf(records[6]!)).toBeUndefined();
  });

  it('shows loop guards and calls that ran more than once', () => {
    const records = [
      record({ session: 's', tool: 'get_order', code: 'OK', minute: 0, callId: 'tc-read', runId: 'r1' }),
      record({ session: 's', tool: 'get_order', code: 'OK', minute: 1, callId: 'tc-read', runId: 'r2' }),
      record({
        session: 's',
        tool: 'get_order',
        code: 'LOOP_DETECTED',
        minute: 2,
        callId: 'tc-read',
        runId: 'admission:p3',
      }),
    ];
    const report = buildAuditReport({ since: 'a', until: 'b', records, sessionRecords: new Map() });
    expect(report.repeats).toEqual({ loopDetected: 1, callsRunMoreThanOnce: 1 });
  });
});
