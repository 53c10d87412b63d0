import { generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { publicKeyHex, signValue } from '../keys/key-files';
import type { DecisionEnvelope, SignedDecision } from './protocol';
import { approvalNonce } from './protocol';
import { digestOf } from '../shared/canonical-json';
import { nameRecord } from '../shared/own-records';
import type { ApproverGrant, DecidedBy, RoundBinding } from './decision-rules';
import { distinctApprovers, isSignedDecision, judgeDecision, quorumReached } from './decision-rules';

// The rules an approver's signed decision must pass for a round, without a Temporal server: the
// workflow's validator and the credential minter both answer with these.

const pair = () => generateKeyPairSync('ed25519');
const keys = { alice: pair(), bob: pair(), dave: pair(), erin: pair(), stranger: pair() };
const grant = (key: { publicKey: KeyObject }, rest: Omit<ApproverGrant, 'publicKeyHex'>): ApproverGrant => ({
  publicKeyHex: publicKeyHex(key.publicKey),
  ...rest,
});

// A plain object, as a careless caller would pass: it answers `constructor` from its prototype.
const approvers: Record<string, ApproverGrant> = {
  alice: grant(keys.alice, { maxLevel: 'critical', operates: [] }),
  bob: grant(keys.bob, { maxLevel: 'reversible', operates: [] }),
  dave: grant(keys.dave, { maxLevel: 'critical', operates: ['support-bot'] }),
  erin: grant(keys.erin, { maxLevel: 'reversible', operates: ['support-bot'] }),
};

const runId = 'run-1';
const previewDigest = digestOf({ order_id: 'ORD-1003', amount_cents: 20_000 });
const round: RoundBinding = {
  callId: 'tc-call',
  runId,
  nonce: approvalNonce({ runId, round: 1, previewDigest }),
  argsDigest: digestOf({ order_id: 'ORD-1003', amount_cents: 20_000, currency: 'BRL', reason: 'damaged' }),
  previewDigest,
  contractDigest: digestOf({ contract: 'refund_order as deployed' }),
  riskLevel: 'irreversible',
  caller: 'support-bot',
};
const nobody: DecidedBy = { signatures: [], approvers: [] };

/** An envelope for this round, as a well-behaved approver would build it. */
const envelopeBy = (approver: string, overrides: Partial<DecisionEnvelope> = {}): DecisionEnvelope => ({
  callId: round.callId,
  runId: round.runId,
  nonce: round.nonce,
  argsDigest: round.argsDigest,
  previewDigest: round.previewDigest,
  contractDigest: round.contractDigest,
  decision: 'approve',
  approver,
  reason: `checked by ${approver}`,
  issuedAt: '2026-11-30T00:00:00Z',
  ...overrides,
});

const signedWith = (envelope: DecisionEnvelope, key: { privateKey: KeyObject }): SignedDecision => ({
  envelope,
  signature: signValue({ kind: 'decision', value: envelope, privateKey: key.privateKey }),
});

/** A decision by a known approver, signed with their own key. */
const signedBy = (approver: keyof typeof keys, overrides: Partial<DecisionEnvelope> = {}): SignedDecision =>
  signedWith(envelopeBy(approver, overrides), keys[approver]);

const judge = (decision: unknown, decidedBy: DecidedBy = nobody) =>
  judgeDecision({ decision, round, approvers, decidedBy });

const aliceApproval = signedBy('alice');

describe('a decision that holds', () => {
  it('is an approval signed by a granted approver for this round: it holds, with its envelope', () => {
    expect(judge(aliceApproval)).toEqual({ ok: true, envelope: aliceApproval.envelope });
  });

  it('is a denial under the same rules: it holds too (the minter, not these rules, wants approvals)', () => {
    const denial = signedBy('alice', { decision: 'deny' });
    expect(judge(denial)).toEqual({ ok: true, envelope: denial.envelope });
  });

  it('holds after other approvers decided the round, when its approver and signature are new', () => {
    const dave = signedBy('dave');
    expect(judge(aliceApproval, { signatures: [dave.signature], approvers: ['dave'] })).toMatchObject({
      ok: true,
    });
  });
});

describe('each rule refuses with its own code and reason', () => {
  const cases: [string, () => unknown, DecidedBy, string, string][] = [
    [
      'a decision without a signature',
      () => ({ envelope: aliceApproval.envelope }),
      nobody,
      'SIGNATURE_INVALID',
      'not a signed decision: expected {envelope, signature}',
    ],
    [
      'an approver the policy does not name',
      () => signedWith(envelopeBy('mallory'), keys.stranger),
      nobody,
      'APPROVER_UNKNOWN',
      'no such approver',
    ],
    [
      'a decision signed with another approver’s key',
      () => signedWith(envelopeBy('alice'), keys.dave),
      nobody,
      'SIGNATURE_INVALID',
      "not signed with the approver's key",
    ],
    [
      'a decision altered after it was signed',
      () => ({ ...aliceApproval, envelope: { ...aliceApproval.envelope, decision: 'deny' } }),
      nobody,
      'SIGNATURE_INVALID',
      "not signed with the approver's key",
    ],
    [
      'an approver granted a lower level than the call’s',
      () => signedBy('bob'),
      nobody,
      'APPROVER_NOT_ALLOWED',
      'bob may approve up to "reversible", this call is "irreversible"',
    ],
    [
      'an approver who operates the caller',
      () => signedBy('dave'),
      nobody,
      'SELF_APPROVAL',
      'dave operates support-bot and may not approve its calls',
    ],
    [
      'a decision for another call',
      () => signedBy('alice', { callId: 'tc-other' }),
      nobody,
      'DIGEST_MISMATCH',
      'the decision is not for this round: call, run, nonce, arguments, preview and contract must all match',
    ],
    [
      'a signature this round already used',
      () => aliceApproval,
      { signatures: [aliceApproval.signature], approvers: [] },
      'DECISION_REPLAYED',
      'this approver already decided this round',
    ],
    [
      'a second, freshly signed decision by an approver who already approved',
      () => signedBy('alice', { reason: 'again' }),
      { signatures: [aliceApproval.signature], approvers: ['alice'] },
      'DECISION_REPLAYED',
      'this approver already decided this round',
    ],
    [
      'a signed decision that is neither approve nor deny',
      () => signedBy('alice', { decision: 'approve all' as DecisionEnvelope['decision'] }),
      nobody,
      'SIGNATURE_INVALID',
      'a decision is "approve" or "deny"',
    ],
  ];

  it.each(cases)('refuses %s', (_case, build, decidedBy, code, reason) => {
    expect(judge(build(), decidedBy)).toEqual({ ok: false, code, reason });
  });
});

describe('a round whose risk level is not a known one', () => {
  it('is beyond every grant: even a critical approver is APPROVER_NOT_ALLOWED', () => {
    const unknownLevel = { ...round, riskLevel: 'catastrophic' as RoundBinding['riskLevel'] };
    expect(
      judgeDecision({ decision: aliceApproval, round: unknownLevel, approvers, decidedBy: nobody }),
    ).toMatchObject({ ok: false, code: 'APPROVER_NOT_ALLOWED' });
  });
});

describe('the first rule broken is the answer', () => {
  const cases: [string, () => unknown, DecidedBy, string][] = [
    [
      'a malformed decision from an unknown approver is SIGNATURE_INVALID',
      () => ({ envelope: envelopeBy('mallory') }),
      nobody,
      'SIGNATURE_INVALID',
    ],
    [
      'an unknown approver with a bad signature is APPROVER_UNKNOWN',
      () => ({ envelope: envelopeBy('mallory'), signature: 'A'.repeat(86) }),
      nobody,
      'APPROVER_UNKNOWN',
    ],
    [
      'an approver not granted the level, mis-signed, is SIGNATURE_INVALID',
      () => signedWith(envelopeBy('bob'), keys.stranger),
      nobody,
      'SIGNATURE_INVALID',
    ],
    [
      'an approver both not granted the level and operating the caller is APPROVER_NOT_ALLOWED',
      () => signedBy('erin'),
      nobody,
      'APPROVER_NOT_ALLOWED',
    ],
    [
      'a self-approval that is also unbound is SELF_APPROVAL',
      () => signedBy('dave', { callId: 'tc-other', nonce: 'stale' }),
      nobody,
      'SELF_APPROVAL',
    ],
    [
      'an unbound decision by an approver who already approved is DIGEST_MISMATCH',
      () => signedBy('alice', { runId: 'run-earlier' }),
      { signatures: [], approvers: ['alice'] },
      'DIGEST_MISMATCH',
    ],
    [
      'a replayed decision that is neither approve nor deny is DECISION_REPLAYED',
      () => signedBy('alice', { decision: 'maybe' as DecisionEnvelope['decision'] }),
      { signatures: [], approvers: ['alice'] },
      'DECISION_REPLAYED',
    ],
  ];

  it.each(cases)('%s', (_case, build, decidedBy, code) => {
    expect(judge(build(), decidedBy)).toMatchObject({ ok: false, code });
  });
});

describe('approver names from outside', () => {
  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'treats %s as an unknown approver, not as a property of the approvers record',
    (name) => {
      const forged = signedWith(envelopeBy(name), keys.stranger);
      expect(judge(forged)).toEqual({ ok: false, code: 'APPROVER_UNKNOWN', reason: 'no such approver' });
    },
  );

  it('holds with the null-prototype approvers record the policy loader builds', () => {
    expect(
      judgeDecision({ decision: aliceApproval, round, approvers: nameRecord(approvers), decidedBy: nobody }),
    ).toMatchObject({ ok: true });
  });

  it('treats every approver as unknown when no approvers are known', () => {
    expect(
      judgeDecision({ decision: aliceApproval, round, approvers: undefined, decidedBy: nobody }),
    ).toEqual({
      ok: false,
      code: 'APPROVER_UNKNOWN',
      reason: 'no such approver',
    });
  });

  it('refuses an approver name that is not a string, so one approver cannot count twice as ["alice"]', () => {
    const asArray = { ...envelopeBy('alice'), approver: ['alice'] };
    const signature = signValue({ kind: 'decision', value: asArray, privateKey: keys.alice.privateKey });
    expect(judge({ envelope: asArray, signature }, { signatures: [], approvers: ['alice'] })).toEqual({
      ok: false,
      code: 'SIGNATURE_INVALID',
      reason: 'not a signed decision: envelope fields that are not strings: approver',
    });
  });

  it('refuses an envelope with a field a decision does not have, though its approver signed it all', () => {
    const extended = { ...envelopeBy('alice'), scope: 'every call' };
    const signature = signValue({ kind: 'decision', value: extended, privateKey: keys.alice.privateKey });
    expect(judge({ envelope: extended, signature })).toEqual({
      ok: false,
      code: 'SIGNATURE_INVALID',
      reason: 'not a signed decision: envelope fields a decision does not have: scope',
    });
    const besides = { ...aliceApproval, note: 'rides along' };
    expect(judge(besides)).toMatchObject({
      ok: false,
      reason: 'not a signed decision: it has fields a decision does not have: note',
    });
  });

  it('refuses a reason longer than 2,000 characters, however it was signed', () => {
    const long = { ...envelopeBy('alice'), reason: 'r'.repeat(2_001) };
    const signature = signValue({ kind: 'decision', value: long, privateKey: keys.alice.privateKey });
    expect(judge({ envelope: long, signature })).toEqual({
      ok: false,
      code: 'SIGNATURE_INVALID',
      reason: 'not a signed decision: its reason is 2001 characters; give one of at most 2000',
    });
    const longest = { ...envelopeBy('alice'), reason: 'r'.repeat(2_000) };
    expect(
      judge({
        envelope: longest,
        signature: signValue({ kind: 'decision', value: longest, privateKey: keys.alice.privateKey }),
      }),
    ).toMatchObject({ ok: true });
  });
});

