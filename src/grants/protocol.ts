import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { RiskLevel } from '../tools/risk-levels';
import { riskRank } from '../tools/risk-levels';
import type { KeyChain } from '../approver-keys/protocol';

/*
 * Bounded standing approvals (docs/design.md step 7): approvers sign a grant, "caller X may run tool Y
 * without asking, up to N calls and M in total (the tool's declared `amount`), each at most K, until
 * T, at risk levels up to L". A call the grant covers runs without waiting and records the grant it
 * used; a call outside it waits for a human as before. The grants of a task queue live in one
 * workflow, `toolgate-grants:<queue>`, which takes each use atomically (as a limit's counter does), so
 * no number of sessions calling at once gets more than N calls or M through one grant. Every grant,
 * revocation, use and release is in the audit store, and the workflow rebuilds from it at every run.
 */

/** The grants workflow's type. */
export const grantsWorkflowType = 'toolgateGrants';

/** The grants of a task queue: one workflow per deployment's queue. */
export function grantsWorkflowId(taskQueue: string): string {
  return `toolgate-grants:${taskQueue}`;
}

/** What approvers sign (kind `grant`): one caller, one tool, a ceiling of risk, calls, amounts and time. */
export interface StandingGrant {
  /** A fresh id (a UUID): a grant is added once, and keys its audit events. */
  grantId: string;
  /** The deployment's task queue it is for: a grant signed for one deployment holds on no other. */
  taskQueue: string;
  caller: string;
  tool: string;
  /** The highest risk level the grant covers; never above what each signing approver may approve. */
  maxLevel: RiskLevel;
  /** At most this many calls (N). */
  maxCalls: number;
  /** At most this much in total (M), in the tool's `amount` unit (cents for refunds). */
  maxAmount?: number;
  /** Each call at most this much (K). */
  maxAmountPerCall?: number;
  /** When the approvers signed it (ISO). */
  issuedAt: string;
  /** Until when it may be used (T, ISO); at most the policy's `maxApprovalWindow` after `issuedAt`. */
  expiresAt: string;
  reason: string;
}

/** One approver's Ed25519 signature (base64url, by the approver's key in the policy) over the grant. */
export interface GrantSignature {
  approver: string;
  signature: string;
}

/** A grant with its approvers' signatures: one, or as many as the caller's quorum asks; two for `critical`. */
export interface SignedGrant {
  grant: StandingGrant;
  signatures: GrantSignature[];
}

/** Who revokes a grant: one of its approvers, or an operator of the policy. */
export type GrantRevoker = { approver: string } | { operator: string };

/** What a revocation signs (kind `grant-revocation`). */
export interface GrantRevocation {
  revocationId: string;
  grantId: string;
  by: GrantRevoker;
  reason: string;
  issuedAt: string;
}

/**
 * A revocation with its signer's signature: by the key in the policy (an approver's or operator's key
 * file), or, for an approver only, by a key enrolled in a browser, whose chain (`key`) travels with it
 * so the worker verifies it against the policy's operators, then asks the registry that it is enrolled
 * and not revoked.
 */
export interface SignedGrantRevocation {
  revocation: GrantRevocation;
  signature: string;
  key?: KeyChain;
}

/** Where a grant stands. */
export type GrantState = 'active' | 'revoked' | 'expired' | 'used-up';

/** A grant as `toolgate grants list` shows it: what it covers, what is used and left, where it stands. */
export interface GrantView {
  grant: StandingGrant;
  /** The approvers who signed it. */
  approvers: string[];
  state: GrantState;
  usedCalls: number;
  usedAmount: number;
  remainingCalls: number;
  remainingAmount?: number;
  /** The calls that used it (their call ids), oldest first. */
  calls: string[];
  revoked?: { by: string; reason: string; at: string };
}

export interface GrantsView {
  grants: GrantView[];
}

/** What a call asks of the grants: one use for this call, at its risk level and amount. */
export interface GrantUseRequest {
  /** The write's call id (a read's `<callId>:<runId>`): a use asked again is answered, never counted twice. */
  reservationId: string;
  callId: string;
  /** The run asking: only the run that took a use gives it back. */
  runId: string;
  caller: string;
  tool: string;
  riskLevel: RiskLevel;
  amount?: number;
}

/** A use taken (with the grant, for the minter to verify) or none: the call then waits for a human. */
export type GrantUse =
  { ok: true; grant: SignedGrant; usedCalls: number; usedAmount: number } | { ok: false };

/** What a grant's approvers or an operator learn when a grant or revocation is accepted. */
export interface GrantReceipt {
  accepted: true;
  grant: GrantView;
}

