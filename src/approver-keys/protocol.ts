import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { digestOf, sha256Hex } from '../shared/canonical-json';
import { ownValue } from '../shared/own-records';
import { verifySignature } from '../shared/signatures';

/*
 * Approvers' enrolled keys: an approver may hold several keys (CLI, laptop, phone), each enrolled
 * through an invite an operator signed, each revocable. What is signed, the pure checks of a key's
 * chain (shared by the call workflow's validator, the credential minter and the registry), what a
 * call learns from the registry's answers, and the registry workflow's messages. Pure and
 * sandbox-safe: no Node built-ins, no clock.
 */

/** An operator's invitation for one approver to enrol one key, proved by the invite key's private half. */
export interface Invite {
  inviteId: string;
  approver: string;
  /** The invite key's public half (raw hex); its private half travels in the link's fragment only. */
  invitePublicKeyHex: string;
  /** The operator who signed it: must be in the policy's `operators`. */
  operator: string;
  /** ISO time after which the registry refuses to enrol with it. */
  expiresAt: string;
}

/** An invite with the operator's Ed25519 signature (base64url), kind `invite`. */
export interface SignedInvite {
  invite: Invite;
  signature: string;
}

/** What an enrolling approver signs: the new key, for this approver, through this invite. */
export interface Enrolment {
  inviteId: string;
  approver: string;
  /** The enrolled key's public half (raw hex). */
  publicKeyHex: string;
  /** A name the approver gives the key (`laptop`, `phone`), for lists and audits. */
  label: string;
}

/**
 * An enrolment signed twice, kind `enrolment`: by the invite key (the right to enrol) and by the
 * enrolled key itself (possession of it).
 */
export interface SignedEnrolment {
  enrolment: Enrolment;
  inviteSignature: string;
  keySignature: string;
}

/** Everything a verifier needs to trust an enrolled key without the registry: the invite and the enrolment, signed. */
export interface KeyChain {
  invite: SignedInvite;
  enrolment: SignedEnrolment;
}

/** An operator's revocation of one enrolled key, kind `key-revocation`. */
export interface KeyRevocation {
  keyId: string;
  operator: string;
  reason: string;
  /** ISO time the operator signed it (informational). */
  issuedAt: string;
}

/** A revocation with the operator's signature (base64url). */
export interface SignedKeyRevocation {
  revocation: KeyRevocation;
  signature: string;
}

/**
 * The stable short id of a public key: the first 16 hex digits of SHA-256 over the key's lowercase
 * hex. For lists and revocations only; every check compares the full public key as well.
 */
export function keyIdOf(publicKeyHex: string): string {
  return sha256Hex(`toolgate/v1/key-id\n${publicKeyHex.toLowerCase()}`).slice(0, 16);
}

const hexKey = /^[0-9a-f]{64}$/;

/** True when `value` has the shape of a signed invite (every field a string, the key 64 lowercase hex). Never throws. */
export function isSignedInvite(value: unknown): value is SignedInvite {
  if (!isRecord(value) || typeof value.signature !== 'string' || !isRecord(value.invite)) return false;
  const { invite } = value;
  return (
    ['inviteId', 'approver', 'invitePublicKeyHex', 'operator', 'expiresAt'].every(
      (field) => typeof invite[field] === 'string' && invite[field] !== '',
    ) && hexKey.test(invite.invitePublicKeyHex as string)
  );
}

/** True when `value` has the shape of a signed enrolment. Never throws. */
export function isSignedEnrolment(value: unknown): value is SignedEnrolment {
  if (!isRecord(value) || !isRecord(value.enrolment)) return false;
  if (typeof value.inviteSignature !== 'string' || typeof value.keySignature !== 'string') return false;
  const { enrolment } = value;
  return (
    ['inviteId', 'approver', 'publicKeyHex', 'label'].every(
      (field) => typeof enrolment[field] === 'string',
    ) && hexKey.test(enrolment.publicKeyHex as string)
  );
}

/** True when `value` has the shape of a signed revocation. Never throws. */
export function isSignedKeyRevocation(value: unknown): value is SignedKeyRevocation {
  if (!isRecord(value) || typeof value.signature !== 'string' || !isRecord(value.revocation)) return false;
  const { revocation } = value;
  return ['keyId', 'operator', 'reason', 'issuedAt'].every((field) => typeof revocation[field] === 'string');
}

/** What a verified enrolment says: the enrolled key and whose it is. */
export interface VerifiedKey {
  keyId: string;
  publicKeyHex: string;
  approver: string;
  inviteId: string;
}

