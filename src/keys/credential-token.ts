import type { KeyObject } from 'node:crypto';
import { canonicalJson } from '../shared/canonical-json';
import type { CredentialClaims } from '../shared/approval';
import { verifySignature } from '../shared/signatures';
import { signValue } from './key-files';

/** Signs claims with the minter key: `base64url(canonical claims JSON) + "." + base64url(signature)`. */
export function signCredential(input: { claims: CredentialClaims; privateKey: KeyObject }): string {
  const signature = signValue({ kind: 'credential', value: input.claims, privateKey: input.privateKey });
  return `${Buffer.from(canonicalJson(input.claims), 'utf8').toString('base64url')}.${signature}`;
}

/** Why a credential was refused, as a backend reports it. */
export type CredentialRefusal =
  | 'CREDENTIAL_MISSING'
  | 'CREDENTIAL_INVALID'
  | 'CREDENTIAL_EXPIRED'
  | 'CREDENTIAL_SCOPE_MISMATCH'
  | 'CREDENTIAL_REPLAYED';

/**
 * Checks a credential as a backend must: the minter's signature, the expiry, and that it was
 * minted for exactly this operation, resource, idempotency key and arguments. `jti` reuse is the
 * backend's own check (it needs storage). Returns the claims, or why they are refused.
 */
export function verifyCredential(input: {
  token: string | null;
  minterPublicKeyHex: string;
  expected: { op: string; resource: string; callId: string; argsDigest: string };
  nowSeconds?: number;
}): { ok: true; claims: CredentialClaims } | { ok: false; code: CredentialRefusal; message: string } {
  if (!input.token) {
    return {
      ok: false,
      code: 'CREDENTIAL_MISSING',
      message: 'A write needs a credential minted for this call.',
    };
  }
  const [payload, signature, ...rest] = input.token.split('.');
  let claims: CredentialClaims | undefined;
  try {
    if (payload && signature && !rest.length) {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as CredentialClaims;
    }
  } catch {
    claims = undefined;
  }
  if (
    !claims ||
    typeof claims !== 'object' ||
    !signature ||
    !verifySignature({ kind: 'credential', value: claims, signature, publicKeyHex: input.minterPublicKeyHex })
  ) {
    return { ok: false, code: 'CREDENTIAL_INVALID', message: 'The credential is not one the minter signed.' };
  }
  const now = input.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (typeof claims.exp !== 'number' || claims.exp < now) {
    return {
      ok: false,
      code: 'CREDENTIAL_EXPIRED',
      message: 'The credential has expired; a new attempt mints a new one.',
    };
  }
  for (const field of ['op', 'resource', 'callId', 'argsDigest'] as const) {
    if (claims[field] !== input.expected[field]) {
      return {
        ok: false,
        code: 'CREDENTIAL_SCOPE_MISMATCH',
        message: `The credential was minted for another ${field}; it does not cover this request.`,
      };
    }
  }
  return { ok: true, claims };
}