/** A refused grant or revocation: its code (see `grantRefusalCodes`) and why; nothing changed. */
export interface GrantRefusal {
  accepted: false;
  code: string;
  message: string;
}

/** One grant's audit event: added (or refused), revoked, used by a call, released by a call without effect. */
export interface GrantEvent {
  /** Unique per event: the grant's or revocation's id, or `<grantId>:<sequence>` for uses and releases. */
  changeId: string;
  action: 'grant' | 'revoke-grant' | 'use-grant' | 'release-grant';
  grantId: string;
  tool: string;
  caller: string;
  /** `grant`: the signed grant, as sent. */
  signed?: SignedGrant;
  /** `revoke-grant`: who revoked, and why. */
  by?: string;
  /** `revoke-grant` signed with an enrolled key: that key's id. */
  keyId?: string;
  reason?: string;
  issuedAt?: string;
  /** `use-grant`, `release-grant`: the call's reservation, and for a use its amount. */
  reservationId?: string;
  callId?: string;
  runId?: string;
  amount?: number;
  riskLevel?: RiskLevel;
  /** `revoke-grant`: the revocation's id. */
  revocationId?: string;
  /** `use-grant`: when the grants workflow took it (its clock): the minter judges the grant as of then. */
  usedAt?: string;
  /** `accepted`, or the refusal's code. */
  outcome: string;
  /** Set by the audit store when read back (its clock). */
  recordedAt?: string;
}

/** Adds a signed grant; refused with a grant refusal code. */
export const addGrantUpdate = defineUpdate<GrantReceipt, [SignedGrant]>('addGrant');
/** Revokes a grant at once; refused with a grant refusal code. */
export const revokeGrantUpdate = defineUpdate<GrantReceipt, [SignedGrantRevocation]>('revokeGrant');
/** Takes one use of a grant that covers the call, atomically; `{ ok: false }` when none does. */
export const useGrantUpdate = defineUpdate<GrantUse, [GrantUseRequest]>('useGrant');
/** Gives back a call's use (it ended without an effect); releasing what is not held changes nothing. */
export const releaseGrantUpdate = defineUpdate<
  { released: boolean },
  [{ grantId: string; reservationId: string; runId?: string }]
>('releaseGrant');
/** Every grant the workflow holds (active, and those ended within the last day). */
export const grantsQuery = defineQuery<GrantsView>('grants');
/** Whether a grant holds a use for a reservation: the minter asks before it mints for a granted call. */
export const grantUseQuery = defineQuery<GrantUseStatus, [{ grantId: string; reservationId: string }]>(
  'grantUse',
);

/** A use of a grant as the grants workflow holds it: what the minter compares with the call it mints for. */
export type GrantUseStatus =
  | { held: false }
  | {
      held: true;
      usedAt: string;
      callId: string;
      runId: string;
      caller: string;
      tool: string;
      riskLevel: RiskLevel;
      amount: number;
    };

/**
 * Why `grant` does not cover the call, or undefined when it does: its caller and tool, a risk level
 * within its ceiling, its amount within the per-call cap and what is left of the total, a call left.
 * `used` is what the grant has used; `nowMs` the current time. Pure.
 */
export function grantRefusesCall(input: {
  grant: StandingGrant;
  used: { calls: number; amount: number };
  call: { caller: string; tool: string; riskLevel: RiskLevel; amount?: number };
  nowMs: number;
}): string | undefined {
  const { grant, used, call } = input;
  if (grant.caller !== call.caller || grant.tool !== call.tool) return 'another caller or tool';
  if (input.nowMs >= Date.parse(grant.expiresAt)) return 'expired';
  const needed = riskRank(call.riskLevel);
  if (needed < 0 || needed > riskRank(grant.maxLevel))
    return `risk level "${call.riskLevel}" above its ceiling`;
  if (used.calls >= grant.maxCalls) return 'no call left';
  const capped = grant.maxAmount !== undefined || grant.maxAmountPerCall !== undefined;
  if (capped && call.amount === undefined) return 'the call has no amount';
  const amount = call.amount ?? 0;
  if (grant.maxAmountPerCall !== undefined && amount > grant.maxAmountPerCall)
    return 'above the per-call cap';
  if (grant.maxAmount !== undefined && used.amount + amount > grant.maxAmount) return 'above what is left';
  return undefined;
}

/** Where a grant stands now. */
export function grantStateOf(input: {
  grant: StandingGrant;
  revoked: boolean;
  usedCalls: number;
  nowMs: number;
}): GrantState {
  if (input.revoked) return 'revoked';
  if (input.nowMs >= Date.parse(input.grant.expiresAt)) return 'expired';
  if (input.usedCalls >= input.grant.maxCalls) return 'used-up';
  return 'active';
}

