import { generateKeyPairSync, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { publicKeyHex, signValue } from '../keys/key-files';
import { base64UrlToBytes, signedText, verifySignature } from './signatures';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const value = { callId: 'tc-1', amount_cents: 2590, nested: { b: 2, a: 1 } };

describe('signatures', () => {
  it('sign the kind-prefixed canonical JSON, whatever the key order', () => {
    expect(signedText({ kind: 'decision', value: { b: 1, a: 2 } })).toBe(
      'toolgate/v1/decision\n{"a":2,"b":1}',
    );
  });

  it('made with node:crypto verify with the sandbox-safe verifier, and the reverse holds', () => {
    const signature = signValue({ kind: 'proposal', value, privateKey });
    expect(
      verifySignature({
        kind: 'proposal',
        value: { nested: { a: 1, b: 2 }, amount_cents: 2590, callId: 'tc-1' },
        signature,
        publicKeyHex: publicKeyHex(publicKey),
      }),
    ).toBe(true);
    const bytes = Buffer.from(signedText({ kind: 'proposal', value }), 'utf8');
    expect(verify(null, bytes, publicKey, Buffer.from(base64UrlToBytes(signature)))).toBe(true);
  });

  it('refuse another kind, another value, another key and garbage, without throwing', () => {
    const signature = signValue({ kind: 'proposal', value, privateKey });
    const key = publicKeyHex(publicKey);
    expect(verifySignature({ kind: 'decision', value, signature, publicKeyHex: key })).toBe(false);
    expect(
      verifySignature({
        kind: 'proposal',
        value: { ...value, amount_cents: 2591 },
        signature,
        publicKeyHex: key,
      }),
    ).toBe(false);
    const other = publicKeyHex(generateKeyPairSync('ed25519').publicKey);
    expect(verifySignature({ kind: 'proposal', value, signature, publicKeyHex: other })).toBe(false);
    expect(verifySignature({ kind: 'proposal', value, signature: 'not base64!', publicKeyHex: key })).toBe(
      false,
    );
    expect(verifySignature({ kind: 'proposal', value, signature, publicKeyHex: 'zz' })).toBe(false);
  });

  it('decode base64url like Buffer does', () => {
    for (const length of [0, 1, 2, 3, 31, 64]) {
      const bytes = Buffer.from(Array.from({ length }, (_, index) => (index * 37 + 11) % 256));
      expect(Buffer.from(base64UrlToBytes(bytes.toString('base64url')))).toEqual(bytes);
    }
  });
});