/** A chain's verdict: the key it proves, or why it proves nothing. */
export type KeyChainVerdict = { ok: true; key: VerifiedKey } | { ok: false; reason: string };

/**
 * Checks an enrolment's two signatures against its invite: same invite, same approver, signed by the
 * invite's key (the right to enrol) and by the enrolled key (possession), which may not be the invite
 * key itself (its private half travelled in a link). Pure; never throws.
 */
export function verifyEnrolment(input: { invite: Invite; enrolment: unknown }): KeyChainVerdict {
  const { invite, enrolment: signed } = input;
  if (!isSignedEnrolment(signed)) return { ok: false, reason: 'not a signed enrolment' };
  const { enrolment } = signed;
  if (enrolment.inviteId !== invite.inviteId)
    return { ok: false, reason: 'the enrolment names another invite' };
  if (enrolment.approver !== invite.approver) {
    return { ok: false, reason: 'the enrolment names another approver than its invite' };
  }
  if (enrolment.publicKeyHex === invite.invitePublicKeyHex) {
    return { ok: false, reason: 'the invite key itself cannot be enrolled' };
  }
  const byInvite = verifySignature({
    kind: 'enrolment',
    value: enrolment,
    signature: signed.inviteSignature,
    publicKeyHex: invite.invitePublicKeyHex,
  });
  if (!byInvite) return { ok: false, reason: "the enrolment is not signed with the invite's key" };
  const byKey = verifySignature({
    kind: 'enrolment',
    value: enrolment,
    signature: signed.keySignature,
    publicKeyHex: enrolment.publicKeyHex,
  });
  if (!byKey) return { ok: false, reason: 'the enrolment is not signed with the enrolled key' };
  return {
    ok: true,
    key: {
      keyId: keyIdOf(enrolment.publicKeyHex),
      publicKeyHex: enrolment.publicKeyHex,
      approver: enrolment.approver,
      inviteId: enrolment.inviteId,
    },
  };
}

/**
 * Verifies a key's whole chain purely: the invite signed by one of `operators` (own properties
 * only), the enrolment signed by that invite's key and by the enrolled key, and `approver` named by
 * both. Whether the key is still enrolled and not revoked is the registry's answer, not this one.
 * Never throws.
 */
export function verifyKeyChain(input: {
  chain: unknown;
  /** The operators' public keys (raw hex) by name, as the policy snapshot recorded them. */
  operators: Readonly<Record<string, string>> | undefined;
  approver: string;
}): KeyChainVerdict {
  const { chain } = input;
  if (!isRecord(chain) || !isSignedInvite(chain.invite)) return { ok: false, reason: 'not a key chain' };
  const { invite } = chain.invite;
  const operatorKey = ownValue(input.operators, invite.operator);
  if (!operatorKey) return { ok: false, reason: `the invite names no known operator (${invite.operator})` };
  const signed = verifySignature({
    kind: 'invite',
    value: invite,
    signature: chain.invite.signature,
    publicKeyHex: operatorKey,
  });
  if (!signed) return { ok: false, reason: "the invite is not signed with its operator's key" };
  if (invite.approver !== input.approver)
    return { ok: false, reason: 'the key was enrolled for another approver' };
  return verifyEnrolment({ invite, enrolment: chain.enrolment });
}

// The registry: one long-lived workflow per task queue holding invites and enrolled keys.

/** The registry workflow's type. */
export const approverKeysWorkflowType = 'toolgateApproverKeys';

/** The registry's workflow id for a task queue: `toolgate-approver-keys` on the default queue. */
export function approverKeysWorkflowId(taskQueue: string): string {
  return taskQueue === 'toolgate' ? 'toolgate-approver-keys' : `toolgate-approver-keys:${taskQueue}`;
}

/** An invite as the registry lists it (its signature included: nothing in it is secret). */
export interface InviteView {
  invite: SignedInvite;
  addedAt: string;
  /** The key enrolled with it, once used. */
  usedBy?: string;
}

/** An enrolled key as the registry lists it. */
export interface ApproverKeyView {
  keyId: string;
  approver: string;
  publicKeyHex: string;
  label: string;
  inviteId: string;
  /** The invite's operator: who let this key in. */
  invitedBy: string;
  enrolledAt: string;
  revoked?: { at: string; operator: string; reason: string };
  /** The key's chain, all of it public: decisions signed with the key attach it. */
  invite: SignedInvite;
  enrolment: SignedEnrolment;
}

/** The registry's contents: every invite it holds and every key ever enrolled, revoked ones included. */
export interface ApproverKeysView {
  invites: InviteView[];
  keys: ApproverKeyView[];
}