const maxTextLength = 200;
const maxReasonLength = 500;
const maxSignatures = 8;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What is wrong with the shape of a signed grant, or undefined: ids and names are short strings, the
 * counts and amounts whole and positive, the times ISO, a level known, one to eight signatures. Pure
 * and sandbox-safe: the grants workflow's validator asks it before anything reaches history.
 */
export function grantShapeProblem(signed: unknown): string | undefined {
  const value = signed as Partial<SignedGrant> | null | undefined;
  const grant = value?.grant as Partial<StandingGrant> | undefined;
  const text = (field: unknown, max = maxTextLength) =>
    typeof field === 'string' && field.trim() !== '' && field.length <= max;
  const whole = (field: unknown) => typeof field === 'number' && Number.isSafeInteger(field) && field > 0;
  if (!grant || typeof grant !== 'object') return 'a signed grant is { grant, signatures }';
  if (typeof grant.grantId !== 'string' || !uuidPattern.test(grant.grantId)) {
    return 'a grant id is a UUID (signGrant draws one)';
  }
  if (!text(grant.taskQueue) || !text(grant.caller) || !text(grant.tool)) {
    return 'a grant names the task queue it is for, its caller and its tool';
  }
  if (typeof grant.maxLevel !== 'string' || riskRank(grant.maxLevel) < 0) {
    return 'a grant names the highest risk level it covers: read, reversible, irreversible or critical';
  }
  if (!whole(grant.maxCalls)) return 'a grant allows a whole number of calls, at least one';
  if (grant.maxAmount !== undefined && !whole(grant.maxAmount)) return 'maxAmount is a whole number above 0';
  if (grant.maxAmountPerCall !== undefined && !whole(grant.maxAmountPerCall)) {
    return 'maxAmountPerCall is a whole number above 0';
  }
  if (!text(grant.reason, maxReasonLength))
    return `a grant gives a reason of at most ${maxReasonLength} characters`;
  if (typeof grant.issuedAt !== 'string' || Number.isNaN(Date.parse(grant.issuedAt))) {
    return 'a grant says when it was issued (ISO time)';
  }
  if (typeof grant.expiresAt !== 'string' || Number.isNaN(Date.parse(grant.expiresAt))) {
    return 'a grant says until when it holds (ISO time)';
  }
  if (Date.parse(grant.expiresAt) <= Date.parse(grant.issuedAt)) return 'a grant expires after it is issued';
  const signatures = value?.signatures;
  if (
    !Array.isArray(signatures) ||
    signatures.length === 0 ||
    signatures.length > maxSignatures ||
    !signatures.every((entry) => text(entry?.approver) && typeof entry?.signature === 'string')
  ) {
    return `a grant carries one to ${maxSignatures} approvers' signatures`;
  }
  return undefined;
}

/** What is wrong with the shape of a signed revocation, or undefined. Pure and sandbox-safe. */
export function revocationShapeProblem(signed: unknown): string | undefined {
  const value = signed as Partial<SignedGrantRevocation> | null | undefined;
  const revocation = value?.revocation as Partial<GrantRevocation> | undefined;
  const text = (field: unknown, max = maxTextLength) =>
    typeof field === 'string' && field.trim() !== '' && field.length <= max;
  const by = revocation?.by as Record<string, unknown> | undefined;
  const principals = by && typeof by === 'object' ? Object.keys(by) : [];
  if (
    !revocation ||
    typeof value?.signature !== 'string' ||
    !text(revocation.revocationId) ||
    !text(revocation.grantId) ||
    !text(revocation.reason, maxReasonLength) ||
    typeof revocation.issuedAt !== 'string' ||
    principals.length !== 1 ||
    !(principals[0] === 'approver' || principals[0] === 'operator') ||
    !text(by?.[principals[0]])
  ) {
    return (
      'a revocation names its id, the grant, exactly one of { approver } or { operator }, a reason of at ' +
      `most ${maxReasonLength} characters and when it was issued, and is signed`
    );
  }
  // An enrolled key's chain is checked by the worker; here only that it is an object, and an approver's.
  if (value?.key !== undefined) {
    const key = value.key as unknown;
    if (typeof key !== 'object' || key === null || Array.isArray(key)) {
      return 'a revocation signed with an enrolled key carries its chain as { invite, enrolment }';
    }
    if (principals[0] !== 'approver')
      return 'an operator signs a revocation with their key file, not an enrolled key';
  }
  return undefined;
}

/** The name of whoever signed a revocation. */
export function revokerName(by: GrantRevoker): string {
  return 'approver' in by ? by.approver : `operator ${by.operator}`;
}
