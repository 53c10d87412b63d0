import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  currentUpdateInfo,
  proxyLocalActivities,
  proxySinks,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ApproverKeyActivities } from './activities';
import type {
  ApproverKeysView,
  ApproverKeyView,
  InviteView,
  RegistryEvent,
  RegistryReceipt,
  SignedEnrolment,
  SignedInvite,
  SignedKeyRevocation,
} from './protocol';
import {
  addInviteUpdate,
  approverKeysQuery,
  enrolKeyUpdate,
  isSignedEnrolment,
  isSignedInvite,
  isSignedKeyRevocation,
  keyIdOf,
  revokeKeyUpdate,
  verifyEnrolment,
} from './protocol';
import type { RegistryRefusalCode } from '../shared/codes';
import { nameRecord, ownValue } from '../shared/own-records';
import type { SignedKind } from '../shared/signatures';
import { verifySignature } from '../shared/signatures';
import type { ToolGateSinks } from '../shared/temporal';

/** What the registry carries across continue-as-new: its invites and keys, and the operator keys it last recorded. */
export interface ApproverKeysInput {
  carried?: ApproverKeysView;
  /** The operators' public keys from the policy's last recorded answer, and when the registry asked (ISO). */
  operatorKeys?: { keys: Record<string, string>; askedAt: string };
  /** Continue as new after this many accepted changes in one run (default 500), besides Temporal's suggestion. */
  continueAsNewAfter?: number;
}

/** The longest an invite may be valid: a link that lives for weeks is a key lying around. */
const maxInviteValidityMs = 7 * 24 * 60 * 60 * 1000;
/** Expired, unused invites are kept this long after their expiry (for lists), then dropped at continue-as-new. */
const expiredInvitesKeptMs = 7 * 24 * 60 * 60 * 1000;
const maxNameLength = 200;

const operatorChecks = proxyLocalActivities<ApproverKeyActivities>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 3, initialInterval: '200ms' },
});

type Refusal = { code: RegistryRefusalCode; reason: string };

/**
 * How long the validators trust the operator keys the policy last gave: past this since the handler
 * last asked the policy, a request they cannot verify goes on to the handler, which asks again.
 */
const operatorKeysTrustedForMs = 10 * 60 * 1000;

/**
 * The operators' public keys as the worker's policy last told this registry, for the validators.
 *
 * Why like this: the workflow holds no policy, and its input is not a source of trust (whoever
 * starts it could name any key), so the keys come from the only trusted source it has, the handler's
 * recorded `checkOperatorSignature` answers, which carry the policy's operator keys (answers recorded
 * before they did teach nothing). State fed by recorded answers only is rebuilt identically on
 * replay, and asking nothing new adds no command, so recorded histories still replay. The validator checks a request's signature against these keys, so
 * a forged invite or revocation is refused before it reaches history; the handler still asks the
 * current policy and stays the final check (an operator removed from the policy is refused there).
 * Keys learned a while ago may be stale: an operator added to the policy since, or whose key was
 * rotated, would be refused forever if nothing asked again. So once `operatorKeysTrustedForMs` has
 * passed since the last ask, one request the keys do not verify may reach the handler, which asks the
 * policy (and refreshes the keys) at once: a forger gets at most one accepted update per period, a
 * rotated operator waits at most that long. Before the registry learned any keys (a new registry),
 * the handler checks alone.
 */
class OperatorKeys {
  private keys?: Record<string, string>;
  private askedAtMs = Number.NEGATIVE_INFINITY;

  constructor(carried: ApproverKeysInput['operatorKeys']) {
    if (carried && isStringRecord(carried.keys)) {
      this.keys = nameRecord(carried.keys);
      const askedAtMs = Date.parse(carried.askedAt);
      if (!Number.isNaN(askedAtMs)) this.askedAtMs = askedAtMs;
    }
  }

  /** The handler is asking the policy now (set before it waits, so concurrent validators see it). */
  asking(nowMs: number): void {
    this.askedAtMs = nowMs;
  }

  /** The policy's operator keys from a recorded answer; answers recorded before they carried keys teach nothing. */
  learn(keys: unknown): void {
    if (isStringRecord(keys)) this.keys = nameRecord(keys);
  }

