import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { LoadedPolicy } from '../policy/load-policy';
import { evaluatePolicy } from '../policy/evaluate-policy';
import type { CredentialClaims, ExecutionApproval, GrantApproval, SignedEdit } from '../approvals/protocol';
import { judgeGrant } from '../grants/rules';
import { grantRefusesCall } from '../grants/protocol';
import type { GrantUseStatus } from '../grants/protocol';
import type { RiskLevel } from '../tools/risk-levels';
import type { ApproverKeyStatus, VerifiedKey } from '../approver-keys/protocol';
import { approvalNonce, maxCredentialSeconds } from '../approvals/protocol';
import { digestOf } from '../shared/canonical-json';
import type { RoundBinding } from '../approvals/decision-rules';
import {
  distinctApprovers,
  judgeDecision,
  judgeEditForRun,
  quorumReached,
} from '../approvals/decision-rules';
import { contractDigestOf } from '../tools/contract-digest';
import { chainMismatch, chainOfCall, chainQuorum, stepOfApproval } from '../approvals/approval-chain';
import type { AnyToolContract } from '../tools/define-tool';
import type { CallContext } from '../calls/call-context';
import { callerPolicyIn } from '../policy/context-policy';
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
   * every decision against this call, run, round and digests (the contract's digest recomputed from
   * `contract`, the one its worker registered: `CONTRACT_CHANGED` otherwise), by the rules the workflow's validator
   * applies (`judgeDecision`), each decision an approval. A decision signed with an enrolled key
   * holds only when its chain verifies against the minter's own policy's operators and the registry
   * says the key is enrolled and not revoked now. Rejects with `MintRefusal` otherwise.
   */
  mint(input: {
    contract: AnyToolContract;
    caller: string;
    callId: string;
    runId: string;
    args: Record<string, unknown>;
    /** On whose behalf the call acts: the policy as it applies there, and the end user the credential names. */
    context?: CallContext;
    approval?: ExecutionApproval;
  }): Promise<string>;
}

