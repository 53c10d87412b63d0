// Denial memory: a person who said no to a call is not asked again for the same call. Within a
// session, a proposal of the same tool with the same validated arguments as a call an approver
// denied is answered at once, `APPROVAL_DENIED` with that approver's reason, marked `replayed`: no
// round opens, no one is notified. Other arguments open a round as before.
import type { AuditRecord } from '../audit/audit-store';
import type { CallEvaluation, EvaluatedCall } from '../calls/call-evaluation';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';
import { approvalDeniedEarlierMessage } from '../shared/model-messages';
import type { DecisionAttempt } from '../shared/temporal';
import type { ApproverGrant } from './decision-rules';
import { levelRefusal } from './decision-rules';
import type { RiskLevel } from '../tools/risk-levels';
import { ownValue } from '../shared/own-records';
import { verifySignature } from '../shared/signatures';

/** The denial a proposal meets again: who denied, why, the call that was denied and when. */
export interface RememberedDenial {
  approver: string;
  reason: string;
  deniedCallId: string;
  deniedAt: string;
}

/**
 * The newest denial among `records` (a session's `APPROVAL_DENIED` records of one tool, oldest first)
 * of exactly these validated arguments, or none. A record of a denial met again carries the first
 * denial's approver, reason and call, so a chain of re-proposals always names the person who said no.
 */
export function rememberedDenial(input: {
  records: readonly AuditRecord[];
  args: Record<string, unknown>;
  /** Only a denial a person gave at or after this time (ISO) counts (answers of it since do not renew it). */
  deniedSince?: string;
}): RememberedDenial | undefined {
  const digest = sha256Hex(canonicalJson(input.args));
  for (let index = input.records.length - 1; index >= 0; index--) {
    const record = input.records[index] as AuditRecord;
    if (record.code !== 'APPROVAL_DENIED' || record.validatedArguments === undefined) continue;
    if (sha256Hex(canonicalJson(record.validatedArguments)) !== digest) continue;
    const data = record.result.data ?? {};
    const text = (key: string): string | undefined => (typeof data[key] === 'string' ? data[key] : undefined);
    const approver = text('approver');
    const reason = text('reason');
    if (approver === undefined || reason === undefined) continue;
    const denial = {
      approver,
      reason,
      deniedCallId: text('deniedCallId') ?? record.callId,
      deniedAt: text('deniedAt') ?? record.finishedAt,
    };
    if (input.deniedSince !== undefined && !(Date.parse(denial.deniedAt) >= Date.parse(input.deniedSince))) {
      return undefined;
    }
    return denial;
  }
  return undefined;
}

/** The evaluation of a call met by a remembered denial: refused before any round, and said so. */
export function deniedAgain(
  evaluation: CallEvaluation & { ok: true },
  call: EvaluatedCall,
  denial: RememberedDenial,
): CallEvaluation {
  const { call: _call, ...recorded } = evaluation;
  return {
    ...recorded,
    args: call.args,
    riskLevel: call.riskLevel,
    summary: call.summary,
    ok: false,
    refusal: {
      code: 'APPROVAL_DENIED',
      message: approvalDeniedEarlierMessage({
        summary: call.summary,
        approver: denial.approver,
        reason: denial.reason,
      }),
      data: { ...denial },
      replayed: true,
    },
  };
}

/** Who lifts a remembered denial: an approver of the policy, or an operator. */
export type DenialLifter = { approver: string } | { operator: string };

/** What a lift signs (kind `denial-lift`): one denied call, by whom, why, when. */
export interface DenialLift {
  deniedCallId: string;
  by: DenialLifter;
  reason: string;
  issuedAt: string;
}

/** A lift with its Ed25519 signature (base64url) by the lifter's key in the policy. */
export interface SignedDenialLift {
  lift: DenialLift;
  signature: string;
}

/** The longest reason a lift may give. */
export const maxLiftReasonLength = 500;

/**
 * Why `value` does not lift the denial of `deniedCallId` for a call of `riskLevel` by `caller`
 * under this policy, or undefined when it does: a signed lift of that call, by an approver whose
 * grant covers the level and who does not operate the caller, or by an operator, each with their
 * key in the policy. Pure; never throws.
 */
export function liftProblem(input: {
  value: unknown;
  deniedCallId: string;
  riskLevel: RiskLevel;
  caller: string;
  approvers: Readonly<Record<string, ApproverGrant>>;
  operators: Readonly<Record<string, string>>;
}): string | undefined {
  const signed = input.value as Partial<SignedDenialLift> | null;
  const lift = signed?.lift as Partial<DenialLift> | undefined;
  if (typeof signed?.signature !== 'string' || !lift || typeof lift !== 'object') return 'not a signed lift';
  if (typeof lift.reason !== 'string' || !lift.reason.trim() || lift.reason.length > maxLiftReasonLength) {
    return `a lift gives a reason of 1 to ${maxLiftReasonLength} characters`;
  }
  if (typeof lift.issuedAt !== 'string') return 'a lift says when it was signed';
  if (lift.deniedCallId !== input.deniedCallId)
    return `it lifts ${String(lift.deniedCallId)}, not ${input.deniedCallId}`;
  const by = lift.by as Partial<{ approver: unknown; operator: unknown }> | undefined;
  let publicKeyHex: string | undefined;
  if (typeof by?.approver === 'string' && by.operator === undefined) {
    const grant = ownValue(input.approvers, by.approver);
    if (!grant) return `${by.approver} is not an approver of the policy`;
    const beyond = levelRefusal({ approver: by.approver, grant, riskLevel: input.riskLevel });
    if (beyond) return beyond.reason;
    if (grant.operates.includes(input.caller)) return `${by.approver} operates ${input.caller}`;
    publicKeyHex = grant.publicKeyHex;
  } else if (typeof by?.operator === 'string' && by.approver === undefined) {
    publicKeyHex = ownValue(input.operators, by.operator);
    if (!publicKeyHex) return `${by.operator} is not an operator of the policy`;
  } else return 'a lift is by one approver or one operator';
  const verified = verifySignature({
    kind: 'denial-lift',
    value: lift,
    signature: signed.signature,
    publicKeyHex,
  });
  return verified ? undefined : "it is not signed with the lifter's key";
}

/**
 * Whether a lift among `attempts` (the denied call's decision attempts) holds for `denial`: one
 * recorded after the denial (a later denial of the same call is remembered again) whose signature
 * and signer hold (see `liftProblem`). A lift is kept as the call's decision attempt `lift`.
 */
export function denialLifted(input: {
  denial: RememberedDenial;
  attempts: readonly (DecisionAttempt & { recordedAt: string })[];
  riskLevel: RiskLevel;
  caller: string;
  approvers: Readonly<Record<string, ApproverGrant>>;
  operators: Readonly<Record<string, string>>;
}): boolean {
  const deniedAt = Date.parse(input.denial.deniedAt);
  return input.attempts.some(
    (attempt) =>
      attempt.decision === 'lift' &&
      attempt.outcome === 'accepted' &&
      Date.parse(attempt.recordedAt) >= deniedAt &&
      liftProblem({ ...input, value: attempt.envelope, deniedCallId: input.denial.deniedCallId }) ===
        undefined,
  );
}
