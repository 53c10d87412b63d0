import { describe, expect, it } from 'vitest';
import type { RiskLevel } from '../tools/risk-levels';
import type { StandingGrant } from './protocol';
import {
  grantRefusesCall,
  grantShapeProblem,
  grantStateOf,
  grantsWorkflowId,
  revocationShapeProblem,
  revokerName,
} from './protocol';

const nowMs = Date.parse('2026-12-01T12:00:00.000Z');
const hourMs = 60 * 60 * 1000;
const expiresAtMs = nowMs + hourMs;

const grantOf = (overrides: Partial<StandingGrant> = {}): StandingGrant => ({
  grantId: '6f1c1d0e-1111-4a4a-9b9b-000000000001',
  taskQueue: 'toolgate',
  caller: 'support-bot',
  tool: 'refund_order',
  maxLevel: 'irreversible',
  maxCalls: 3,
  maxAmount: 10_000,
  maxAmountPerCall: 4_000,
  issuedAt: new Date(nowMs).toISOString(),
  expiresAt: new Date(expiresAtMs).toISOString(),
  reason: 'small damaged-goods refunds while the queue is long',
  ...overrides,
});

/** Without the amount caps: a grant that counts calls only. */
const callsOnly = (overrides: Partial<StandingGrant> = {}): StandingGrant => {
  const { maxAmount: _total, maxAmountPerCall: _each, ...grant } = grantOf(overrides);
  return grant;
};

const call = (
  overrides: Partial<{ caller: string; tool: string; riskLevel: RiskLevel; amount: number }> = {},
) => ({
  caller: 'support-bot',
  tool: 'refund_order',
  riskLevel: 'irreversible' as RiskLevel,
  amount: 2_590,
  ...overrides,
});

const refuses = (input: {
  grant?: StandingGrant;
  used?: { calls: number; amount: number };
  call?: ReturnType<typeof call> | Omit<ReturnType<typeof call>, 'amount'>;
  nowMs?: number;
}) =>
  grantRefusesCall({
    grant: input.grant ?? grantOf(),
    used: input.used ?? { calls: 0, amount: 0 },
    call: input.call ?? call(),
    nowMs: input.nowMs ?? nowMs,
  });

describe('grantRefusesCall', () => {
  it('covers a call within every bound', () => {
    expect(refuses({})).toBeUndefined();
  });

  it.each([
    ['another caller', call({ caller: 'night-bot' })],
    ['another tool', call({ tool: 'cancel_order' })],
  ])('refuses %s', (_case, other) => {
    expect(refuses({ call: other })).toBe('another caller or tool');
  });

  it('refuses at the moment it expires, and covers the millisecond before', () => {
    expect(refuses({ nowMs: expiresAtMs })).toBe('expired');
    expect(refuses({ nowMs: expiresAtMs + 1 })).toBe('expired');
    expect(refuses({ nowMs: expiresAtMs - 1 })).toBeUndefined();
  });

  it('refuses a risk level above its ceiling, and covers its ceiling and below', () => {
    expect(refuses({ call: call({ riskLevel: 'critical' }) })).toBe(
      'risk level "critical" above its ceiling',
    );
    expect(refuses({ call: call({ riskLevel: 'irreversible' }) })).toBeUndefined();
    expect(refuses({ call: call({ riskLevel: 'reversible' }) })).toBeUndefined();
    const readOnly = callsOnly({ maxLevel: 'read' });
    expect(refuses({ grant: readOnly, call: call({ riskLevel: 'reversible' }) })).toBe(
      'risk level "reversible" above its ceiling',
    );
  });

  it('refuses a risk level it does not know', () => {
    expect(refuses({ call: call({ riskLevel: 'unheard-of' as RiskLevel }) })).toBe(
      'risk level "unheard-of" above its ceiling',
    );
  });

  it('covers the last call left, and refuses once every call is used', () => {
    expect(refuses({ used: { calls: 2, amount: 0 } })).toBeUndefined();
    expect(refuses({ used: { calls: 3, amount: 0 } })).toBe('no call left');
    expect(refuses({ used: { calls: 4, amount: 0 } })).toBe('no call left');
  });

  it('refuses a call without an amount when the grant caps amounts', () => {
    const { amount: _amount, ...withoutAmount } = call();
    expect(refuses({ call: withoutAmount })).toBe('the call has no amount');
    expect(refuses({ grant: grantOf({ maxAmountPerCall: undefined }), call: withoutAmount })).toBe(
      'the call has no amount',
    );
    expect(refuses({ grant: grantOf({ maxAmount: undefined }), call: withoutAmount })).toBe(
      'the call has no amount',
    );
  });

  it('covers a call without an amount when the grant counts calls only', () => {
    const { amount: _amount, ...withoutAmount } = call();
    expect(refuses({ grant: callsOnly(), call: withoutAmount })).toBeUndefined();
  });

  it('covers exactly the per-call cap, and refuses one more', () => {
    expect(refuses({ call: call({ amount: 4_000 }) })).toBeUndefined();
    expect(refuses({ call: call({ amount: 4_001 }) })).toBe('above the per-call cap');
  });

  it('covers a call that takes exactly what is left of the total, and refuses one more', () => {
    expect(refuses({ used: { calls: 2, amount: 6_000 }, call: call({ amount: 4_000 }) })).toBeUndefined();
    expect(refuses({ used: { calls: 2, amount: 6_001 }, call: call({ amount: 4_000 }) })).toBe(
      'above what is left',
    );
    expect(
      refuses({
        grant: grantOf({ maxAmountPerCall: undefined }),
        used: { calls: 1, amount: 9_999 },
        call: call({ amount: 2 }),
      }),
    ).toBe('above what is left');
  });

  it('judges in order: the caller before the expiry, the expiry before the level, the level before the calls left', () => {
    expect(refuses({ call: call({ caller: 'night-bot', riskLevel: 'critical' }), nowMs: expiresAtMs })).toBe(
      'another caller or tool',
    );
    expect(refuses({ call: call({ riskLevel: 'critical' }), nowMs: expiresAtMs })).toBe('expired');
    expect(refuses({ call: call({ riskLevel: 'critical' }), used: { calls: 3, amount: 0 } })).toBe(
      'risk level "critical" above its ceiling',
    );
    expect(refuses({ call: call({ amount: 9_000 }), used: { calls: 3, amount: 10_000 } })).toBe(
      'no call left',
    );
    expect(refuses({ call: call({ amount: 9_000 }), used: { calls: 0, amount: 10_000 } })).toBe(
      'above the per-call cap',
    );
  });
});

