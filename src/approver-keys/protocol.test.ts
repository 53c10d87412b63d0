import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signEnrolment } from './client';
import { publicKeyHex, signValue, verifyWithNode } from '../keys/key-files';
import type { DecisionEnvelope } from '../approvals/protocol';
import type { ApproverKeysView, ApproverKeyView, Invite, KeyChain, VerifiedKey } from './protocol';
import {
  inviteStatusIn,
  keyIdOf,
  keyStatusIn,
  LearnedKeyStatuses,
  memoisedKeyChainVerifier,
  verifyKeyChain,
} from './protocol';
import { judgeDecision } from '../approvals/decision-rules';
import { signedText, verifySignature } from '../shared/signatures';

// An enrolled key's chain, checked purely (as the call workflow's validator and the minter do).

const pair = () => generateKeyPairSync('ed25519');
const olivia = pair();
const alicePolicyKey = pair();
const operators = { olivia: publicKeyHex(olivia.publicKey) };
const inviteKey = pair();
const enrolled = pair();
const invite: Invite = {
  inviteId: 'inv-1',
  approver: 'alice',
  invitePublicKeyHex: publicKeyHex(inviteKey.publicKey),
  operator: 'olivia',
  expiresAt: '2030-01-01T00:00:00Z',
};
const seed = (inviteKey.privateKey.export({ format: 'jwk' }) as { d: string }).d;
const chain: KeyChain = {
  invite: { invite, signature: signValue({ kind: 'invite', value: invite, privateKey: olivia.privateKey }) },
  enrolment: signEnrolment({
    inviteId: 'inv-1',
    approver: 'alice',
    invitePrivateKey: seed,
    privateKey: enrolled.privateKey,
    label: 'laptop',
  }),
};

describe('an enrolled key chain', () => {
  it('holds when an operator signed the invite and both the invite key and the key signed the enrolment', () => {
    expect(verifyKeyChain({ chain, operators, approver: 'alice' })).toEqual({
      ok: true,
      key: {
        keyId: keyIdOf(publicKeyHex(enrolled.publicKey)),
        publicKeyHex: publicKeyHex(enrolled.publicKey),
        approver: 'alice',
        inviteId: 'inv-1',
      },
    });
  });

  it.each<[string, unknown, string]>([
    [
      'an unknown operator',
      { ...chain, invite: { ...chain.invite, invite: { ...invite, operator: 'mallory' } } },
      'no known operator',
    ],
    [
      'an invite changed after signing',
      { ...chain, invite: { ...chain.invite, invite: { ...invite, expiresAt: '2099-01-01T00:00:00Z' } } },
      'not signed',
    ],
    [
      'an enrolment without possession',
      { ...chain, enrolment: { ...chain.enrolment, keySignature: chain.enrolment.inviteSignature } },
      'enrolled key',
    ],
    ['not a chain at all', { invite: '__proto__' }, 'not a key chain'],
  ])('does not hold with %s', (_case, broken, reason) => {
    const verdict = verifyKeyChain({ chain: broken, operators, approver: 'alice' });
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toContain(reason);
  });

  it('does not hold for another approver, nor with `__proto__` as operator', () => {
    expect(verifyKeyChain({ chain, operators, approver: 'dave' }).ok).toBe(false);
    const proto = { ...chain, invite: { ...chain.invite, invite: { ...invite, operator: '__proto__' } } };
    expect(verifyKeyChain({ chain: proto, operators, approver: 'alice' }).ok).toBe(false);
  });

  it('signs each kind over its own bytes, so an enrolment signature never passes for an invite', () => {
    expect(signedText({ kind: 'enrolment', value: 1 })).not.toBe(signedText({ kind: 'invite', value: 1 }));
    const check = {
      value: chain.enrolment.enrolment,
      signature: chain.enrolment.keySignature,
      publicKeyHex: publicKeyHex(enrolled.publicKey),
    };
    expect(verifySignature({ kind: 'enrolment', ...check })).toBe(true);
    expect(verifyWithNode({ kind: 'enrolment', ...check })).toBe(true);
    expect(verifySignature({ kind: 'key-revocation', ...check })).toBe(false);
  });

  it("lets judgeDecision accept an envelope signed by the enrolled key, naming the key, and refuse the policy key's signature with the chain", () => {
    const envelope: DecisionEnvelope = {
      callId: 'tc-1',
      runId: 'run-1',
      nonce: 'n',
      argsDigest: 'a',
      previewDigest: 'p',
      contractDigest: 'c',
      decision: 'approve',
      approver: 'alice',
      reason: 'ok',
      issuedAt: '2026-01-01T00:00:00Z',
    };
    const round = {
      callId: 'tc-1',
      runId: 'run-1',
      nonce: 'n',
      argsDigest: 'a',
      previewDigest: 'p',
      contractDigest: 'c',
      riskLevel: 'irreversible' as const,
      caller: 'support-bot',
    };
    const approvers = {
      alice: {
        publicKeyHex: publicKeyHex(alicePolicyKey.publicKey),
        maxLevel: 'critical' as const,
        operates: [],
      },
    };
    const decidedBy = { signatures: [], approvers: [] };
    const byKey = {
      envelope,
      signature: signValue({ kind: 'decision', value: envelope, privateKey: enrolled.privateKey }),
      key: chain,
    };
    expect(judgeDecision({ decision: byKey, round, approvers, operators, decidedBy })).toMatchObject({
      ok: true,
      key: { approver: 'alice' },
    });
    // Without operators recorded (a call evaluated before they existed) no chain holds.
    expect(judgeDecision({ decision: byKey, round, approvers, decidedBy })).toMatchObject({
      ok: false,
      code: 'SIGNATURE_INVALID',
    });
    const byPolicyKey = {
      ...byKey,
      signature: signValue({ kind: 'decision', value: envelope, privateKey: alicePolicyKey.privateKey }),
    };
    expect(judgeDecision({ decision: byPolicyKey, round, approvers, operators, decidedBy })).toMatchObject({
      ok: false,
      code: 'SIGNATURE_INVALID',
    });
  });
});

