import { verifyWithNode } from '../keys/key-files';
import type { VerifiedKey } from '../approver-keys/protocol';
import { verifyKeyChain } from '../approver-keys/protocol';
import type { GrantRefusalCode } from '../shared/codes';
import type { GrantRevocation, SignedGrant, SignedGrantRevocation } from './protocol';
import { grantShapeProblem, revocationShapeProblem } from './protocol';
import { ownValue } from '../shared/own-records';
import { riskLevels, riskRank } from '../tools/risk-levels';
import type { RiskLevel } from '../tools/risk-levels';
import { maxApprovalWindowMs } from '../approvals/approval-window';
import type { LoadedPolicy } from '../policy/load-policy';
import type { CallerPolicy } from '../policy/policy-schema';

/** A grant's verdict: the distinct approvers who signed it and the count it needed, or why it is refused. */
export type GrantJudgement =
  { ok: true; approvers: string[]; quorum: number } | { ok: false; code: GrantRefusalCode; reason: string };

/** How far ahead of the checker's clock a grant may say it was issued (clocks drift). */
const issuedAheadMs = 10 * 60 * 1000;

/**
 * How many distinct approvers a grant up to `maxLevel` for this caller needs: never fewer than any
 * single call at a level it covers would (the caller's quorum for that level), and two for `critical`.
 */
export function grantQuorum(input: { callerPolicy: CallerPolicy; maxLevel: RiskLevel }): number {
  let quorum = input.maxLevel === 'critical' ? 2 : 1;
  for (const level of riskLevels) {
    if (riskRank(level) > riskRank(input.maxLevel)) break;
    quorum = Math.max(quorum, input.callerPolicy.approval?.quorum?.[level] ?? 1);
  }
  return quorum;
}

/**
 * Judges a signed grant against the policy held now, in this order: shape; caller in the policy; tool
 * on this deployment; amount caps only for a tool that declares an amount; not expired, not issued in
 * the future, not longer than `maxApprovalWindow`; then each signature (approver known, signed with the
 * approver's key in the policy, granted the grant's level, not operating the caller); then enough
 * distinct approvers. The worker asks it when a grant is added and before a call uses one; the minter
 * asks it again before it mints. Never throws.
 */
export function judgeGrant(input: {
  signed: unknown;
  policy: LoadedPolicy;
  /** Whether this deployment runs the tool, and whether its contract declares an `amount`. */
  tool: (name: string) => { declaresAmount: boolean } | undefined;
  /** The task queue judging it (a worker's): a grant signed for another deployment is refused. */
  taskQueue?: string;
  nowMs: number;
}): GrantJudgement {
  const refused = (code: GrantRefusalCode, reason: string): GrantJudgement => ({ ok: false, code, reason });
  const problem = grantShapeProblem(input.signed);
  if (problem) return refused('GRANT_INVALID', problem);
  const { grant, signatures } = input.signed as SignedGrant;
  const { policy } = input;
  if (input.taskQueue !== undefined && grant.taskQueue !== input.taskQueue) {
    return refused(
      'GRANT_INVALID',
      `the grant is for task queue "${grant.taskQueue}", not this deployment's "${input.taskQueue}"`,
    );
  }
  const callerPolicy = policy.callerPolicy(grant.caller);
  if (!callerPolicy) return refused('CALLER_UNKNOWN', `no caller "${grant.caller}" in the policy`);
  const tool = input.tool(grant.tool);
  if (!tool) return refused('UNKNOWN_TOOL', `no tool "${grant.tool}" on this deployment`);
  // A grant approves in advance only what a human could approve for this caller now: a tool on its
  // allowlist, up to its approval ceiling. A policy widened later does not wake an old grant.
  if (!callerPolicy.tools.includes(grant.tool)) {
    return refused('GRANT_INVALID', `${grant.tool} is not on ${grant.caller}'s allowlist`);
  }
  const ceiling = callerPolicy.approval?.ceiling;
  if (ceiling === undefined) {
    return refused(
      'GRANT_INVALID',
      `no human approval is configured for ${grant.caller}: there is nothing to grant`,
    );
  }
  if (riskRank(grant.maxLevel) > riskRank(ceiling)) {
    return refused(
      'GRANT_INVALID',
      `approvals for ${grant.caller} go up to "${ceiling}" only; the grant covers "${grant.maxLevel}"`,
    );
  }
  if ((grant.maxAmount !== undefined || grant.maxAmountPerCall !== undefined) && !tool.declaresAmount) {
    return refused(
      'GRANT_INVALID',
      `${grant.tool} declares no amount in its contract: a grant for it caps calls only (drop maxAmount and maxAmountPerCall)`,
    );
  }
  const issuedAtMs = Date.parse(grant.issuedAt);
  const expiresAtMs = Date.parse(grant.expiresAt);
  if (expiresAtMs <= input.nowMs) return refused('GRANT_INVALID', `the grant expired at ${grant.expiresAt}`);
  if (issuedAtMs > input.nowMs + issuedAheadMs) {
    return refused('GRANT_INVALID', 'the grant says it was issued in the future: check the signer’s clock');
  }
  const longestMs = maxApprovalWindowMs({ policy: policy.file });
  if (expiresAtMs - issuedAtMs > longestMs) {
    return refused(
      'GRANT_INVALID',
      `a grant holds at most the policy's maxApprovalWindow (${policy.file.maxApprovalWindow ?? '30d'}) after it is issued`,
    );
  }
  const approvers: string[] = [];
  for (const { approver, signature } of signatures) {
    const view = ownValue(policy.approvers, approver);
    if (!view) return refused('APPROVER_UNKNOWN', `no approver "${approver}" in the policy`);
    if (!verifyWithNode({ kind: 'grant', value: grant, signature, publicKeyHex: view.publicKeyHex })) {
      return refused('SIGNATURE_INVALID', `the grant is not signed with ${approver}'s key`);
    }
    if (riskRank(view.maxLevel) < riskRank(grant.maxLevel)) {
      return refused(
        'APPROVER_NOT_ALLOWED',
        `${approver} may approve up to "${view.maxLevel}", the grant covers "${grant.maxLevel}"`,
      );
    }
    if (view.operates.includes(grant.caller)) {
      return refused('SELF_APPROVAL', `${approver} operates ${grant.caller} and may not grant it anything`);
    }
    if (!approvers.includes(approver)) approvers.push(approver);
  }
  const quorum = grantQuorum({ callerPolicy, maxLevel: grant.maxLevel });
  if (approvers.length < quorum) {
    return refused(
      'QUORUM_NOT_MET',
      `a grant for ${grant.caller} up to "${grant.maxLevel}" needs ${quorum} distinct approvers; it has ${approvers.length}`,
    );
  }
  return { ok: true, approvers, quorum };
}

