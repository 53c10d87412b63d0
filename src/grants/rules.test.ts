import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { publicKeyHex, signValue, verifyWithNode } from '../keys/key-files';
import type { GrantRevocation, SignedGrant, SignedGrantRevocation, StandingGrant } from './protocol';
import { createToolRegistry } from '../tools/tool-registry';
import { grantQuorum, judgeGrant, judgeRevocation } from './rules';
import { checkPolicy } from '../policy/load-policy';
import type { LoadedPolicy } from '../policy/load-policy';

const pair = () => generateKeyPairSync('ed25519');
type KeyPair = ReturnType<typeof pair>;
const alice = pair();
const bob = pair();
const carol = pair();
const dave = pair();
const erin = pair();
const olga = pair();
const inline = (key: KeyPair) => `ed25519:${publicKeyHex(key.publicKey)}`;
const registry = createToolRegistry({ tools: [...ordersContracts] });

/** support-bot needs two approvers for critical; strict-bot two from irreversible up. */
const policyValue = {
  callers: {
    'support-bot': {
      publicKey: inline(pair()),
      tools: ['get_order', 'refund_order'],
      autonomy: 'reversible',
      approval: { ceiling: 'critical', quorum: { critical: 2 } },
    },
    'strict-bot': {
      publicKey: inline(pair()),
      tools: ['refund_order'],
      autonomy: 'reversible',
      approval: { ceiling: 'critical', quorum: { irreversible: 2 } },
    },
    'reader-bot': { publicKey: inline(pair()), tools: ['get_order'], autonomy: 'read' },
    'careful-bot': {
      publicKey: inline(pair()),
      tools: ['refund_order'],
      autonomy: 'reversible',
      approval: { ceiling: 'irreversible' },
    },
  },
  approvers: {
    alice: { publicKey: inline(alice), maxLevel: 'critical' },
    bob: { publicKey: inline(bob), maxLevel: 'irreversible' },
    carol: { publicKey: inline(carol), maxLevel: 'irreversible' },
    dave: { publicKey: inline(dave), maxLevel: 'critical', operates: ['support-bot'] },
    erin: { publicKey: inline(erin), maxLevel: 'critical' },
  },
  operators: { olga: { publicKey: inline(olga) } },
};
const policy = checkPolicy({ source: 'test', registry, value: policyValue });
const twoDayPolicy = checkPolicy({
  source: 'test',
  registry,
  value: { ...policyValue, maxApprovalWindow: '2d' },
});

/** The deployment's tools as the worker describes them to judgeGrant. */
const tools = (name: string) => {
  const contract = registry.get(name);
  if (!contract) return undefined;
  return { declaresAmount: typeof contract.amount === 'function' };
};

const minuteMs = 60 * 1000;
const hourMs = 60 * minuteMs;
const dayMs = 24 * hourMs;
const nowMs = Date.parse('2026-12-01T12:00:00.000Z');
const at = (ms: number) => new Date(ms).toISOString();

const grantOf = (overrides: Partial<StandingGrant> = {}): StandingGrant => ({
  grantId: '6f1c1d0e-1111-4a4a-9b9b-000000000001',
  taskQueue: 'toolgate',
  caller: 'support-bot',
  tool: 'refund_order',
  maxLevel: 'irreversible',
  maxCalls: 3,
  maxAmount: 10_000,
  maxAmountPerCall: 5_000,
  issuedAt: at(nowMs),
  expiresAt: at(nowMs + hourMs),
  reason: 'small damaged-goods refunds while the queue is long',
  ...overrides,
});

const signed = (grant: StandingGrant, signers: [string, KeyPair][] = [['alice', alice]]): SignedGrant => ({
  grant,
  signatures: signers.map(([approver, key]) => ({
    approver,
    signature: signValue({ kind: 'grant', value: grant, privateKey: key.privateKey }),
  })),
});

const judge = (value: unknown, input: { policy?: LoadedPolicy; nowMs?: number } = {}) =>
  judgeGrant({ signed: value, policy: input.policy ?? policy, tool: tools, nowMs: input.nowMs ?? nowMs });

const codeOf = (value: unknown, input: { policy?: LoadedPolicy; nowMs?: number } = {}) => {
  const judged = judge(value, input);
  return judged.ok ? 'ok' : judged.code;
};

