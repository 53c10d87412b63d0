import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SignatureCheck, SignedKind } from '../shared/signatures';
import { signedText } from '../shared/signatures';

/** Who a key belongs to: a caller (agent harness), an approver or an operator (a person), or the credential minter. */
export type KeyOwner =
  | { kind: 'caller'; name: string }
  | { kind: 'approver'; name: string }
  | { kind: 'operator'; name: string }
  | { kind: 'minter' };

/**
 * Where a key pair lives under a keys folder: `callers/NAME`, `approvers/NAME`, `operators/NAME` or
 * `minter`, `.key` and `.pub`.
 */
export function keyPaths(input: { directory: string; owner: KeyOwner }): {
  privateKey: string;
  publicKey: string;
} {
  const { owner } = input;
  const base = owner.kind === 'minter' ? 'minter' : join(`${owner.kind}s`, owner.name);
  return {
    privateKey: join(input.directory, `${base}.key`),
    publicKey: join(input.directory, `${base}.pub`),
  };
}

/**
 * Writes a new Ed25519 key pair as PEM files (the private half readable by its owner only).
 * Refuses to overwrite an existing key unless `replace` is set, so a key is never lost by accident.
 */
export function generateKeyPairFiles(input: { directory: string; owner: KeyOwner; replace?: boolean }): {
  privateKey: string;
  publicKey: string;
  created: boolean;
} {
  const paths = keyPaths(input);
  if (existsSync(paths.privateKey) && !input.replace) return { ...paths, created: false };
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  mkdirSync(dirname(paths.privateKey), { recursive: true });
  writeFileSync(paths.privateKey, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  writeFileSync(paths.publicKey, publicKey.export({ format: 'pem', type: 'spki' }));
  return { ...paths, created: true };
}

/** Reads a private key file (PEM, PKCS#8 Ed25519). */
export function readPrivateKey(path: string): KeyObject {
  return createPrivateKey(readFileSync(path));
}

/** Reads a public key file (PEM, SPKI Ed25519) as the raw 32-byte key in hex, the form workflows verify with. */
export function readPublicKeyHex(path: string): string {
  return publicKeyHex(createPublicKey(readFileSync(path)));
}

/** The raw 32-byte Ed25519 public key, in hex. */
export function publicKeyHex(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' }) as { x?: string; crv?: string };
  if (jwk.crv !== 'Ed25519' || !jwk.x) throw new Error('not an Ed25519 key');
  return Buffer.from(jwk.x, 'base64url').toString('hex');
}

/** Signs `value` as `kind` with node:crypto; the signature verifies with `verifySignature` in the sandbox. */
export function signValue(input: { kind: SignedKind; value: unknown; privateKey: KeyObject }): string {
  return sign(null, Buffer.from(signedText(input), 'utf8'), input.privateKey).toString('base64url');
}

const publicKeys = new Map<string, KeyObject>();

/**
 * Verifies an Ed25519 signature with node:crypto (native, about a thousand times faster than the
 * pure-JS verifier the workflow sandbox would use); the same bytes and the same answer. Never throws.
 */
export function verifyWithNode(input: SignatureCheck): boolean {
  try {
    let key = publicKeys.get(input.publicKeyHex);
    if (!key) {
      const x = Buffer.from(input.publicKeyHex, 'hex');
      if (x.length !== 32) return false;
      key = createPublicKey({
        key: { kty: 'OKP', crv: 'Ed25519', x: x.toString('base64url') },
        format: 'jwk',
      });
      publicKeys.set(input.publicKeyHex, key);
    }
    const signature = Buffer.from(input.signature, 'base64url');
    if (signature.length !== 64) return false;
    return verify(null, Buffer.from(signedText(input), 'utf8'), key, signature);
  } catch {
    return false;
  }
}
