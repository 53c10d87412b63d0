import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signEnrolment } from '../admin/approver-keys';
import { publicKeyHex, signValue, verifyWithNode } from '../keys/key-files';
import type { DecisionEnvelope } from './approval';
import type { Invite, KeyChain } from './approver-keys';
import { keyIdOf, verifyKeyChain } from './approver-keys';
import { judgeDecision } from './decision-rules';
import { signedText, verifySignature } from './signatures';

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