  /** Why the validator refuses an operator's request, from the keys it knows; undefined when the handler must decide. */
  refusal(
    request: { kind: SignedKind; value: unknown; signature: string; operator: string },
    nowMs: number,
  ): Refusal | undefined {
    if (!this.keys || nowMs - this.askedAtMs >= operatorKeysTrustedForMs) return undefined;
    const publicKeyHex = ownValue(this.keys, request.operator);
    if (!publicKeyHex) {
      return { code: 'OPERATOR_UNKNOWN', reason: `no operator "${request.operator}" in the policy` };
    }
    const signed = verifySignature({
      kind: request.kind,
      value: request.value,
      signature: request.signature,
      publicKeyHex,
    });
    return signed
      ? undefined
      : { code: 'SIGNATURE_INVALID', reason: `not signed with ${request.operator}'s key` };
  }

  carry(): ApproverKeysInput['operatorKeys'] {
    if (!this.keys || !Number.isFinite(this.askedAtMs)) return undefined;
    return { keys: { ...this.keys }, askedAt: new Date(this.askedAtMs).toISOString() };
  }
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((item) => typeof item === 'string')
  );
}

/**
 * The invites and enrolled keys, with the rules a change must pass. Pure apart from the clock the
 * workflow gives it: validators call the checks, handlers apply what passed.
 */
class ApproverKeyRegistry {
  private readonly invites = new Map<string, InviteView>();
  private readonly keys = new Map<string, ApproverKeyView>();

  constructor(carried: ApproverKeysView | undefined) {
    for (const invite of carried?.invites ?? []) this.invites.set(invite.invite.invite.inviteId, invite);
    for (const key of carried?.keys ?? []) this.keys.set(key.keyId, key);
  }

  inviteRefusal(signed: SignedInvite, nowMs: number): Refusal | undefined {
    if (!isSignedInvite(signed)) return { code: 'INVITE_INVALID', reason: 'not a signed invite' };
    const { invite } = signed;
    if ([invite.inviteId, invite.approver, invite.operator].some((name) => name.length > maxNameLength)) {
      return { code: 'INVITE_INVALID', reason: `names are at most ${maxNameLength} characters` };
    }
    if (this.invites.has(invite.inviteId) || this.usedInvite(invite.inviteId)) {
      return { code: 'INVITE_EXISTS', reason: 'an invite with this id exists' };
    }
    const expiresAtMs = Date.parse(invite.expiresAt);
    if (Number.isNaN(expiresAtMs)) return { code: 'INVITE_INVALID', reason: 'expiresAt is not an ISO time' };
    if (expiresAtMs <= nowMs) return { code: 'INVITE_EXPIRED', reason: 'the invite has expired' };
    if (expiresAtMs - nowMs > maxInviteValidityMs) {
      return { code: 'INVITE_INVALID', reason: 'an invite is valid for at most 7 days' };
    }
    return undefined;
  }

  addInvite(signed: SignedInvite, nowMs: number): void {
    this.invites.set(signed.invite.inviteId, { invite: signed, addedAt: new Date(nowMs).toISOString() });
  }

  enrolmentRefusal(signed: SignedEnrolment, nowMs: number): Refusal | undefined {
    if (!isSignedEnrolment(signed)) return { code: 'SIGNATURE_INVALID', reason: 'not a signed enrolment' };
    const { enrolment } = signed;
    const held = this.invites.get(enrolment.inviteId);
    if (this.usedInvite(enrolment.inviteId) || held?.usedBy !== undefined) {
      return { code: 'INVITE_USED', reason: 'this invite was used already; ask an operator for a new one' };
    }
    if (!held) return { code: 'INVITE_UNKNOWN', reason: 'no such invite' };
    if (Date.parse(held.invite.invite.expiresAt) <= nowMs) {
      return { code: 'INVITE_EXPIRED', reason: 'the invite has expired; ask an operator for a new one' };
    }
    if (enrolment.label.length > maxNameLength) {
      return { code: 'SIGNATURE_INVALID', reason: `a label is at most ${maxNameLength} characters` };
    }
    const verdict = verifyEnrolment({ invite: held.invite.invite, enrolment: signed });
    if (!verdict.ok) return { code: 'SIGNATURE_INVALID', reason: verdict.reason };
    if (this.keys.has(verdict.key.keyId))
      return { code: 'KEY_EXISTS', reason: 'this key is enrolled already' };
    return undefined;
  }