/** The reason a grant is refused, once its code is checked. */
const reasonOf = (value: unknown, code: string, input: { policy?: LoadedPolicy; nowMs?: number } = {}) => {
  const judged = judge(value, input);
  expect(judged).toMatchObject({ ok: false, code });
  return judged.ok ? '' : judged.reason;
};

describe('judgeGrant refuses a malformed grant as GRANT_INVALID', () => {
  const withoutField = (field: keyof StandingGrant) => {
    const grant: Partial<StandingGrant> = grantOf();
    delete grant[field];
    return signed(grant as StandingGrant);
  };

  it.each([
    ['null', null],
    ['a grant without its signatures wrapper', grantOf()],
    ['a grant without its id', withoutField('grantId')],
    ['a grant without its caller', withoutField('caller')],
    ['a grant without its tool', withoutField('tool')],
    ['a grant without its risk ceiling', withoutField('maxLevel')],
    ['a grant without a number of calls', withoutField('maxCalls')],
    ['a grant without a reason', withoutField('reason')],
    ['a grant without its issue time', withoutField('issuedAt')],
    ['a grant without its expiry', withoutField('expiresAt')],
    ['an unknown risk level', signed(grantOf({ maxLevel: 'everything' as StandingGrant['maxLevel'] }))],
    ['maxCalls 0', signed(grantOf({ maxCalls: 0 }))],
    ['maxCalls 1.5', signed(grantOf({ maxCalls: 1.5 }))],
    ['a negative maxAmount', signed(grantOf({ maxAmount: -1 }))],
    ['a fractional maxAmountPerCall', signed(grantOf({ maxAmountPerCall: 0.5 }))],
    ['an expiry before its issue time', signed(grantOf({ expiresAt: at(nowMs - minuteMs) }))],
    ['an expiry equal to its issue time', signed(grantOf({ expiresAt: at(nowMs) }))],
    ['an issue time that is not a time', signed(grantOf({ issuedAt: 'yesterday-ish' }))],
    ['no signatures', signed(grantOf(), [])],
    [
      'nine signatures',
      signed(
        grantOf(),
        Array.from({ length: 9 }, (): [string, KeyPair] => ['alice', alice]),
      ),
    ],
    [
      'a signature without its approver',
      { grant: grantOf(), signatures: [{ signature: signed(grantOf()).signatures[0]?.signature }] },
    ],
  ])('%s', (_case, value) => {
    const judged = judge(value);
    expect(judged).toMatchObject({ ok: false, code: 'GRANT_INVALID' });
  });

  it('accepts eight signatures, the most a grant carries', () => {
    const signers = Array.from({ length: 8 }, (): [string, KeyPair] => ['alice', alice]);
    expect(judge(signed(grantOf(), signers))).toEqual({ ok: true, approvers: ['alice'], quorum: 1 });
  });

  it('refuses a grant that expired before the checker’s clock', () => {
    const grant = grantOf({ issuedAt: at(nowMs - 2 * hourMs), expiresAt: at(nowMs - hourMs) });
    expect(judge(signed(grant))).toMatchObject({
      ok: false,
      code: 'GRANT_INVALID',
      reason: `the grant expired at ${grant.expiresAt}`,
    });
  });

  it('refuses a grant whose expiry is exactly now, and accepts it a millisecond before', () => {
    const grant = signed(grantOf());
    const expiresAtMs = Date.parse(grant.grant.expiresAt);
    expect(codeOf(grant, { nowMs: expiresAtMs })).toBe('GRANT_INVALID');
    expect(codeOf(grant, { nowMs: expiresAtMs - 1 })).toBe('ok');
  });

  it('refuses a grant issued more than ten minutes ahead of the checker’s clock, and allows ten', () => {
    const ahead = (ms: number) =>
      signed(grantOf({ issuedAt: at(nowMs + ms), expiresAt: at(nowMs + hourMs) }));
    expect(reasonOf(ahead(10 * minuteMs + 1), 'GRANT_INVALID')).toContain('issued in the future');
    expect(codeOf(ahead(10 * minuteMs))).toBe('ok');
  });

  it('refuses a grant longer than the default maxApprovalWindow of 30 days, and allows exactly 30', () => {
    const lasting = (ms: number) => signed(grantOf({ expiresAt: at(nowMs + ms) }));
    expect(reasonOf(lasting(30 * dayMs + 1), 'GRANT_INVALID')).toContain('maxApprovalWindow (30d)');
    expect(codeOf(lasting(30 * dayMs))).toBe('ok');
  });

  it('refuses a grant longer than a policy’s maxApprovalWindow of 2 days', () => {
    const threeDays = signed(grantOf({ expiresAt: at(nowMs + 3 * dayMs) }));
    expect(reasonOf(threeDays, 'GRANT_INVALID', { policy: twoDayPolicy })).toContain(
      'maxApprovalWindow (2d)',
    );
    expect(codeOf(threeDays)).toBe('ok');
    expect(codeOf(signed(grantOf({ expiresAt: at(nowMs + 2 * dayMs) })), { policy: twoDayPolicy })).toBe(
      'ok',
    );
  });

  it.each([
    ['maxAmount', { maxAmount: 1_000 }],
    ['maxAmountPerCall', { maxAmountPerCall: 1_000 }],
  ])('refuses %s on a tool that declares no amount', (_field, caps) => {
    const grant = grantOf({
      tool: 'get_order',
      maxLevel: 'read',
      maxAmount: undefined,
      maxAmountPerCall: undefined,
      ...caps,
    });
    expect(reasonOf(signed(grant), 'GRANT_INVALID')).toContain('get_order declares no amount');
  });

  it('accepts a grant that caps calls only on a tool that declares no amount', () => {
    const {
      maxAmount: _total,
      maxAmountPerCall: _each,
      ...uncapped
    } = grantOf({ tool: 'get_order', maxLevel: 'read' });
    expect(codeOf(signed(uncapped))).toBe('ok');
  });
});

