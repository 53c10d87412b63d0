import type { KeyObject } from 'node:crypto';
import { canonicalJson } from '../shared/canonical-json';
import type { CredentialClaims } from '../approvals/protocol';
import { maxCredentialSeconds } from '../approvals/protocol';
import { verifySignature } from '../shared/signatures';
import { signValue } from '../keys/key-files';

/** Signs claims with the minter key: `base64url(canonical claims JSON) + "." + base64url(signature)`. */
export function signCredential(input: { claims: CredentialClaims; privateKey: KeyObject }): string {
  const signature = signValue({ kind: 'credential', value: input.claims, privateKey: input.privateKey });
  return `${Buffer.from(canonicalJson(input.claims), 'utf8').toString('base64url')}.${signature}`;
}

/** How far ahead of the backend's clock a minter's clock may be: a credential issued later than this is refused. */
export const credentialClockSkewSeconds = 5;

/** Why a credential was refused, as a backend reports it. */
export type CredentialRefusal =
  | 'CREDENTIAL_MISSING'
  | 'CREDENTIAL_INVALID'
  | 'CREDENTIAL_EXPIRED'
  | 'CREDENTIAL_SCOPE_MISMATCH'
  | 'CREDENTIAL_REPLAYED';

/** The request a credential must cover, as the backend sees it: the claims it must match exactly. */
export type ExpectedCredentialScope = Pick<CredentialClaims, 'op' | 'resource' | 'callId' | 'argsDigest'>;

/** Options of {@link verifyCredential}. */
export interface VerifyCredentialInput {
  /** The credential as sent (the bearer token); null or empty when the request carried none. */
  token: string | null;
  /** The minter's raw Ed25519 public key, 64 hex characters (`readPublicKeyHex` of its `.pub` file). */
  minterPublicKeyHex: string;
  expected: ExpectedCredentialScope;
  /**
   * Whose the resource is (a customer id), when the backend knows: a credential minted for another
   * end user (its `onBehalfOf`) is refused. A credential for no end user (an internal caller) is not.
   */
  resourceOwner?: string;
  /** The backend's clock, in seconds since the epoch (default now). */
  nowSeconds?: number;
}

/** What {@link verifyCredential} concludes: the verified claims, or the refusal's code and reason. */
export type CredentialVerification =
  { ok: true; claims: CredentialClaims } | { ok: false; code: CredentialRefusal; message: string };

/**
 * Checks a credential as a backend must: the minter's signature; its time bounds, which a genuine
 * signature does not excuse (an issue time `iat` no later than now plus the clock skew, a lifetime
 * `exp - iat` of at most `maxCredentialSeconds`, an expiry not passed); and that it was minted for
 * exactly this operation, resource, idempotency key and arguments. `jti` reuse is the backend's
 * own check (it needs storage). Returns the claims, or why they are refused.
 */
export function verifyCredential(input: VerifyCredentialInput): CredentialVerification {
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
  // The signature says who minted it, not that it is short-lived: a leaked minter key or a minter
  // bug must not yield a credential that works for years, so its lifetime is bounded here too.
  const { iat, exp } = claims as { iat?: unknown; exp?: unknown };
  if (typeof iat !== 'number' || !Number.isFinite(iat)) {
    return {
      ok: false,
      code: 'CREDENTIAL_INVALID',
      message: 'The credential has no numeric issue time (iat), so its lifetime cannot be bounded.',
    };
  }
  if (typeof exp === 'number' && exp - iat > maxCredentialSeconds) {
    return {
      ok: false,
      code: 'CREDENTIAL_INVALID',
      message: `The credential lives ${exp - iat} s, longer than the ${maxCredentialSeconds} s a credential may live.`,
    };
  }
  if (iat > now + credentialClockSkewSeconds) {
    return {
      ok: false,
      code: 'CREDENTIAL_INVALID',
      message: `The credential was issued ${iat - now} s in the future, more than the ${credentialClockSkewSeconds} s of clock skew allowed.`,
    };
  }
  if (typeof exp !== 'number' || exp < now) {
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
  const onBehalfOf = (claims as { onBehalfOf?: unknown }).onBehalfOf;
  if (onBehalfOf !== undefined && input.resourceOwner !== undefined && onBehalfOf !== input.resourceOwner) {
    return {
      ok: false,
      code: 'CREDENTIAL_SCOPE_MISMATCH',
      message: 'The credential was minted for another end user; it does not cover their resource.',
    };
  }
  return { ok: true, claims };
}