  enrol(signed: SignedEnrolment, nowMs: number): ApproverKeyView {
    const { enrolment } = signed;
    const held = this.invites.get(enrolment.inviteId) as InviteView;
    const key: ApproverKeyView = {
      keyId: keyIdOf(enrolment.publicKeyHex),
      approver: enrolment.approver,
      publicKeyHex: enrolment.publicKeyHex,
      label: enrolment.label,
      inviteId: enrolment.inviteId,
      invitedBy: held.invite.invite.operator,
      enrolledAt: new Date(nowMs).toISOString(),
      invite: held.invite,
      enrolment: signed,
    };
    held.usedBy = key.keyId;
    this.keys.set(key.keyId, key);
    return key;
  }

  revocationRefusal(signed: SignedKeyRevocation): Refusal | undefined {
    if (!isSignedKeyRevocation(signed))
      return { code: 'SIGNATURE_INVALID', reason: 'not a signed revocation' };
    const key = this.keys.get(signed.revocation.keyId);
    if (!key) return { code: 'KEY_UNKNOWN', reason: 'no such key' };
    if (key.revoked) return { code: 'KEY_REVOKED', reason: 'this key is revoked already' };
    if (signed.revocation.reason.length > 1000) {
      return { code: 'SIGNATURE_INVALID', reason: 'a reason is at most 1,000 characters' };
    }
    return undefined;
  }

  revoke(signed: SignedKeyRevocation, nowMs: number): ApproverKeyView {
    const key = this.keys.get(signed.revocation.keyId) as ApproverKeyView;
    const { operator, reason } = signed.revocation;
    key.revoked = { at: new Date(nowMs).toISOString(), operator, reason };
    return key;
  }

  view(): ApproverKeysView {
    return { invites: [...this.invites.values()], keys: [...this.keys.values()] };
  }

  /** What the next run starts with: every key, and the invites not long expired (an expired invite enrols nothing). */
  carry(nowMs: number): ApproverKeysView {
    const invites = [...this.invites.values()].filter(
      (held) => Date.parse(held.invite.invite.expiresAt) + expiredInvitesKeptMs > nowMs,
    );
    return { invites, keys: [...this.keys.values()] };
  }

  /** An invite is used once a key was enrolled with it, even after the invite itself was dropped. */
  private usedInvite(inviteId: string): boolean {
    for (const key of this.keys.values()) if (key.inviteId === inviteId) return true;
    return false;
  }
}

/**
 * The approver-key registry: one long-lived workflow per task queue (started on first use by
 * update-with-start) holding operator-signed invites and the keys enrolled through them. Validators
 * refuse with stable codes before anything is recorded; an operator's signature is checked by the
 * validator against the operator keys the registry recorded (see `OperatorKeys`), then against the
 * worker's current policy by a recorded local activity. Every attempt is audited through the
 * worker's sink. State crosses continue-as-new only from the registry's own previous run: a run
 * started with forged state starts empty (every enrolled key then unknown: it fails closed).
 *
 * A raw Temporal client can still reset this workflow or terminate it, and the registry would forget
 * what came after; the audit store does not. So an invite the audit store shows used is neither added
 * again (the local activity that checks an invite's operator also asks the audit store) nor used again
 * (the enrolment's handler asks it), and the key lookups cross-check the audit store as well.
 */
export async function toolgateApproverKeys(input: ApproverKeysInput = {}): Promise<void> {
  const continued = workflowInfo().continuedFromExecutionRunId !== undefined;
  const changes = new RegistryChanges(
    new ApproverKeyRegistry(continued ? input.carried : undefined),
    new OperatorKeys(continued ? input.operatorKeys : undefined),
  );
  const threshold = Math.max(1, input.continueAsNewAfter ?? 500);

  setHandler(approverKeysQuery, () => changes.registry.view());
  setHandler(addInviteUpdate, (signed) => changes.addInvite(signed), {
    validator: (signed: SignedInvite) => changes.validateInvite(signed),
  });
  setHandler(enrolKeyUpdate, (signed) => changes.enrol(signed), {
    validator: (signed: SignedEnrolment) => changes.validateEnrolment(signed),
  });
  setHandler(revokeKeyUpdate, (signed) => changes.revoke(signed), {
    validator: (signed: SignedKeyRevocation) => changes.validateRevocation(signed),
  });

  await condition(() => changes.accepted >= threshold || workflowInfo().continueAsNewSuggested);
  await condition(allHandlersFinished);
  const carriedKeys = changes.operatorKeys.carry();
  await continueAsNew<typeof toolgateApproverKeys>({
    carried: changes.registry.carry(Date.now()),
    continueAsNewAfter: threshold,
    ...(carriedKeys ? { operatorKeys: carriedKeys } : {}),
  });
}