describe('judgeGrant judges what the grant names, then each signature, then the quorum', () => {
  it('refuses a caller the policy does not name as CALLER_UNKNOWN', () => {
    expect(reasonOf(signed(grantOf({ caller: 'night-bot' })), 'CALLER_UNKNOWN')).toBe(
      'no caller "night-bot" in the policy',
    );
  });

  it('refuses a caller named __proto__ as CALLER_UNKNOWN, not a crash', () => {
    expect(codeOf(signed(grantOf({ caller: '__proto__' })))).toBe('CALLER_UNKNOWN');
  });

  it('refuses a tool this deployment does not run as UNKNOWN_TOOL', () => {
    expect(judge(signed(grantOf({ tool: 'delete_order' })))).toMatchObject({
      ok: false,
      code: 'UNKNOWN_TOOL',
    });
  });

  it('refuses a signer the policy does not name as APPROVER_UNKNOWN', () => {
    expect(judge(signed(grantOf(), [['mallory', pair()]]))).toMatchObject({
      ok: false,
      code: 'APPROVER_UNKNOWN',
    });
    expect(codeOf(signed(grantOf(), [['constructor', pair()]]))).toBe('APPROVER_UNKNOWN');
  });

  it('refuses a grant naming alice but signed with bob’s key as SIGNATURE_INVALID', () => {
    expect(judge(signed(grantOf(), [['alice', bob]]))).toMatchObject({
      ok: false,
      code: 'SIGNATURE_INVALID',
    });
  });

  it('refuses a grant whose calls were raised after it was signed as SIGNATURE_INVALID', () => {
    const original = signed(grantOf({ maxCalls: 3 }));
    const raised = { ...original, grant: { ...original.grant, maxCalls: 300 } };
    expect(codeOf(original)).toBe('ok');
    expect(codeOf(raised)).toBe('SIGNATURE_INVALID');
  });

  it('refuses a grant whose ceiling was raised after it was signed as SIGNATURE_INVALID', () => {
    const original = signed(grantOf(), [
      ['alice', alice],
      ['erin', erin],
    ]);
    const raised = { ...original, grant: { ...original.grant, maxLevel: 'critical' as const } };
    expect(codeOf(raised)).toBe('SIGNATURE_INVALID');
  });

  it('refuses a signature of the grant made as another kind (a decision) as SIGNATURE_INVALID', () => {
    const grant = grantOf();
    const asDecision: SignedGrant = {
      grant,
      signatures: [
        {
          approver: 'alice',
          signature: signValue({ kind: 'decision', value: grant, privateKey: alice.privateKey }),
        },
      ],
    };
    expect(codeOf(asDecision)).toBe('SIGNATURE_INVALID');
  });

  it('refuses an approver granted a lower level than the grant’s ceiling as APPROVER_NOT_ALLOWED', () => {
    const grant = grantOf({ maxLevel: 'critical' });
    const signers: [string, KeyPair][] = [
      ['alice', alice],
      ['bob', bob],
    ];
    expect(reasonOf(signed(grant, signers), 'APPROVER_NOT_ALLOWED')).toBe(
      'bob may approve up to "irreversible", the grant covers "critical"',
    );
  });

  it('refuses an approver who operates the caller as SELF_APPROVAL', () => {
    expect(judge(signed(grantOf(), [['dave', dave]]))).toMatchObject({ ok: false, code: 'SELF_APPROVAL' });
  });

  it('lets an approver who operates another caller grant this one', () => {
    const grant = grantOf({ caller: 'strict-bot' });
    expect(
      judge(
        signed(grant, [
          ['dave', dave],
          ['alice', alice],
        ]),
      ),
    ).toEqual({ ok: true, approvers: ['dave', 'alice'], quorum: 2 });
  });

  it('refuses a critical grant with one approver as QUORUM_NOT_MET', () => {
    expect(reasonOf(signed(grantOf({ maxLevel: 'critical' })), 'QUORUM_NOT_MET')).toContain(
      'needs 2 distinct approvers; it has 1',
    );
  });

  it('counts the same approver twice once: QUORUM_NOT_MET', () => {
    const grant = grantOf({ maxLevel: 'critical' });
    expect(
      codeOf(
        signed(grant, [
          ['alice', alice],
          ['alice', alice],
        ]),
      ),
    ).toBe('QUORUM_NOT_MET');
  });

  it('needs two approvers for an irreversible grant to a caller whose quorum for irreversible is two', () => {
    const grant = grantOf({ caller: 'strict-bot' });
    expect(codeOf(signed(grant))).toBe('QUORUM_NOT_MET');
    expect(
      judge(
        signed(grant, [
          ['alice', alice],
          ['bob', bob],
        ]),
      ),
    ).toEqual({ ok: true, approvers: ['alice', 'bob'], quorum: 2 });
  });

  it('accepts a critical grant signed by two distinct approvers granted the level, listing them once', () => {
    const grant = grantOf({ maxLevel: 'critical' });
    expect(
      judge(
        signed(grant, [
          ['alice', alice],
          ['erin', erin],
          ['alice', alice],
        ]),
      ),
    ).toEqual({ ok: true, approvers: ['alice', 'erin'], quorum: 2 });
  });

  it('accepts an irreversible grant to support-bot signed by one approver', () => {
    expect(judge(signed(grantOf(), [['bob', bob]]))).toEqual({ ok: true, approvers: ['bob'], quorum: 1 });
  });

  it('judges in order: a malformed grant for an unknown caller is GRANT_INVALID, an unknown caller with an unknown tool CALLER_UNKNOWN', () => {
    expect(codeOf(signed(grantOf({ caller: 'night-bot', maxCalls: 0 })))).toBe('GRANT_INVALID');
    expect(codeOf(signed(grantOf({ caller: 'night-bot', tool: 'delete_order' })))).toBe('CALLER_UNKNOWN');
    expect(codeOf(signed(grantOf({ tool: 'delete_order' }), [['mallory', pair()]]))).toBe('UNKNOWN_TOOL');
    // An expired grant by an unknown approver: the time is judged before the signatures.
    const expired = grantOf({ issuedAt: at(nowMs - 2 * hourMs), expiresAt: at(nowMs - hourMs) });
    expect(codeOf(signed(expired, [['mallory', pair()]]))).toBe('GRANT_INVALID');
    // The first signature that fails names the refusal: bob's level before dave's self-approval.
    const critical = grantOf({ maxLevel: 'critical' });
    expect(
      codeOf(
        signed(critical, [
          ['bob', bob],
          ['dave', dave],
        ]),
      ),
    ).toBe('APPROVER_NOT_ALLOWED');
    expect(
      codeOf(
        signed(critical, [
          ['dave', dave],
          ['alice', bob],
        ]),
      ),
    ).toBe('SELF_APPROVAL');
  });
});

