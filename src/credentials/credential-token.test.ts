import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { credentialClockSkewSeconds, signCredential, verifyCredential } from './credential-token';
import { publicKeyHex } from '../keys/key-files';
import type { CredentialClaims } from '../approvals/protocol';
import { maxCredentialSeconds } from '../approvals/protocol';

const minterKeys = generateKeyPairSync('ed25519');
const now = 1_800_000_000;
const expected = {
  op: 'refund_order',
  resource: 'order:ORD-1001',
  callId: 'tc-call',
  argsDigest: 'a'.repeat(64),
};

const claimsOf = (overrides: Record<string, unknown> = {}): CredentialClaims => ({
  ...expected,
  jti: randomUUID(),
  iat: now,
  exp: now + maxCredentialSeconds,
  ...overrides,
});

/** Verifies claims signed with the minter's own key: whatever is refused here, the signature is genuine. */
const verify = (claims: CredentialClaims, nowSeconds = now) =>
  verifyCredential({
    token: signCredential({ claims, privateKey: minterKeys.privateKey }),
    minterPublicKeyHex: publicKeyHex(minterKeys.publicKey),
    expected,
    nowSeconds,
  });

describe('a backend bounds the life of a credential, whoever signed it', () => {
  it(`accepts a credential that lives exactly ${maxCredentialSeconds} s from its issue time`, () => {
    expect(verify(claimsOf())).toMatchObject({ ok: true, claims: { iat: now } });
    expect(verify(claimsOf(), now + maxCredentialSeconds).ok).toBe(true);
  });

  it('refuses a credential that expires in the year 33658, although the minter signed it', () => {
    const result = verify(claimsOf({ exp: 10 ** 12 }));
    expect(result).toMatchObject({ ok: false, code: 'CREDENTIAL_INVALID' });
    expect(!result.ok && result.message).toContain(`longer than the ${maxCredentialSeconds} s`);
  });

  it(`refuses a credential that lives ${maxCredentialSeconds + 1} s`, () => {
    expect(verify(claimsOf({ exp: now + maxCredentialSeconds + 1 }))).toMatchObject({
      ok: false,
      code: 'CREDENTIAL_INVALID',
    });
  });

  it.each([
    ['no issue time', undefined],
    ['an issue time that is text', String(now)],
    ['an issue time that is null', null],
  ])('refuses a credential with %s', (_label, iat) => {
    const result = verify(claimsOf({ iat }));
    expect(result).toMatchObject({ ok: false, code: 'CREDENTIAL_INVALID' });
    expect(!result.ok && result.message).toContain('iat');
  });

  it('refuses a credential issued in the future beyond the clock skew', () => {
    const issued = now + credentialClockSkewSeconds + 1;
    const result = verify(claimsOf({ iat: issued, exp: issued + 10 }));
    expect(result).toMatchObject({ ok: false, code: 'CREDENTIAL_INVALID' });
    expect(!result.ok && result.message).toContain('future');
  });

  it('accepts a credential issued within the clock skew ahead of the backend', () => {
    const issued = now + credentialClockSkewSeconds;
    expect(verify(claimsOf({ iat: issued, exp: issued + maxCredentialSeconds })).ok).toBe(true);
  });

  it('still refuses an expired credential as CREDENTIAL_EXPIRED', () => {
    expect(verify(claimsOf(), now + maxCredentialSeconds + 1)).toMatchObject({
      ok: false,
      code: 'CREDENTIAL_EXPIRED',
    });
  });
});