describe('malformed input', () => {
  const malformed: [string, unknown][] = [
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
    ['a string', 'approve'],
    ['an array', [aliceApproval.envelope, aliceApproval.signature]],
    ['an empty object', {}],
    ['a null envelope', { envelope: null, signature: aliceApproval.signature }],
    ['an envelope that is an array', { envelope: [], signature: aliceApproval.signature }],
    ['a signature that is not a string', { envelope: aliceApproval.envelope, signature: 7 }],
    [
      'an envelope without a call id',
      { ...aliceApproval, envelope: { ...aliceApproval.envelope, callId: undefined } },
    ],
    ['a numeric approver', { ...aliceApproval, envelope: { ...aliceApproval.envelope, approver: 7 } }],
    [
      'an envelope without a reason',
      { ...aliceApproval, envelope: { ...aliceApproval.envelope, reason: null } },
    ],
  ];

  it.each(malformed)(
    'is refused as SIGNATURE_INVALID, not a signed decision, without throwing: %s',
    (_case, value) => {
      expect(isSignedDecision(value)).toBe(false);
      expect(judge(value)).toEqual({
        ok: false,
        code: 'SIGNATURE_INVALID',
        reason: expect.stringMatching(/^not a signed decision: /) as unknown,
      });
    },
  );

  it('never throws and never holds for any value, however shaped like a decision', () => {
    const fieldValue = fc.oneof(fc.string(), fc.anything());
    const envelopeLike = fc.record(
      {
        callId: fieldValue,
        runId: fieldValue,
        nonce: fieldValue,
        argsDigest: fieldValue,
        previewDigest: fieldValue,
        contractDigest: fieldValue,
        decision: fc.oneof(fc.constantFrom('approve', 'deny'), fc.anything()),
        approver: fc.oneof(fc.constantFrom('alice', 'dave', '__proto__'), fc.anything()),
        reason: fieldValue,
        issuedAt: fieldValue,
      },
      { requiredKeys: [] },
    );
    const decisionLike = fc.oneof(
      fc.anything(),
      fc.record({
        envelope: fc.oneof(envelopeLike, fc.anything()),
        signature: fc.oneof(fc.string(), fc.anything()),
      }),
    );
    fc.assert(
      fc.property(decisionLike, (value) => {
        expect(judge(value).ok).toBe(false);
      }),
    );
  });
});

