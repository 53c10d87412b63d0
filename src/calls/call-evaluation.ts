/**
 * What the worker's contract evaluation answers for one proposal (docs/design.md steps 1 to 5), recorded in
 * the call's history by one local activity. The call workflow orchestrates on this record and never
 * runs tool code itself, so a deploy that changes a schema or a risk function cannot change what a
 * waiting call does on replay. Types only; shared by the workflow and the worker.
 */
import type { ApplicableQuota } from '../quotas/protocol';
import type { ApproverGrant } from '../approvals/decision-rules';
import type { ChainStepRequirement } from '../approvals/approval-chain';
import type { EffectKind, ExecutionRetry } from '../tools/define-tool';
import type { RiskLevel } from '../tools/risk-levels';
import type { ExecutionApproval } from '../approvals/protocol';
import type { ApprovalNotificationPlan } from '../notifications/notices';
import type { Proposal } from './proposal';
import type { CallContext } from './call-context';
import type { UntrustedRead } from '../shared/untrusted-text';

/** Which optional steps a tool's implementation has; a step it lacks is skipped without a round trip. */
export interface ToolCapabilities {
  check: boolean;
  preview: boolean;
  verify: boolean;
}

/** A proposal as the worker evaluates it: the signature covers `{ callId, proposal }`. */
export interface SignedProposal {
  /** The proposal's id, under which its session admitted it. */
  proposalId?: string;
  callId: string;
  proposal: Proposal;
  signature?: string;
  /** What untrusted text its session had read when it admitted the proposal (set by the admission). */
  untrusted?: UntrustedRead[];
}

/** The human approval a call needs, from the caller's policy, computed once. */
export interface ApprovalRequirement {
  /** How many approvals in all (a chain's: its steps' quorums together). */
  quorum: number;
  /** How long the round waits (a chain's: its first step's window; each step has its own). */
  windowMs: number;
  /** The groups that must approve in order, when the level has a chain (absent: any approvers). */
  chain?: ChainStepRequirement[];
  /** Why, in words, for approvers: the policy rule that asked for it. */
  rule: string;
  /**
   * True when the untrusted-text rule applies (the session read untrusted text): a person must look at
   * this call, so no standing grant covers it.
   */
  untrustedText?: true;
  /** Which channels hear of it, when the worker has notifications configured (absent: none, no commands). */
  notifications?: ApprovalNotificationPlan;
}

/** A call that passed steps 1 to 5: what the workflow needs to run the rest. */
export interface EvaluatedCall {
  tool: string;
  effect: EffectKind;
  args: Record<string, unknown>;
  summary: string;
  riskLevel: RiskLevel;
  /**
   * SHA-256 of the contract the call was judged by, as it would run (schemas without descriptions,
   * effect, codes, key fields, functions: see `contractDigestOf`); an approval round is bound to it.
   */
  contractDigest: string;
  capabilities: ToolCapabilities;
  retry: ExecutionRetry;
  /** Present when the risk level is above the caller's autonomy (or its session read untrusted text). */
  approval?: ApprovalRequirement;
  /**
   * The tool's input as the model sends it (JSON Schema, bound parameters absent), when the call
   * needs approval: what an approver's edit form is made from.
   */
  inputSchema?: Record<string, unknown>;
  /** The contract's untrusted outputs: what the call reports to its session when it read some. */
  untrustedOutput?: true | string[];
  /** The limits across sessions this call counts toward (absent: none); reserved before its checks. */
  quotas?: ApplicableQuota[];
  /**
   * What the call moves, from the contract's `amount`, when the tool declares one and the call counts
   * toward a limit or needs approval (a standing grant's caps).
   */
  amount?: number;
  /**
   * A standing grant that covered the call when it was evaluated (its id): the call asks the grants
   * workflow for a use instead of opening an approval round. Absent: no grant did; it waits for a human.
   */
  standingGrant?: string;
}

/** Where the pipeline stopped, with the model's answer; `data` for the model to act on. */
export interface EvaluationRefusal {
  code: string;
  message: string;
  data?: Record<string, unknown>;
  /** The answer was decided earlier (a denial met again): nothing new was judged or asked. */
  replayed?: true;
}

/** What every evaluation records, whatever it decided. */
interface EvaluationRecord {
  policyVersion: string;
  /** The caller's public key (raw hex), so proposals that join the call are checked with it. */
  callerKeyHex: string | null;
  /** Whether the proposal is signed with the caller's key. */
  authenticated: boolean;
  /** Whether its session admitted it (a valid ticket): only then is the outcome reported to the session. */
  admitted: boolean;
  /** Every approver's key and grants, for the decision validator. */
  approvers: Record<string, ApproverGrant>;
  /**
   * Every operator's public key (raw hex) by name, so the validator verifies an enrolled key's chain
   * purely. Absent in calls recorded before operators existed: then no chain holds.
   */
  operators?: Record<string, string>;
  /** Set once the arguments validated (also on a policy refusal, for the audit record). */
  args?: Record<string, unknown>;
  riskLevel?: RiskLevel;
  /** The tool's one-line summary of the call, once its arguments validated. */
  summary?: string;
}

/** The evaluation: the call goes on, or stops with a refusal. */
export type CallEvaluation = EvaluationRecord &
  ({ ok: true; call: EvaluatedCall } | { ok: false; refusal: EvaluationRefusal });

/**
 * What the worker found under a call's key after the execution's retries ran out, already checked
 * against the contract: applied (output within its contract), refused (a declared domain code), not
 * seen, or an answer that breaks the contract (the tool's bug).
 */
export type LookupAnswer =
  | { status: 'applied'; output: unknown }
  | { status: 'refused'; code: string; message: string; data?: Record<string, unknown> }
  | { status: 'not-seen' }
  | { status: 'broken'; problem: 'output-contract' | 'undeclared-code' };

/** What every activity of a call receives: the tool, the call id, the validated arguments, its context. */
export interface ToolCallActivityInput {
  tool: string;
  callId: string;
  args: Record<string, unknown>;
  /** On whose behalf, as the proposal carried it (absent: none). */
  context?: CallContext;
}

/** A business check's answer: pass, or a refusal with one of the tool's domain codes. */
export type CheckOutcome =
  { ok: true } | { ok: false; code: string; message: string; data?: Record<string, unknown> };

/** What the executor receives: the call, its caller and run, and the approval it carries to the minter. */
export interface ExecutionInput extends ToolCallActivityInput {
  caller: string;
  runId: string;
  approval?: ExecutionApproval;
}