/**
 * Judges a revocation of `signed`'s grant: shape, then its signer, one of the grant's approvers (still
 * in the policy) or an operator of the policy, with their key. An approver may sign with a key
 * enrolled in a browser instead of their key file: its chain (`key`) must verify against the policy's
 * operators for that approver, and the signature with the enrolled key; the verified key is returned,
 * for the caller to ask the registry that it is enrolled and not revoked (this never asks it).
 * Operators sign with their key file only. Never throws.
 */
export function judgeRevocation(input: {
  revocation: unknown;
  grant: SignedGrant;
  policy: LoadedPolicy;
}):
  | { ok: true; revocation: GrantRevocation; key?: VerifiedKey }
  | { ok: false; code: GrantRefusalCode; reason: string } {
  const problem = revocationShapeProblem(input.revocation);
  if (problem) return { ok: false, code: 'GRANT_INVALID', reason: problem };
  const { revocation, signature, key: chain } = input.revocation as SignedGrantRevocation;
  const { by } = revocation;
  let publicKeyHex: string | undefined;
  let key: VerifiedKey | undefined;
  if ('approver' in by) {
    if (!input.grant.signatures.some((entry) => entry.approver === by.approver)) {
      return {
        ok: false,
        code: 'REVOCATION_NOT_ALLOWED',
        reason: `${by.approver} did not sign this grant: one of its approvers or an operator revokes it`,
      };
    }
    publicKeyHex = ownValue(input.policy.approvers, by.approver)?.publicKeyHex;
    if (!publicKeyHex)
      return { ok: false, code: 'APPROVER_UNKNOWN', reason: `no approver "${by.approver}" in the policy` };
    if (chain !== undefined) {
      const verified = verifyKeyChain({ chain, operators: input.policy.operators, approver: by.approver });
      if (!verified.ok) {
        return {
          ok: false,
          code: 'SIGNATURE_INVALID',
          reason: `the enrolled key's chain does not hold: ${verified.reason}`,
        };
      }
      key = verified.key;
      publicKeyHex = key.publicKeyHex;
    }
  } else {
    if (chain !== undefined) {
      return {
        ok: false,
        code: 'GRANT_INVALID',
        reason: 'an operator signs a revocation with their key file, not an enrolled key',
      };
    }
    publicKeyHex = ownValue(input.policy.operators, by.operator);
    if (!publicKeyHex)
      return { ok: false, code: 'OPERATOR_UNKNOWN', reason: `no operator "${by.operator}" in the policy` };
  }
  if (!verifyWithNode({ kind: 'grant-revocation', value: revocation, signature, publicKeyHex })) {
    return {
      ok: false,
      code: 'SIGNATURE_INVALID',
      reason: key
        ? `the revocation is not signed with ${key.approver}'s enrolled key ${key.keyId}`
        : 'the revocation is not signed with its signer’s key',
    };
  }
  return key ? { ok: true, revocation, key } : { ok: true, revocation };
}