describe('binding', () => {
  const boundFields = ['callId', 'runId', 'nonce', 'argsDigest', 'previewDigest'] as const;

  it('refuses as DIGEST_MISMATCH a genuinely signed envelope whose any one bound field is not this round’s', () => {
    fc.assert(
      fc.property(fc.constantFrom(...boundFields), fc.string(), (field, value) => {
        fc.pre(value !== round[field]);
        const mutated = signedBy('alice', { [field]: value });
        expect(judge(mutated)).toMatchObject({ ok: false, code: 'DIGEST_MISMATCH' });
      }),
    );
  });

  it('refuses as CONTRACT_CHANGED an envelope for this call and run signed for another contract of the tool', () => {
    fc.assert(
      fc.property(fc.string(), (value) => {
        fc.pre(value !== round.contractDigest);
        expect(judge(signedBy('alice', { contractDigest: value }))).toEqual({
          ok: false,
          code: 'CONTRACT_CHANGED',
          reason:
            "the tool's contract changed: this decision was signed for another definition of the tool than " +
            "this round's; open the call again to see the new round",
        });
      }),
    );
  });

  it('refuses an envelope without a contract digest (signed before decisions carried one) as not a signed decision', () => {
    const { contractDigest: _contractDigest, ...unbound } = envelopeBy('alice');
    const decision = {
      envelope: unbound,
      signature: signValue({ kind: 'decision', value: unbound, privateKey: keys.alice.privateKey }),
    };
    expect(judge(decision)).toMatchObject({ ok: false, code: 'SIGNATURE_INVALID' });
  });
});

describe('quorum', () => {
  it('counts each approver once, in the order they first approved', () => {
    expect(distinctApprovers(['alice', 'dave', 'alice'])).toEqual(['alice', 'dave']);
  });

  it('is reached by distinct approvers only: one approver twice is not a quorum of two', () => {
    expect(quorumReached({ approvers: ['alice', 'alice'], quorum: 2 })).toBe(false);
    expect(quorumReached({ approvers: ['alice', 'dave'], quorum: 2 })).toBe(true);
    expect(quorumReached({ approvers: ['alice'], quorum: 1 })).toBe(true);
  });

  it('is never reached by nobody, whatever quorum is asked for', () => {
    expect(quorumReached({ approvers: [], quorum: 0 })).toBe(false);
    expect(quorumReached({ approvers: [], quorum: Number.NaN })).toBe(false);
    expect(quorumReached({ approvers: ['alice'], quorum: 0 })).toBe(true);
  });
});
