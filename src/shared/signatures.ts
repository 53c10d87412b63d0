import type { ed25519 as Ed25519 } from '@noble/curves/ed25519';
import { hexToBytes, utf8ToBytes } from '@noble/hashes/utils';
import { canonicalJson } from './canonical-json';

/** What a signature covers; the kind is part of the signed bytes, so one kind can never pass for another. */
export type SignedKind =
  | 'proposal'
  | 'decision'
  // an approver editing a call's arguments in an open round, before approving them
  | 'edit'
  | 'credential'
  | 'admission'
  | 'invite'
  | 'enrolment'
  | 'key-revocation'
  // an approver's browser answering the approvals console's sign-in challenge
  | 'login'
  // a caller's harness or an operator cancelling a call that waits for approval
  | 'cancellation'
  // an operator turning a tool off or on (the kill switch)
  | 'tool-switch'
  // approvers granting a caller a bounded standing approval, and its revocation
  | 'grant'
  | 'grant-revocation'
  // a caller's harness ending its session, and an operator resetting a session's circuits
  | 'session-end'
  | 'session-reset'
  // an approver or an operator lifting a remembered denial: the same call may be asked again
  | 'denial-lift';

/** The exact bytes signed: `"toolgate/v1/<kind>\n" + canonical JSON`. */
export function signedText(input: { kind: SignedKind; value: unknown }): string {
  return `toolgate/v1/${input.kind}\n${canonicalJson(input.value)}`;
}

/** A signature to check: base64url Ed25519 over `signedText({ kind, value })`, by a raw public key (hex). */
export interface SignatureCheck {
  kind: SignedKind;
  value: unknown;
  signature: string;
  publicKeyHex: string;
}

/**
 * Verifies an Ed25519 signature (base64url) by a raw public key (hex). Pure JS, so it runs in the
 * workflow sandbox; never throws: a malformed key or signature is simply not valid.
 */
export function verifySignature(input: SignatureCheck): boolean {
  try {
    const signature = base64UrlToBytes(input.signature);
    const publicKey = hexToBytes(input.publicKeyHex);
    if (signature.length !== 64 || publicKey.length !== 32) return false;
    return curve().verify(signature, utf8ToBytes(signedText(input)), publicKey);
  } catch {
    return false;
  }
}

let loaded: typeof Ed25519 | undefined;

/**
 * The curve, loaded on first use: the workflow sandbox initialises every imported module for each
 * workflow it runs, and most calls never verify a decision, so they should not pay for the curve.
 */
function curve(): typeof Ed25519 {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- deliberately lazy, see above
  loaded ??= (require('@noble/curves/ed25519') as { ed25519: typeof Ed25519 }).ed25519;
  return loaded;
}

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Decodes base64url (no padding) without Node's Buffer, which the sandbox lacks. */
export function base64UrlToBytes(text: string): Uint8Array {
  const clean = text.replace(/=+$/, '');
  if (!/^[A-Za-z0-9_-]*$/.test(clean)) throw new Error('not base64url');
  const bytes: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const character of clean) {
    buffer = (buffer << 6) | alphabet.indexOf(character);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((buffer >> bits) & 0xff);
    }
  }
  return Uint8Array.from(bytes);
}