/**
 * What the registry knows of an invite, told along with a key it does not hold: whether that key may
 * still be enrolled through it (`open`), or never will be (`used` by another key, `expired` unused,
 * `unknown`: neither held nor used by any key).
 */
export type InviteStatus =
  | { status: 'open'; expiresAt: string }
  | { status: 'expired'; expiresAt: string }
  /** `by` is the key id of the one key it enrolled. */
  | { status: 'used'; by: string }
  | { status: 'unknown' };

/**
 * What the registry says of one key now; `enrolled` only when the key is there and not revoked. An
 * unknown key's answer tells its invite's status when the asker named the invite (optional, so answers
 * recorded before it existed still replay).
 */
export type ApproverKeyStatus =
  | { status: 'enrolled'; key: ApproverKeyView }
  | { status: 'revoked'; key: ApproverKeyView }
  | { status: 'unknown'; invite?: InviteStatus };

/** The registry's answer to a change it accepted. */
export interface RegistryReceipt {
  accepted: true;
  inviteId?: string;
  keyId?: string;
}

/** Registers an operator-signed invite. */
export const addInviteUpdate = defineUpdate<RegistryReceipt, [SignedInvite]>('addInvite');
/** Enrols a key through an unused, unexpired invite (once per invite). */
export const enrolKeyUpdate = defineUpdate<RegistryReceipt, [SignedEnrolment]>('enrolKey');
/** Revokes an enrolled key, signed by an operator. */
export const revokeKeyUpdate = defineUpdate<RegistryReceipt, [SignedKeyRevocation]>('revokeKey');
/** Reads the registry's contents; pure. */
export const approverKeysQuery = defineQuery<ApproverKeysView>('approverKeys');

/**
 * The status of `keyId` in a registry view; for an unknown key, with `invite` named, also that
 * invite's status at `nowMs`. Pure.
 */
export function keyStatusIn(
  view: ApproverKeysView,
  keyId: string,
  invite?: { inviteId: string; nowMs: number },
): ApproverKeyStatus {
  const key = view.keys.find((candidate) => candidate.keyId === keyId);
  if (key) return key.revoked ? { status: 'revoked', key } : { status: 'enrolled', key };
  return invite
    ? { status: 'unknown', invite: inviteStatusIn(view, invite.inviteId, invite.nowMs) }
    : { status: 'unknown' };
}

/** The status of one invite in a registry view at `nowMs`: used (by which key), open, expired unused, or unknown. Pure. */
export function inviteStatusIn(view: ApproverKeysView, inviteId: string, nowMs: number): InviteStatus {
  // A used invite stays used after the registry dropped the invite itself: its key says so.
  const user = view.keys.find((candidate) => candidate.inviteId === inviteId);
  if (user) return { status: 'used', by: user.keyId };
  const held = view.invites.find((candidate) => candidate.invite.invite.inviteId === inviteId);
  if (!held) return { status: 'unknown' };
  if (held.usedBy !== undefined) return { status: 'used', by: held.usedBy };
  const { expiresAt } = held.invite.invite;
  return Date.parse(expiresAt) <= nowMs ? { status: 'expired', expiresAt } : { status: 'open', expiresAt };
}

/**
 * `verifyKeyChain` remembering its last `maxEntries` verdicts by the digest of its input (chain,
 * operators, approver): a chain sent again costs a SHA-256, not three Ed25519 verifications. Same
 * verdicts as `verifyKeyChain`; pure apart from its own bounded memory; never throws.
 */
export function memoisedKeyChainVerifier(
  options: { maxEntries?: number } = {},
): (input: Parameters<typeof verifyKeyChain>[0]) => KeyChainVerdict {
  const maxEntries = Math.max(1, options.maxEntries ?? 128);
  const verdicts = new Map<string, KeyChainVerdict>();
  return (input) => {
    let digest: string;
    try {
      digest = digestOf({ chain: input.chain, operators: input.operators ?? null, approver: input.approver });
    } catch {
      return verifyKeyChain(input);
    }
    const known = verdicts.get(digest);
    if (known) {
      // Most recently used last: the oldest entry is the one dropped.
      verdicts.delete(digest);
      verdicts.set(digest, known);
      return known;
    }
    const verdict = verifyKeyChain(input);
    verdicts.set(digest, verdict);
    if (verdicts.size > maxEntries) {
      const oldest = verdicts.keys().next();
      if (!oldest.done) verdicts.delete(oldest.value);
    }
    return verdict;
  };
}

/** Why a call refuses an enrolled key's decision without asking the registry again. */
export interface KnownKeyRefusal {
  code: 'KEY_REVOKED' | 'KEY_UNKNOWN';
  reason: string;
}