describe('a memoised chain verifier', () => {
  it("gives verifyKeyChain's verdicts, for the same input from memory, and keeps at most its bound", () => {
    const verify = memoisedKeyChainVerifier({ maxEntries: 2 });
    const first = verify({ chain, operators, approver: 'alice' });
    expect(first).toEqual(verifyKeyChain({ chain, operators, approver: 'alice' }));
    // The same chain (another object with the same content) is answered from memory.
    expect(verify({ chain: structuredClone(chain), operators, approver: 'alice' })).toBe(first);
    // The verdict depends on the approver and the operators too: neither is taken from memory.
    expect(verify({ chain, operators, approver: 'dave' }).ok).toBe(false);
    expect(verify({ chain, operators: {}, approver: 'alice' }).ok).toBe(false);
    // Bounded: the least recently used verdict was dropped, and is computed again (equal, not the same).
    const again = verify({ chain, operators, approver: 'alice' });
    expect(again).toEqual(first);
    expect(again).not.toBe(first);
  });

  it('never throws on a value canonical JSON cannot digest', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(memoisedKeyChainVerifier()({ chain: cyclic, operators, approver: 'alice' })).toMatchObject({
      ok: false,
    });
  });
});

describe("the registry's answer about a key it does not hold", () => {
  const nowMs = Date.parse('2029-06-01T00:00:00Z');
  const held = (inviteId: string, expiresAt: string, usedBy?: string) => ({
    invite: { invite: { ...invite, inviteId, expiresAt }, signature: 'sig' },
    addedAt: '2029-01-01T00:00:00Z',
    ...(usedBy ? { usedBy } : {}),
  });
  const enrolledKey = { keyId: 'k-used', inviteId: 'inv-used' } as ApproverKeyView;
  const view: ApproverKeysView = {
    invites: [held('inv-open', '2029-06-02T00:00:00Z'), held('inv-late', '2029-05-01T00:00:00Z')],
    // inv-used was dropped from the invites long ago: its key still says it was used.
    keys: [enrolledKey],
  };

  it('says whether its invite is open, expired unused, used (by which key) or unknown', () => {
    expect(inviteStatusIn(view, 'inv-open', nowMs)).toEqual({
      status: 'open',
      expiresAt: '2029-06-02T00:00:00Z',
    });
    expect(inviteStatusIn(view, 'inv-late', nowMs)).toMatchObject({ status: 'expired' });
    expect(inviteStatusIn(view, 'inv-used', nowMs)).toEqual({ status: 'used', by: 'k-used' });
    expect(inviteStatusIn(view, 'inv-never', nowMs)).toEqual({ status: 'unknown' });
  });

  it('tells the invite only when asked, so the answer without one is unchanged', () => {
    expect(keyStatusIn(view, 'k-other')).toEqual({ status: 'unknown' });
    expect(keyStatusIn(view, 'k-other', { inviteId: 'inv-used', nowMs })).toEqual({
      status: 'unknown',
      invite: { status: 'used', by: 'k-used' },
    });
    expect(keyStatusIn(view, 'k-used', { inviteId: 'inv-used', nowMs })).toMatchObject({
      status: 'enrolled',
    });
  });
});

