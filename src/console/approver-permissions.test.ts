import { describe, expect, it } from 'vitest';
import { decisionPermission } from './approver-permissions';

const round = {
  caller: 'support-bot',
  riskLevel: 'irreversible',
  approvals: [],
  quorum: 1,
  state: 'pending',
};
const grant = { publicKeyHex: 'a'.repeat(64), maxLevel: 'critical' as const, operates: [] };

describe('what the call page tells an approver they may do', () => {
  it('lets a granted approver who operates no caller decide', () => {
    expect(decisionPermission({ approver: 'alice', grant, round })).toEqual({ ok: true, notes: [] });
  });

  it('says why not, in the order the workflow checks: open round, known approver, level, self-approval, once', () => {
    expect(
      decisionPermission({ approver: 'alice', grant, round: { ...round, state: 'expired' } }),
    ).toMatchObject({
      ok: false,
      reason: 'this call is expired: nothing to decide',
    });
    expect(decisionPermission({ approver: 'zed', grant: undefined, round })).toMatchObject({
      ok: false,
      reason: 'the policy names no approver zed',
    });
    const bob = { ...grant, maxLevel: 'irreversible' as const };
    expect(
      decisionPermission({ approver: 'bob', grant: bob, round: { ...round, riskLevel: 'critical' } }),
    ).toMatchObject({
      ok: false,
      reason: 'your grant goes up to irreversible; this call is critical',
    });
    // An unknown level is beyond every grant, as the workflow fails closed.
    expect(
      decisionPermission({ approver: 'alice', grant, round: { ...round, riskLevel: 'cosmic' } }).ok,
    ).toBe(false);
    const carol = { ...grant, operates: ['support-bot'] };
    expect(decisionPermission({ approver: 'carol', grant: carol, round })).toMatchObject({
      ok: false,
      reason: 'you operate support-bot: approving its own calls would be self-approval',
    });
  });

  it('names the quorum of a critical call and refuses a second approval by the same approver', () => {
    const critical = { ...round, riskLevel: 'critical', quorum: 2, approvals: ['alice'] };
    expect(decisionPermission({ approver: 'dave', grant, round: critical })).toEqual({
      ok: true,
      notes: ['critical needs 2 distinct approvers; approved so far by alice'],
    });
    expect(decisionPermission({ approver: 'alice', grant, round: critical })).toMatchObject({
      ok: false,
      reason: 'you have approved this round already; another approver must add theirs',
      notes: ['critical needs 2 distinct approvers; approved so far by alice (you count once)'],
    });
  });
});
