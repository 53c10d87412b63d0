// Denial memory: a person who said no to a call is not asked again for the same call. Within a
// session, a proposal of the same tool with the same validated arguments as a call an approver
// denied is answered at once, `APPROVAL_DENIED` with that approver's reason, marked `replayed`: no
// round opens, no one is notified. Other arguments open a round as before.
import type { AuditRecord } from '../audit/audit-store';
import type { CallEvaluation, EvaluatedCall } from '../calls/call-evaluation';
import { canonicalJson, sha256Hex } from '../shared/canonical-json';
import { approvalDeniedEarlierMessage } from '../shared/model-messages';

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
    return {
      approver,
      reason,
      deniedCallId: text('deniedCallId') ?? record.callId,
      deniedAt: text('deniedAt') ?? record.finishedAt,
    };
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
