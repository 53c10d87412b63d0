import { describe, expect, it } from 'vitest';
import type { AuditRecord } from '../audit/audit-store';
import { rememberedDenial } from './denial-memory';

const args = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };

function denied(overrides: Partial<AuditRecord> & { data?: Record<string, unknown> } = {}): AuditRecord {
  const { data, ...rest } = overrides;
  const callId = rest.callId ?? 'tc-refund_order-1';
  return {
    callId,
    runId: 'run-1',
    session: 's',
    caller: 'support-bot',
    tool: 'refund_order',
    rawArguments: JSON.stringify(args),
    validatedArguments: args,
    code: 'APPROVAL_DENIED',
    ok: false,
    effect: 'none',
    result: {
      ok: false,
      tool: 'refund_order',
      code: 'APPROVAL_DENIED',
      message: 'denied',
      effect: 'none',
      callId,
      data: data ?? { approver: 'alice', reason: 'no' },
    },
    startedAt: '2026-12-07T10:00:00.000Z',
    finishedAt: '2026-12-07T10:00:05.000Z',
    durationMs: 5000,
    ...rest,
  };
}

describe('rememberedDenial', () => {
  it('finds a denial of the same arguments, whatever their key order', () => {
    const reordered = { reason: 'damaged', currency: 'BRL', amount_cents: 2590, order_id: 'ORD-1001' };
    expect(rememberedDenial({ records: [denied()], args: reordered })).toEqual({
      approver: 'alice',
      reason: 'no',
      deniedCallId: 'tc-refund_order-1',
      deniedAt: '2026-12-07T10:00:05.000Z',
    });
  });

  it('remembers nothing for other arguments, unvalidated records, or records of no approver', () => {
    expect(rememberedDenial({ records: [denied()], args: { ...args, amount_cents: 2000 } })).toBeUndefined();
    const { validatedArguments: _unvalidated, ...noArguments } = denied();
    expect(rememberedDenial({ records: [noArguments], args })).toBeUndefined();
    expect(rememberedDenial({ records: [denied({ data: { reason: 'no' } })], args })).toBeUndefined();
    expect(rememberedDenial({ records: [denied({ code: 'APPROVAL_EXPIRED' })], args })).toBeUndefined();
  });

  it('names the first denial through a chain of denials met again, and prefers the newest', () => {
    const first = denied({ data: { approver: 'alice', reason: 'no' } });
    const metAgain = denied({
      runId: 'run-2',
      data: {
        approver: 'alice',
        reason: 'no',
        deniedCallId: 'tc-refund_order-1',
        deniedAt: '2026-12-07T10:00:05.000Z',
      },
    });
    const later = denied({ callId: 'tc-refund_order-2', data: { approver: 'bob', reason: 'still no' } });
    expect(rememberedDenial({ records: [first, metAgain], args })).toMatchObject({
      deniedCallId: 'tc-refund_order-1',
      deniedAt: '2026-12-07T10:00:05.000Z',
    });
    expect(rememberedDenial({ records: [first, metAgain, later], args })).toMatchObject({
      approver: 'bob',
      deniedCallId: 'tc-refund_order-2',
    });
  });
});