/**
 * The registry's changes as its handlers make them: each asks what it must (the worker's policy for an
 * operator's signature, the audit store for an invite's use), applies what passed and audits every
 * attempt through the worker's sink.
 */
class RegistryChanges {
  /** Changes accepted in this run (the workflow continues as new after its threshold). */
  accepted = 0;
  private readonly sinks = proxySinks<ToolGateSinks>();

  constructor(
    readonly registry: ApproverKeyRegistry,
    readonly operatorKeys: OperatorKeys,
  ) {}

  async addInvite(signed: SignedInvite): Promise<RegistryReceipt> {
    const { invite } = signed;
    const about = { action: 'addInvite' as const, ...inviteFields(signed) };
    const refusal =
      (await this.askPolicy({
        kind: 'invite',
        value: invite,
        signature: signed.signature,
        operator: invite.operator,
        approver: invite.approver,
      })) ?? this.registry.inviteRefusal(signed, Date.now());
    if (refusal) throw this.refuse(refusal, about);
    this.registry.addInvite(signed, Date.now());
    this.accepted++;
    this.audit({ ...about, outcome: 'accepted', detail: `valid until ${invite.expiresAt}` });
    return { accepted: true, inviteId: invite.inviteId };
  }

  /**
   * The operator's signature first (as the handler asks the policy first), against the keys the
   * registry recorded: a forged invite is refused here and leaves no history.
   */
  validateInvite(signed: SignedInvite): void {
    const refusal = isSignedInvite(signed)
      ? (this.operatorKeys.refusal(
          {
            kind: 'invite',
            value: signed.invite,
            signature: signed.signature,
            operator: signed.invite.operator,
          },
          Date.now(),
        ) ?? this.registry.inviteRefusal(signed, Date.now()))
      : this.registry.inviteRefusal(signed, Date.now());
    if (refusal) throw this.refuse(refusal, { action: 'addInvite', ...inviteFields(signed) });
  }

  async enrol(signed: SignedEnrolment): Promise<RegistryReceipt> {
    const about = { action: 'enrolKey' as const, ...enrolmentFields(signed) };
    // The audit store outlives this run: an invite it shows used enrols nothing, even when this
    // registry was reset to before that use or started anew after a terminate.
    const refusal =
      (await this.askAudit(signed.enrolment.inviteId)) ?? this.registry.enrolmentRefusal(signed, Date.now());
    // Checked again after the wait, then changed at once: no other change comes in between.
    if (refusal) throw this.refuse(refusal, about);
    const key = this.registry.enrol(signed, Date.now());
    this.accepted++;
    this.audit({
      ...about,
      operator: key.invitedBy,
      keyId: key.keyId,
      outcome: 'accepted',
      detail: `label "${key.label}"`,
    });
    return { accepted: true, keyId: key.keyId };
  }

  validateEnrolment(signed: SignedEnrolment): void {
    const refusal = this.registry.enrolmentRefusal(signed, Date.now());
    if (refusal) throw this.refuse(refusal, { action: 'enrolKey', ...enrolmentFields(signed) });
  }

  async revoke(signed: SignedKeyRevocation): Promise<RegistryReceipt> {
    const { revocation } = signed;
    const about = { action: 'revokeKey' as const, ...revocationFields(signed) };
    const refusal =
      (await this.askPolicy({
        kind: 'key-revocation',
        value: revocation,
        signature: signed.signature,
        operator: revocation.operator,
      })) ?? this.registry.revocationRefusal(signed);
    if (refusal) throw this.refuse(refusal, about);
    const key = this.registry.revoke(signed, Date.now());
    this.accepted++;
    this.audit({ ...about, approver: key.approver, outcome: 'accepted', detail: revocation.reason });
    return { accepted: true, keyId: key.keyId };
  }

