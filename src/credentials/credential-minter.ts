import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { LoadedPolicy } from '../policy/load-policy';
import { evaluatePolicy } from '../policy/evaluate-policy';
import type { CredentialClaims, ExecutionApproval } from '../shared/approval';
import { approvalNonce, maxCredentialSeconds } from '../shared/approval';
import { digestOf } from '../shared/canonical-json';
import type { RoundBinding } from '../shared/decision-rules';
import { distinctApprovers, judgeDecision, quorumReached } from '../shared/decision-rules';
import type { AnyToolContract } from '../tools/define-tool';
import { createAdmissionTickets } from './admission-tickets';
import type { AdmissionTickets } from './admission-tickets';
import { signCredential } from './credential-token';

/** Why the minter refused; the call is then `PERMISSION_DENIED` and nothing reaches the backend. */
export type { ExecutionApproval };

export class MintRefusal extends Error {
  override readonly name = 'MintRefusal';
}

/** Mints per-attempt credentials for writes. */
export interface CredentialMinter {
  /**
   * Mints a credential only after its own checks: it trusts no flag from the workflow, recomputes
   * the risk level from the contract, the arguments and its own policy, and verifies the quorum and
   * every decision against this call, run, round and digests, by the rules the workflow's validator
   * applies (`judgeDecision`), each decision an approval. Throws `MintRefusal` otherwise.
   */
  mint(input: {
    contract: AnyToolContract;
    caller: string;
    callId: string;
    runId: string;
    args: Record<string, unknown>;
    approval?: ExecutionApproval;
  }): string;
  /** Admission tickets, signed with the same key: they bind each call to its session's admission. */
  readonly tickets: AdmissionTickets;
}

/** Creates the minter, holding the minter's private key and its own copy of the policy. */
export function createCredentialMinter(input: {
  privateKey: KeyObject;
  policy: () => LoadedPolicy;
}): CredentialMinter {
  return {
    tickets: createAdmissionTickets({ privateKey: input.privateKey }),
    mint: ({ contract, caller, callId, runId, args, approval }) => {
      const policy = input.policy();
      const callerPolicy = policy.callerPolicy(caller);
      if (!callerPolicy) throw new MintRefusal(`caller ${caller} is not in the minter's policy`);
      const verdict = evaluatePolicy({ contract, args, caller, callerPolicy });
      if (!verdict.ok) throw new MintRefusal(`the minter's policy refuses it (${verdict.code})`);
      const argsDigest = digestOf(args);
      if (verdict.needsApproval) {
        if (!approval)
          throw new MintRefusal(`risk level "${verdict.riskLevel}" needs approval and none was given`);
        const expectedNonce = approvalNonce({
          runId,
          round: approval.round,
          previewDigest: approval.previewDigest,
        });
        if (approval.nonce !== expectedNonce)
          throw new MintRefusal('the approval round does not match its nonce');
        const quorum = callerPolicy.approval?.quorum?.[verdict.riskLevel] ?? 1;
        // The minter's own binding: its nonce, its digest of the arguments, its risk level, its approvers.
        const round: RoundBinding = {
          callId,
          runId,
          nonce: expectedNonce,
          argsDigest,
          previewDigest: approval.previewDigest,
          riskLevel: verdict.riskLevel,
          caller,
        };
        const { approvers } = policy.snapshotFor(caller);
        const approvedBy: string[] = [];
        for (const decision of approval.decisions) {
          // Each decision is judged against the round alone; one approver listed twice counts once below.
          const judgement = judgeDecision({
            decision,
            round,
            approvers,
            decidedBy: { signatures: [], approvers: [] },
          });
          if (!judgement.ok) {
            throw new MintRefusal(
              `the decision of ${approverNamed(decision)} does not hold for this call (${judgement.code})`,
            );
          }
          if (judgement.envelope.decision !== 'approve') {
            throw new MintRefusal(
              `the decision of ${judgement.envelope.approver} does not hold for this call (a denial, not an approval)`,
            );
          }
          approvedBy.push(judgement.envelope.approver);
        }
        if (!quorumReached({ approvers: approvedBy, quorum })) {
          throw new MintRefusal(
            `${distinctApprovers(approvedBy).length} distinct approver(s), ${quorum} needed`,
          );
        }
      }
      const issuedAt = Math.floor(Date.now() / 1000);
      const claims: CredentialClaims = {
        op: contract.name,
        resource: contract.resource(args),
        callId,
        argsDigest,
        jti: randomUUID(),
        iat: issuedAt,
        exp: issuedAt + maxCredentialSeconds,
      };
      return signCredential({ claims, privateKey: input.privateKey });
    },
  };
}

/** The approver a decision names, for a refusal message; a malformed decision names nobody. */
function approverNamed(decision: unknown): string {
  const approver = (decision as { envelope?: { approver?: unknown } } | null | undefined)?.envelope?.approver;
  return typeof approver === 'string' ? approver : '(unknown)';
}