describe('what a call learns from the registry about enrolled keys', () => {
  const verified = (_name: string, inviteId = 'inv-1'): VerifiedKey => {
    const publicKey = publicKeyHex(pair().publicKey);
    return { keyId: keyIdOf(publicKey), publicKeyHex: publicKey, approver: 'alice', inviteId };
  };
  const held = (key: VerifiedKey, revoked = false) =>
    ({
      keyId: key.keyId,
      publicKeyHex: key.publicKeyHex,
      approver: key.approver,
      inviteId: key.inviteId,
      ...(revoked ? { revoked: { at: 'then', operator: 'olivia', reason: 'lost' } } : {}),
    }) as ApproverKeyView;

  it('refuses a revoked key from then on, and no other key of its invite', () => {
    const learned = new LearnedKeyStatuses();
    const lost = verified('lost');
    expect(learned.refusal(lost)).toBeUndefined();
    expect(learned.learn(lost, { status: 'revoked', key: held(lost, true) })).toMatchObject({
      code: 'KEY_REVOKED',
    });
    expect(learned.refusal(lost)).toMatchObject({ code: 'KEY_REVOKED' });
    const sibling = learned.refusal(verified('sibling'));
    expect(sibling?.code).toBe('KEY_UNKNOWN');
    expect(sibling?.reason).toContain('enrolled another key');
  });

  it('once an invite is known used by K, refuses every other key chained to it and still asks about K', () => {
    const learned = new LearnedKeyStatuses();
    const legitimate = verified('laptop');
    const minted = verified('eve');
    expect(
      learned.learn(minted, { status: 'unknown', invite: { status: 'used', by: legitimate.keyId } }),
    ).toMatchObject({ code: 'KEY_UNKNOWN' });
    for (let n = 0; n < 3; n++) {
      expect(learned.refusal(verified(`eve-${n}`))).toMatchObject({ code: 'KEY_UNKNOWN' });
    }
    expect(learned.refusal(legitimate)).toBeUndefined();
    expect(learned.isVerifiedEnrolled(legitimate)).toBe(false);
    expect(learned.learn(legitimate, { status: 'enrolled', key: held(legitimate) })).toBeUndefined();
    expect(learned.isVerifiedEnrolled(legitimate)).toBe(true);
  });

  it('refuses every key of an invite expired unused or unknown, but remembers nothing while it is open', () => {
    const learned = new LearnedKeyStatuses();
    const early = verified('early', 'inv-open');
    expect(
      learned.learn(early, {
        status: 'unknown',
        invite: { status: 'open', expiresAt: '2099-01-01T00:00:00Z' },
      }),
    ).toMatchObject({ code: 'KEY_UNKNOWN' });
    // Its holder may enrol it a minute later: only the registry can tell.
    expect(learned.refusal(early)).toBeUndefined();
    learned.learn(verified('late', 'inv-late'), {
      status: 'unknown',
      invite: { status: 'expired', expiresAt: '2020-01-01T00:00:00Z' },
    });
    const late = learned.refusal(verified('late-2', 'inv-late'));
    expect(late?.code).toBe('KEY_UNKNOWN');
    expect(late?.reason).toContain('expired unused');
    learned.learn(verified('nowhere', 'inv-nowhere'), { status: 'unknown', invite: { status: 'unknown' } });
    expect(learned.refusal(verified('nowhere-2', 'inv-nowhere'))).toMatchObject({ code: 'KEY_UNKNOWN' });
  });

  it('remembers an unknown key whose answer tells no invite (recorded before answers did)', () => {
    const learned = new LearnedKeyStatuses();
    const stranger = verified('stranger');
    learned.learn(stranger, { status: 'unknown' });
    expect(learned.refusal(stranger)).toMatchObject({ code: 'KEY_UNKNOWN' });
    expect(learned.refusal(verified('other'))).toBeUndefined();
  });

  it('does not take a registry key with the same id but another public key for this one', () => {
    const learned = new LearnedKeyStatuses();
    const key = verified('laptop');
    const impostor = { ...held(key), publicKeyHex: publicKeyHex(pair().publicKey) };
    expect(learned.learn(key, { status: 'enrolled', key: impostor })).toMatchObject({ code: 'KEY_UNKNOWN' });
    expect(learned.isVerifiedEnrolled(key)).toBe(false);
  });
});