  /** As for invites: a revocation not signed by an operator the registry knows leaves no history. */
  validateRevocation(signed: SignedKeyRevocation): void {
    const refusal = isSignedKeyRevocation(signed)
      ? (this.operatorKeys.refusal(
          {
            kind: 'key-revocation',
            value: signed.revocation,
            signature: signed.signature,
            operator: signed.revocation.operator,
          },
          Date.now(),
        ) ?? this.registry.revocationRefusal(signed))
      : this.registry.revocationRefusal(signed);
    if (refusal) throw this.refuse(refusal, { action: 'revokeKey', ...revocationFields(signed) });
  }

  private audit(event: Omit<RegistryEvent, 'updateId' | 'at'>): void {
    this.sinks.audit.registryEvent({
      ...event,
      updateId: currentUpdateInfo()?.id ?? '(none)',
      at: new Date(Date.now()).toISOString(),
    });
  }

  private refuse(
    refusal: Refusal,
    event: Omit<RegistryEvent, 'updateId' | 'at' | 'outcome' | 'detail'>,
  ): ApplicationFailure {
    this.audit({ ...event, outcome: refusal.code, detail: refusal.reason });
    return ApplicationFailure.create({
      type: refusal.code,
      message: `${refusal.code}: ${refusal.reason}`,
      nonRetryable: true,
    });
  }

  private async askPolicy(
    check: Parameters<ApproverKeyActivities['checkOperatorSignature']>[0],
  ): Promise<Refusal | undefined> {
    this.operatorKeys.asking(Date.now());
    try {
      const verdict = await operatorChecks.checkOperatorSignature(check);
      this.operatorKeys.learn(verdict.operators);
      return verdict.ok ? undefined : { code: verdict.code, reason: verdict.reason };
    } catch {
      return {
        code: 'OPERATOR_UNKNOWN' as const,
        reason: 'the policy (or the audit store) could not be read; try again',
      };
    }
  }

  private async askAudit(inviteId: string): Promise<Refusal | undefined> {
    try {
      const verdict = await operatorChecks.checkInviteUnused({ inviteId });
      return verdict.ok ? undefined : { code: verdict.code, reason: verdict.reason };
    } catch {
      // Fail closed: an invite nobody can vouch for now enrols nothing (the enrolment may be sent again).
      return { code: 'INVITE_UNKNOWN', reason: 'the audit store could not be read; try again' };
    }
  }
}

// What an attempt names, read defensively: a refused attempt may have any shape.
function inviteFields(signed: unknown): Pick<RegistryEvent, 'operator' | 'approver' | 'inviteId'> {
  const invite = (signed as { invite?: Record<string, unknown> } | null)?.invite;
  return pickStrings(invite, { operator: 'operator', approver: 'approver', inviteId: 'inviteId' });
}

function enrolmentFields(signed: unknown): Pick<RegistryEvent, 'approver' | 'inviteId' | 'keyId'> {
  const enrolment = (signed as { enrolment?: Record<string, unknown> } | null)?.enrolment;
  const picked = pickStrings(enrolment, { approver: 'approver', inviteId: 'inviteId' });
  const publicKeyHex = enrolment?.publicKeyHex;
  return typeof publicKeyHex === 'string' ? { ...picked, keyId: keyIdOf(publicKeyHex) } : picked;
}

function revocationFields(signed: unknown): Pick<RegistryEvent, 'operator' | 'keyId'> {
  const revocation = (signed as { revocation?: Record<string, unknown> } | null)?.revocation;
  return pickStrings(revocation, { operator: 'operator', keyId: 'keyId' });
}

function pickStrings<K extends string>(
  source: Record<string, unknown> | undefined,
  fields: Record<K, string>,
): Partial<Record<K, string>> {
  const picked: Partial<Record<K, string>> = {};
  for (const [name, field] of Object.entries(fields) as [K, string][]) {
    const value = source?.[field];
    if (typeof value === 'string') picked[name] = value.slice(0, maxNameLength);
  }
  return picked;
}