/** What a call remembers of an invite: it enrolled `by` (a key id) and nothing else, or it enrols nothing. */
type InviteFact = { status: 'used'; by: string } | { status: 'expired' } | { status: 'unknown' };

/**
 * What one call learned from the registry's answers about enrolled keys, so that its update validator
 * refuses at once (leaving no history) what the registry already refused for good. Only facts that
 * never change back are kept: a revoked key stays revoked; an invite enrols one key, so once used by
 * K it enrols no other; an invite expired unused enrols nothing. A key the registry does not hold
 * while its invite is still open is not remembered (its holder may enrol it a minute later); nor is a
 * registry that did not answer. Pure and sandbox-safe: fed only by the handler's recorded answers, so
 * a replay rebuilds the same memory.
 */
export class LearnedKeyStatuses {
  private readonly revoked = new Set<string>();
  private readonly unknown = new Set<string>();
  private readonly enrolled = new Set<string>();
  private readonly invites = new Map<string, InviteFact>();

  /**
   * Learns from the registry's answer about `key` (a chain that verified) and says whether the answer
   * refuses it: `KEY_UNKNOWN` unless the registry holds this very key (same public key, approver and
   * invite), `KEY_REVOKED` when it was revoked.
   */
  learn(key: VerifiedKey, answer: ApproverKeyStatus): KnownKeyRefusal | undefined {
    const publicKeyHex = key.publicKeyHex.toLowerCase();
    if (answer.status === 'unknown') {
      const invite = answer.invite;
      if (invite === undefined) this.unknown.add(publicKeyHex);
      else if (invite.status === 'used') this.invites.set(key.inviteId, { status: 'used', by: invite.by });
      else if (invite.status !== 'open') this.invites.set(key.inviteId, { status: invite.status });
      return { code: 'KEY_UNKNOWN', reason: unknownReason(invite) };
    }
    const same =
      answer.key.publicKeyHex.toLowerCase() === publicKeyHex &&
      answer.key.approver === key.approver &&
      answer.key.inviteId === key.inviteId;
    if (!same) return { code: 'KEY_UNKNOWN', reason: 'this key is not enrolled for this approver' };
    this.invites.set(key.inviteId, { status: 'used', by: answer.key.keyId });
    if (answer.status === 'revoked') {
      this.revoked.add(publicKeyHex);
      this.enrolled.delete(publicKeyHex);
      return { code: 'KEY_REVOKED', reason: 'this key was revoked' };
    }
    this.enrolled.add(publicKeyHex);
    return undefined;
  }

  /** Why `key` is refused from what was learned already; undefined when only the registry can tell. */
  refusal(key: VerifiedKey): KnownKeyRefusal | undefined {
    const publicKeyHex = key.publicKeyHex.toLowerCase();
    if (this.revoked.has(publicKeyHex)) return { code: 'KEY_REVOKED', reason: 'this key was revoked' };
    if (this.unknown.has(publicKeyHex)) {
      return { code: 'KEY_UNKNOWN', reason: 'this key is not enrolled for this approver' };
    }
    const invite = this.invites.get(key.inviteId);
    if (invite === undefined || (invite.status === 'used' && invite.by === key.keyId)) return undefined;
    return { code: 'KEY_UNKNOWN', reason: unknownReason(invite) };
  }

  /** True when the registry said, in an answer this call recorded, that `key` is enrolled (and has not said revoked since). */
  isVerifiedEnrolled(key: VerifiedKey): boolean {
    return this.enrolled.has(key.publicKeyHex.toLowerCase());
  }
}

function unknownReason(invite: InviteFact | InviteStatus | undefined): string {
  switch (invite?.status) {
    case 'used':
      return 'this key is not enrolled: its invite enrolled another key';
    case 'expired':
      return 'this key is not enrolled: its invite expired unused';
    case 'unknown':
      return 'this key is not enrolled: the registry does not know its invite';
    case 'open':
    case undefined:
      return 'this key is not enrolled for this approver';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A registry change attempted, accepted or refused, as the audit store keeps it. */
export interface RegistryEvent {
  /** The update's id: with the outcome, it keys the record, so a retried sink writes once. */
  updateId: string;
  action: 'addInvite' | 'enrolKey' | 'revokeKey';
  /** `accepted`, or the refusal's code. */
  outcome: string;
  operator?: string;
  approver?: string;
  inviteId?: string;
  keyId?: string;
  /** Why it was refused, or what was changed (a key's label, a revocation's reason). */
  detail: string;
  /** Workflow time of the attempt. */
  at: string;
}