describe('grantQuorum', () => {
  const callerPolicy = (caller: string) => policy.callerPolicy(caller)!;

  it.each([
    ['support-bot', 'read', 1],
    ['support-bot', 'reversible', 1],
    ['support-bot', 'irreversible', 1],
    ['support-bot', 'critical', 2],
    ['strict-bot', 'reversible', 1],
    ['strict-bot', 'irreversible', 2],
    ['strict-bot', 'critical', 2],
  ] as const)('%s up to %s needs %i', (caller, maxLevel, quorum) => {
    expect(grantQuorum({ callerPolicy: callerPolicy(caller), maxLevel })).toBe(quorum);
  });

  it('takes the largest quorum of any level the grant covers, and two for critical however low the policy sets it', () => {
    const base = callerPolicy('support-bot');
    expect(
      grantQuorum({
        callerPolicy: { ...base, approval: { ceiling: 'critical', quorum: { reversible: 3, critical: 1 } } },
        maxLevel: 'irreversible',
      }),
    ).toBe(3);
    expect(
      grantQuorum({
        callerPolicy: { ...base, approval: { ceiling: 'critical', quorum: { critical: 1 } } },
        maxLevel: 'critical',
      }),
    ).toBe(2);
    expect(grantQuorum({ callerPolicy: { ...base, approval: undefined }, maxLevel: 'irreversible' })).toBe(1);
  });
});

