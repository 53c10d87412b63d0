import type { KeyChain } from '../approver-keys/protocol';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';
import type { SignedGrant } from '../grants/protocol';

/** What an approver signs: one decision for one round of one run of one call. */
export interface DecisionEnvelope {
  callId: string;
  runId: string;
  nonce: string;
  argsDigest: string;
  previewDigest: string;
  /**
   * The tool's contract the round was opened under, as it would run (schemas without descriptions,
   * effect, codes, key fields, functions: see `contractDigestOf`); a deploy that changes it while the
   * call waits closes the round, and the minter recomputes it from its own registry.
   */
  contractDigest: string;
  decision: 'approve' | 'deny';
  approver: string;
  reason: string;
  /** ISO time the approver signed it (informational; the round's expiry is what bounds it). */
  issuedAt: string;
}

/** The longest reason a decision may give: what the console's form takes, and what the model is told. */
export const maxDecisionReasonLength = 2_000;

/**
 * A decision with its Ed25519 signature (base64url) over kind `decision`: by the approver's key in
 * the policy, or, when `key` is given, by the key that chain enrolled for the approver.
 */
export interface SignedDecision {
  envelope: DecisionEnvelope;
  signature: string;
  /** The enrolled key's chain (operator-signed invite, doubly signed enrolment); absent for the policy's key. */
  key?: KeyChain;
}

/**
 * What an approver signs to edit a call's arguments in an open round (kind `edit`): bound to that
 * round like a decision (call, run, nonce, the digests of its arguments, preview and contract), with
 * the arguments as they would run and their digest. An edit approves nothing: the call is judged
 * again with them and asked in a new round, where the approvers sign the edited digests.
 */
export interface EditEnvelope {
  callId: string;
  runId: string;
  nonce: string;
  argsDigest: string;
  previewDigest: string;
  contractDigest: string;
  /** Every field as it would run, bound parameters as the round has them. */
  editedArgs: Record<string, unknown>;
  /** `digestOf(editedArgs)`. */
  editedDigest: string;
  approver: string;
  reason: string;
  issuedAt: string;
}

/** An edit with its Ed25519 signature (base64url) over kind `edit`, like a `SignedDecision`. */
export interface SignedEdit {
  envelope: EditEnvelope;
  signature: string;
  key?: KeyChain;
}

/**
 * The nonce of an approval round, derived (never drawn) from the run, the round number and the
 * preview's digest, so a replayed workflow computes the same one after a code change.
 */
export function approvalNonce(input: {
  runId: string;
  round: number;
  previewDigest: string;
  /**
   * A chain's step after the first (from 2): each has a nonce of its own, so a decision signed for one
   * step never counts for another. The first step's is the round's.
   */
  step?: number;
}): string {
  const parts = ['toolgate/v1/approval-round', input.runId, input.round, input.previewDigest];
  return sha256Hex(
    canonicalJson(input.step !== undefined && input.step > 1 ? [...parts, input.step] : parts),
  );
}

/** The approval a write carries to the minter: a round's signed decisions, or a standing grant's use. */
export type ExecutionApproval = RoundApproval | GrantApproval;

/** Approved in a round: the round, with the signed decisions. */
export interface RoundApproval {
  round: number;
  nonce: string;
  previewDigest: string;
  decisions: SignedDecision[];
  /**
   * The edits that made the arguments the round approved, in order: each signed by an approver and
   * bound to the round it edited; the last one's `editedDigest` is the digest of what runs.
   */
  edits?: SignedEdit[];
}

/**
 * Covered by a standing grant: the signed grant, and the reservation whose use the grants workflow
 * holds (a write's call id). The minter verifies the grant against its own policy and asks the grants
 * workflow whether it holds that use.
 */
export interface GrantApproval {
  grant: SignedGrant;
  reservationId: string;
}

/** What a credential says: the one operation on one resource that one call may perform, briefly. */
export interface CredentialClaims {
  /** The operation: the tool's name, e.g. `refund_order`. */
  op: string;
  /** What it may touch, e.g. `order:ORD-1001`. */
  resource: string;
  /** The call id, which the backend must see as the idempotency key. */
  callId: string;
  /** SHA-256 of the canonical validated arguments. */
  argsDigest: string;
  /** Unique per credential; a backend accepts each once. */
  jti: string;
  /** Issue time, in seconds since the epoch; backends bound the lifetime `exp - iat`. */
  iat: number;
  /** Expiry, in seconds since the epoch; at most `maxCredentialSeconds` after `iat`. */
  exp: number;
  /** The end user the call acts for, when its context named one: a backend refuses it for another's resource. */
  onBehalfOf?: string;
  /** What the write rests on: the approvers whose decisions the minter verified, or the standing grant. */
  approval?: { approvers: string[] } | { grant: string };
}

/** The longest a credential lives, in seconds. */
export const maxCredentialSeconds = 60;