describe('grantStateOf', () => {
  const stateOf = (input: { revoked?: boolean; usedCalls?: number; nowMs?: number } = {}) =>
    grantStateOf({
      grant: grantOf(),
      revoked: input.revoked ?? false,
      usedCalls: input.usedCalls ?? 0,
      nowMs: input.nowMs ?? nowMs,
    });

  it('is active while unrevoked, unexpired and with calls left', () => {
    expect(stateOf()).toBe('active');
    expect(stateOf({ usedCalls: 2, nowMs: expiresAtMs - 1 })).toBe('active');
  });

  it('is expired from the moment of its expiry', () => {
    expect(stateOf({ nowMs: expiresAtMs })).toBe('expired');
  });

  it('is used-up once its calls are taken', () => {
    expect(stateOf({ usedCalls: 3 })).toBe('used-up');
  });

  it('says revoked before expired, and expired before used-up', () => {
    expect(stateOf({ revoked: true, usedCalls: 3, nowMs: expiresAtMs })).toBe('revoked');
    expect(stateOf({ usedCalls: 3, nowMs: expiresAtMs })).toBe('expired');
  });
});

describe('grant and revocation shapes', () => {
  const signature = { approver: 'alice', signature: 'c2ln' };

  it('finds nothing wrong with a well-formed grant, with or without amount caps', () => {
    expect(grantShapeProblem({ grant: grantOf(), signatures: [signature] })).toBeUndefined();
    expect(grantShapeProblem({ grant: callsOnly(), signatures: [signature] })).toBeUndefined();
  });

  it.each([
    ['no grant', { signatures: [signature] }, 'a signed grant is { grant, signatures }'],
    [
      'an empty caller',
      { grant: grantOf({ caller: ' ' }), signatures: [signature] },
      'the task queue it is for, its caller and its tool',
    ],
    [
      "a grant id that is not a UUID (one shaped like another grant's event id)",
      { grant: grantOf({ grantId: 'use:6f1c1d0e-1111-4a4a-9b9b-000000000001:1' }), signatures: [signature] },
      'a grant id is a UUID',
    ],
    [
      'no task queue',
      { grant: grantOf({ taskQueue: '' }), signatures: [signature] },
      'the task queue it is for',
    ],
    [
      'a caller of 201 characters',
      { grant: grantOf({ caller: 'c'.repeat(201) }), signatures: [signature] },
      'the task queue it is for, its caller and its tool',
    ],
    ['maxCalls 0', { grant: grantOf({ maxCalls: 0 }), signatures: [signature] }, 'whole number of calls'],
    ['maxCalls 1.5', { grant: grantOf({ maxCalls: 1.5 }), signatures: [signature] }, 'whole number of calls'],
    [
      'maxAmount 0',
      { grant: grantOf({ maxAmount: 0 }), signatures: [signature] },
      'maxAmount is a whole number',
    ],
    [
      'a reason of 501 characters',
      { grant: grantOf({ reason: 'r'.repeat(501) }), signatures: [signature] },
      'reason',
    ],
    [
      'an expiry before the issue',
      {
        grant: grantOf({ expiresAt: grantOf().issuedAt, issuedAt: grantOf().expiresAt }),
        signatures: [signature],
      },
      'expires after it is issued',
    ],
    ['no signatures', { grant: grantOf(), signatures: [] }, "one to 8 approvers' signatures"],
    [
      'nine signatures',
      { grant: grantOf(), signatures: Array.from({ length: 9 }, () => signature) },
      "one to 8 approvers' signatures",
    ],
    [
      'a signature that is not a string',
      { grant: grantOf(), signatures: [{ approver: 'alice', signature: 7 }] },
      "one to 8 approvers' signatures",
    ],
  ])('names what is wrong with %s', (_case, value, problem) => {
    expect(grantShapeProblem(value)).toContain(problem);
  });

  it('names what is wrong with a revocation whose signer is both an approver and an operator', () => {
    const revocation = {
      revocationId: 'r-1',
      grantId: 'g-1',
      by: { approver: 'alice' } as Record<string, string>,
      reason: 'done',
      issuedAt: new Date(nowMs).toISOString(),
    };
    expect(revocationShapeProblem({ revocation, signature: 'c2ln' })).toBeUndefined();
    expect(
      revocationShapeProblem({
        revocation: { ...revocation, by: { approver: 'alice', operator: 'olga' } },
        signature: 'c2ln',
      }),
    ).toContain('exactly one of { approver } or { operator }');
  });

  it('names the signer of a revocation and the workflow of a task queue', () => {
    expect(revokerName({ approver: 'alice' })).toBe('alice');
    expect(revokerName({ operator: 'olga' })).toBe('operator olga');
    expect(grantsWorkflowId('toolgate')).toBe('toolgate-grants:toolgate');
  });
});