describe('judgeRevocation', () => {
  const grant = signed(grantOf({ maxLevel: 'critical' }), [
    ['alice', alice],
    ['erin', erin],
  ]);
  const revocationOf = (
    by: GrantRevocation['by'],
    overrides: Partial<GrantRevocation> = {},
  ): GrantRevocation => ({
    revocationId: '6f1c1d0e-2222-4a4a-9b9b-000000000002',
    grantId: grant.grant.grantId,
    by,
    reason: 'the queue is short again',
    issuedAt: at(nowMs),
    ...overrides,
  });
  const signedBy = (revocation: GrantRevocation, key: KeyPair): SignedGrantRevocation => ({
    revocation,
    signature: signValue({ kind: 'grant-revocation', value: revocation, privateKey: key.privateKey }),
  });
  const judgeOf = (revocation: unknown) => judgeRevocation({ revocation, grant, policy });

  it('accepts a revocation by an approver who signed the grant', () => {
    const revocation = revocationOf({ approver: 'erin' });
    expect(judgeOf(signedBy(revocation, erin))).toEqual({ ok: true, revocation });
  });

  it('refuses an approver who did not sign the grant as REVOCATION_NOT_ALLOWED, even with their own key', () => {
    expect(judgeOf(signedBy(revocationOf({ approver: 'bob' }), bob))).toMatchObject({
      ok: false,
      code: 'REVOCATION_NOT_ALLOWED',
    });
  });

  it('accepts a revocation by an operator of the policy', () => {
    const revocation = revocationOf({ operator: 'olga' });
    expect(judgeOf(signedBy(revocation, olga))).toEqual({ ok: true, revocation });
  });

  it('refuses an operator the policy does not name as OPERATOR_UNKNOWN', () => {
    expect(judgeOf(signedBy(revocationOf({ operator: 'oscar' }), olga))).toMatchObject({
      ok: false,
      code: 'OPERATOR_UNKNOWN',
    });
    expect(judgeOf(signedBy(revocationOf({ operator: 'toString' }), olga))).toMatchObject({
      ok: false,
      code: 'OPERATOR_UNKNOWN',
    });
  });

  it('refuses a granting approver who is no longer in the policy as APPROVER_UNKNOWN', () => {
    const withoutErin = checkPolicy({
      source: 'test',
      registry,
      value: { ...policyValue, approvers: { alice: policyValue.approvers.alice } },
    });
    expect(
      judgeRevocation({
        revocation: signedBy(revocationOf({ approver: 'erin' }), erin),
        grant,
        policy: withoutErin,
      }),
    ).toMatchObject({ ok: false, code: 'APPROVER_UNKNOWN' });
  });

  it.each([
    ['an approver', { approver: 'alice' }],
    ['an operator', { operator: 'olga' }],
  ] as const)('refuses %s signing with another key as SIGNATURE_INVALID', (_case, by) => {
    expect(judgeOf(signedBy(revocationOf(by), bob))).toMatchObject({ ok: false, code: 'SIGNATURE_INVALID' });
  });

  it('refuses a revocation changed after it was signed as SIGNATURE_INVALID', () => {
    const original = signedBy(revocationOf({ approver: 'alice' }), alice);
    const moved = { ...original, revocation: { ...original.revocation, grantId: 'another-grant' } };
    expect(judgeOf(moved)).toMatchObject({ ok: false, code: 'SIGNATURE_INVALID' });
  });

  it('refuses a revocation signed as a grant (another kind) as SIGNATURE_INVALID', () => {
    const revocation = revocationOf({ approver: 'alice' });
    const asGrant = {
      revocation,
      signature: signValue({ kind: 'grant', value: revocation, privateKey: alice.privateKey }),
    };
    expect(judgeOf(asGrant)).toMatchObject({ ok: false, code: 'SIGNATURE_INVALID' });
  });

  // Not a literal, so TypeScript lets it stand for a signer: exactly what a forged request would send.
  const bothSigners = { approver: 'alice', operator: 'olga' };
  it.each([
    ['null', null],
    ['no signature', { revocation: revocationOf({ approver: 'alice' }) }],
    ['by naming both an approver and an operator', signedBy(revocationOf(bothSigners), alice)],
    ['by naming nobody', signedBy(revocationOf({} as GrantRevocation['by']), alice)],
    [
      'by naming a caller',
      signedBy(revocationOf({ caller: 'support-bot' } as unknown as GrantRevocation['by']), alice),
    ],
    ['by as a string', signedBy(revocationOf('alice' as unknown as GrantRevocation['by']), alice)],
    ['an empty approver name', signedBy(revocationOf({ approver: ' ' }), alice)],
    ['no reason', signedBy(revocationOf({ approver: 'alice' }, { reason: '' }), alice)],
    [
      'a reason over 500 characters',
      signedBy(revocationOf({ approver: 'alice' }, { reason: 'x'.repeat(501) }), alice),
    ],
  ])('refuses a malformed revocation (%s) as GRANT_INVALID', (_case, revocation) => {
    expect(judgeOf(revocation)).toMatchObject({ ok: false, code: 'GRANT_INVALID' });
  });
});

