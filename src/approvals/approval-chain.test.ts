import { describe, expect, it } from 'vitest';
import { chainMismatch, resolveChain, routeGroup } from './approval-chain';
import type { ChainInput } from './approval-chain';

const approvers: ChainInput['approvers'] = {
  lee: { maxLevel: 'critical', operates: [], groups: ['support-lead'] },
  low: { maxLevel: 'reversible', operates: [], groups: ['support-lead'] },
  ops: { maxLevel: 'critical', operates: ['support-bot'], groups: ['support-lead'] },
  fay: { maxLevel: 'critical', operates: [], groups: ['finance', 'finance-eu', 'owners-team_br'] },
};

const base: ChainInput = {
  approval: {
    ceiling: 'critical',
    chains: {
      irreversible: [
        { group: 'support-lead' },
        { group: 'finance', quorum: 1, window: '2h', when: { amountAbove: 50_000 } },
      ],
      critical: [{ group: 'support-lead' }, { group: 'owners-{route.owner}' }],
    },
  },
  level: 'irreversible',
  caller: 'support-bot',
  approvers,
  context: {},
  amount: 60_000,
  route: undefined,
  levelWindowMs: 4 * 3_600_000,
};

describe('approval chains resolve from the policy, the arguments and the context', () => {
  it('keeps a step whose condition holds, with its own window; members granted the level, not operating the caller', () => {
    expect(resolveChain(base)).toEqual({
      ok: true,
      steps: [
        { group: 'support-lead', quorum: 1, windowMs: 4 * 3_600_000, members: ['lee'] },
        { group: 'finance', quorum: 1, windowMs: 2 * 3_600_000, members: ['fay'] },
      ],
    });
  });

  it('leaves a step out when its condition does not hold; a level without a chain has none', () => {
    expect(resolveChain({ ...base, amount: 50_000 })).toMatchObject({
      ok: true,
      steps: [{ group: 'support-lead' }],
    });
    expect(resolveChain({ ...base, level: 'reversible' })).toBeUndefined();
  });

  it("routes a group by the tool's route and refuses one nobody can take", () => {
    expect(resolveChain({ ...base, level: 'critical', route: { owner: 'team_br' } })).toMatchObject({
      ok: true,
      steps: [{ group: 'support-lead' }, { group: 'owners-team_br', members: ['fay'] }],
    });
    const nobody = resolveChain({ ...base, level: 'critical', route: { owner: 'team_mx' } });
    expect(nobody?.ok === false && nobody.reason).toContain('group "owners-team_mx"');
    const unrouted = resolveChain({ ...base, level: 'critical' });
    expect(unrouted?.ok === false && unrouted.reason).toContain('{route.owner}');
  });

  it('never routes text that is not a plain name (no ".", "-" or space: a value never picks a longer group)', () => {
    for (const region of ['eu-juniors', 'eu.juniors', 'a b']) {
      expect(
        routeGroup({ group: 'finance-{claims.region}', context: { claims: { region } }, route: undefined })
          .ok,
      ).toBe(false);
    }
    expect(
      routeGroup({ group: 'finance-{tenant}', context: { tenant: 'a b' }, route: undefined }),
    ).toMatchObject({
      ok: false,
    });
    expect(
      routeGroup({
        group: 'finance-{claims.region}',
        context: { claims: { region: 'eu' } },
        route: undefined,
      }),
    ).toEqual({ ok: true, group: 'finance-eu' });
  });

  it('assigns approvals to steps in order', () => {
    const steps = [
      { group: 'support-lead', quorum: 1, windowMs: 1, members: ['lee'] },
      { group: 'finance', quorum: 2, windowMs: 1, members: ['fay', 'fin'] },
    ];
    expect(chainMismatch({ steps, approvers: ['lee', 'fay', 'fin'] })).toBeUndefined();
    expect(chainMismatch({ steps, approvers: ['fay', 'lee', 'fin'] })).toContain('fay approved for step 1');
    expect(chainMismatch({ steps, approvers: ['lee', 'fay'] })).toContain('1 of 2');
  });
});