/** Creates the minter, holding the minter's private key and its own copy of the policy. */
export function createCredentialMinter(input: {
  privateKey: KeyObject;
  policy: () => LoadedPolicy;
  /**
   * The registry's status of an enrolled key now (see `readApproverKeyStatus`). Without it, no
   * decision signed with an enrolled key holds: the minter fails closed.
   */
  approverKeyStatus?: (keyId: string) => Promise<ApproverKeyStatus>;
  /**
   * Whether the grants workflow holds a use of a grant for a reservation, and when it was taken (see
   * `readGrantUse`). Without it, no call runs on a standing grant: the minter fails closed.
   */
  grantUse?: (input: { grantId: string; reservationId: string }) => Promise<GrantUseStatus>;
}): CredentialMinter {
  return {
    mint: async ({ contract, caller, callId, runId, args, context, approval }) => {
      const onBehalfOf = context?.onBehalfOf;
      // A parameter bound to the end user must hold the end user the credential will name.
      for (const [field, source] of Object.entries(contract.boundParameters ?? {})) {
        if (source === 'onBehalfOf' && args[field] !== undefined && args[field] !== onBehalfOf) {
          throw new MintRefusal(`${field} is not the end user the call acts for`);
        }
      }
      const policy = input.policy();
      const policyOfCaller = policy.callerPolicy(caller);
      if (!policyOfCaller) throw new MintRefusal(`caller ${caller} is not in the minter's policy`);
      const callerPolicy = callerPolicyIn({ callerPolicy: policyOfCaller, context });
      const verdict = evaluatePolicy({ contract, args, caller, callerPolicy });
      if (!verdict.ok) throw new MintRefusal(`the minter's policy refuses it (${verdict.code})`);
      const argsDigest = digestOf(args);
      const edits = approval && 'edits' in approval ? approval.edits : undefined;
      if (edits !== undefined && !Array.isArray(edits)) throw new MintRefusal('the edits are not a list');
      if (edits?.length) {
        await confirmEdits({
          edits,
          caller,
          callId,
          runId,
          argsDigest,
          riskLevel: verdict.riskLevel,
          policy,
          status: input.approverKeyStatus,
        });
      }
      let restsOn: CredentialClaims['approval'];
      // A chain of groups in order, routed as the evaluation routed it, from the minter's own policy.
      const chain = verdict.needsApproval
        ? chainOfCall({
            contract,
            args,
            context: context ?? {},
            approval: callerPolicy.approval,
            level: verdict.riskLevel,
            caller,
            approvers: policy.file.approvers,
            levelWindowMs: 0,
          })
        : undefined;
      if (chain && !chain.ok) throw new MintRefusal(`the minter's policy routes no chain: ${chain.reason}`);
      if (chain && approval && 'grant' in approval) {
        // The groups a chain names decide each call of its level: no standing grant stands in for them.
        throw new MintRefusal(
          `risk level "${verdict.riskLevel}" asks an approval chain: no standing grant covers it`,
        );
      }
      if (verdict.needsApproval && approval && 'grant' in approval) {
        await confirmGrant({
          approval,
          contract,
          caller,
          callId,
          args,
          riskLevel: verdict.riskLevel,
          policy,
          grantUse: input.grantUse,
        });
        restsOn = { grant: approval.grant.grant.grantId };
      } else if (verdict.needsApproval) {
        if (!approval || 'grant' in approval)
          throw new MintRefusal(`risk level "${verdict.riskLevel}" needs approval and none was given`);
        const expectedNonce = approvalNonce({
          runId,
          round: approval.round,
          previewDigest: approval.previewDigest,
        });
        if (approval.nonce !== expectedNonce)
          throw new MintRefusal('the approval round does not match its nonce');
        const quorum = chain
          ? chainQuorum(chain.steps)
          : (callerPolicy.approval?.quorum?.[verdict.riskLevel] ?? 1);
        // The minter's own binding: its nonce, its digest of the arguments, its risk level, its approvers.
        const round: RoundBinding = {
          callId,
          runId,
          nonce: expectedNonce,
          argsDigest,
          previewDigest: approval.previewDigest,
          // The contract as this worker's registry holds it now: every decision must name it.
          contractDigest: contractDigestOf({ contract }),
          riskLevel: verdict.riskLevel,
          caller,
        };
        const { approvers, operators } = policy.snapshotFor(caller);
        const approvedBy: string[] = [];
        for (const [index, decision] of approval.decisions.entries()) {
          // Each decision is judged against the round alone (in a chain, the nonce of the step it counts
          // for); one approver listed twice counts once below.
          const step = chain ? stepOfApproval({ steps: chain.steps, index }) : undefined;
          const judgement = judgeDecision({
            decision,
            round:
              step === undefined
                ? round
                : {
                    ...round,
                    nonce: approvalNonce({
                      runId,
                      round: approval.round,
                      previewDigest: approval.previewDigest,
                      step: step + 1,
                    }),
                  },
            approvers,
            operators,
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
          if (judgement.key) await confirmEnrolled({ key: judgement.key, status: input.approverKeyStatus });
          approvedBy.push(judgement.envelope.approver);
        }
        if (!quorumReached({ approvers: approvedBy, quorum })) {
          throw new MintRefusal(
            `${distinctApprovers(approvedBy).length} distinct approver(s), ${quorum} needed`,
          );
        }
        if (chain) {
          const mismatch = chainMismatch({ steps: chain.steps, approvers: approvedBy });
          if (mismatch !== undefined)
            throw new MintRefusal(`the approvals do not follow the chain: ${mismatch}`);
        }
        restsOn = { approvers: distinctApprovers(approvedBy) };
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
        ...(onBehalfOf !== undefined ? { onBehalfOf } : {}),
        ...(restsOn ? { approval: restsOn } : {}),
      };
      return signCredential({ claims, privateKey: input.privateKey });
    },
  };
}

/**
 * Refuses arguments edited before approval unless every edit holds under the minter's own policy
 * (`judgeEditForRun`: the approver's key, not the caller's operator, this call and run),
 * each edit starts from the arguments the one before made, the last one made exactly the arguments
 * that run, and its approver's grant covers their risk level as the minter recomputed it.
 */
async function confirmEdits(input: {
  edits: readonly SignedEdit[];
  caller: string;
  callId: string;
  runId: string;
  argsDigest: string;
  riskLevel: RiskLevel;
  policy: LoadedPolicy;
  status: ((keyId: string) => Promise<ApproverKeyStatus>) | undefined;
}): Promise<void> {
  const { approvers, operators } = input.policy.snapshotFor(input.caller);
  let made: string | undefined;
  for (const [index, edit] of input.edits.entries()) {
    const last = index === input.edits.length - 1;
    const judged = judgeEditForRun({
      edit,
      callId: input.callId,
      runId: input.runId,
      caller: input.caller,
      ...(last ? { riskLevel: input.riskLevel } : {}),
      approvers,
      operators,
    });
    if (!judged.ok) {
      throw new MintRefusal(
        `the edit by ${approverNamed(edit)} does not hold for this call (${judged.code})`,
      );
    }
    if (made !== undefined && judged.envelope.argsDigest !== made) {
      throw new MintRefusal('the edits do not follow one another: an edit starts from other arguments');
    }
    if (judged.key) await confirmEnrolled({ key: judged.key, status: input.status });
    made = judged.envelope.editedDigest;
  }
  if (made !== input.argsDigest) {
    throw new MintRefusal('the arguments that would run are not the ones the last edit signed');
  }
}

/**
 * Refuses a call covered by a standing grant unless the grant holds under the minter's own policy as
 * it stood when the use was taken (signatures, approvers' levels, quorum, not expired then), covers
 * this caller, tool, risk level and amount, and the grants workflow holds a use of it for this call:
 * a grant's calls and total are counted there, so a grant copied into another call's approval mints
 * nothing.
 */
async function confirmGrant(input: {
  approval: GrantApproval;
  contract: AnyToolContract;
  caller: string;
  callId: string;
  args: Record<string, unknown>;
  riskLevel: RiskLevel;
  policy: LoadedPolicy;
  grantUse: ((input: { grantId: string; reservationId: string }) => Promise<GrantUseStatus>) | undefined;
}): Promise<void> {
  const { approval, contract } = input;
  const grantId = String((approval.grant as { grant?: { grantId?: unknown } } | undefined)?.grant?.grantId);
  if (!input.grantUse) throw new MintRefusal(`the minter cannot look up standing grants (grant ${grantId})`);
  // A write's use is keyed by its call id: a grant's use by another call does not cover this one.
  if (approval.reservationId !== input.callId) {
    throw new MintRefusal(`grant ${grantId} was used by another call, not ${input.callId}`);
  }
  let use: GrantUseStatus;
  try {
    use = await input.grantUse({ grantId, reservationId: input.callId });
  } catch {
    throw new MintRefusal(`the grants workflow did not answer for grant ${grantId}`);
  }
  if (!use.held || use.usedAt === undefined || Number.isNaN(Date.parse(use.usedAt))) {
    throw new MintRefusal(`grant ${grantId} holds no use for call ${input.callId}`);
  }
  const usedAtMs = Date.parse(use.usedAt);
  const judged = judgeGrant({
    signed: approval.grant,
    policy: input.policy,
    tool: (name) =>
      name === contract.name ? { declaresAmount: typeof contract.amount === 'function' } : undefined,
    nowMs: usedAtMs,
  });
  if (!judged.ok) throw new MintRefusal(`grant ${grantId} does not hold (${judged.code}: ${judged.reason})`);
  const amountOf = contract.amount;
  const amount = amountOf ? amountOf(input.args) : undefined;
  const refusal = grantRefusesCall({
    grant: approval.grant.grant,
    used: { calls: 0, amount: 0 },
    call: {
      caller: input.caller,
      tool: contract.name,
      riskLevel: input.riskLevel,
      ...(amount !== undefined ? { amount } : {}),
    },
    nowMs: usedAtMs,
  });
  if (refusal) throw new MintRefusal(`grant ${grantId} does not cover this call (${refusal})`);
  // The use counted in the grant is this call's: same caller, tool, level and amount, or the grant's
  // total would not bound what runs (a use counted at 0 cents covering a 1,000-cent refund).
  const counted =
    use.callId === input.callId &&
    use.caller === input.caller &&
    use.tool === contract.name &&
    use.riskLevel === input.riskLevel &&
    use.amount === (amount ?? 0);
  if (!counted) {
    throw new MintRefusal(
      `grant ${grantId} counted its use for another call or amount (${use.amount} for ${use.caller}'s ${use.tool}), not this one`,
    );
  }
}

/** Refuses unless the registry holds exactly this key, for this approver and invite, and not revoked. */
async function confirmEnrolled(input: {
  key: VerifiedKey;
  status: ((keyId: string) => Promise<ApproverKeyStatus>) | undefined;
}): Promise<void> {
  const { key } = input;
  if (!input.status) throw new MintRefusal(`the minter cannot look up enrolled keys (key ${key.keyId})`);
  let found: ApproverKeyStatus;
  try {
    found = await input.status(key.keyId);
  } catch {
    throw new MintRefusal(`the key registry did not answer for key ${key.keyId}`);
  }
  const same =
    found.status !== 'unknown' &&
    found.key.publicKeyHex === key.publicKeyHex &&
    found.key.approver === key.approver &&
    found.key.inviteId === key.inviteId;
  if (!same) throw new MintRefusal(`key ${key.keyId} of ${key.approver} is not enrolled (KEY_UNKNOWN)`);
  if (found.status === 'revoked')
    throw new MintRefusal(`key ${key.keyId} of ${key.approver} was revoked (KEY_REVOKED)`);
}

/** The approver a decision names, for a refusal message; a malformed decision names nobody. */
function approverNamed(decision: unknown): string {
  const approver = (decision as { envelope?: { approver?: unknown } } | null | undefined)?.envelope?.approver;
  return typeof approver === 'string' ? approver : '(unknown)';
}