describe('a grant signature is a grant signature only', () => {
  const grant = grantOf();
  const signature = signValue({ kind: 'grant', value: grant, privateKey: alice.privateKey });
  const key = publicKeyHex(alice.publicKey);

  it('verifies as a grant', () => {
    expect(verifyWithNode({ kind: 'grant', value: grant, signature, publicKeyHex: key })).toBe(true);
  });

  it.each(['decision', 'tool-switch', 'grant-revocation'] as const)('does not pass as a %s', (kind) => {
    expect(verifyWithNode({ kind, value: grant, signature, publicKeyHex: key })).toBe(false);
  });
});

describe('judgeGrant grants only what a human could approve for the caller, on this deployment', () => {
  it.each([
    [
      "a tool outside the caller's allowlist",
      { caller: 'reader-bot' },
      "refund_order is not on reader-bot's allowlist",
    ],
    [
      'a caller with no human approval configured',
      { caller: 'reader-bot', tool: 'get_order', maxAmount: undefined, maxAmountPerCall: undefined },
      'no human approval is configured for reader-bot',
    ],
    [
      "a level above the caller's approval ceiling",
      { caller: 'careful-bot', maxLevel: 'critical' as const },
      'go up to "irreversible" only',
    ],
  ])('refuses %s as GRANT_INVALID', (_case, overrides, reason) => {
    const grant = { ...grantOf(), ...overrides };
    const signers: [string, KeyPair][] = [
      ['alice', alice],
      ['erin', erin],
    ];
    expect(reasonOf(signed(grant, signers), 'GRANT_INVALID')).toContain(reason);
  });

  it('refuses a grant signed for another task queue, and takes one for its own', () => {
    const forOther = signed(grantOf({ taskQueue: 'orders-staging' }));
    const judged = judgeGrant({ signed: forOther, policy, tool: tools, taskQueue: 'toolgate', nowMs });
    expect(judged).toMatchObject({ ok: false, code: 'GRANT_INVALID' });
    expect(judged.ok ? '' : judged.reason).toContain('"orders-staging", not this deployment\'s "toolgate"');
    expect(
      judgeGrant({ signed: signed(grantOf()), policy, tool: tools, taskQueue: 'toolgate', nowMs }),
    ).toMatchObject({
      ok: true,
    });
  });
});
