import type { CallContext } from './call-context';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { DecisionEnvelope, SignedDecision, SignedEdit } from '../approvals/protocol';
import type { Proposal } from './proposal';
import type { ToolResult } from '../shared/tool-result';

/** The input of a call's workflow: the proposal that started it, its update id and the caller's signature. */
export interface ToolCallInput {
  proposalId: string;
  proposal: Proposal;
  /** The caller's signature over `{ callId, proposal }` (kind `proposal`). */
  signature?: string;
}

/** The workflow type every call runs as; the user's workflows module exports it under this name. */
export const toolCallWorkflowType = 'toolCall';

/** One proposal delivered to a call's workflow; `proposalId` is also the update id, unique per proposal. */
export interface ProposeRequest {
  proposalId: string;
  proposal: Proposal;
  /** The caller's Ed25519 signature (base64url) over `{ callId, proposal }`, kind `proposal`. */
  signature?: string;
}

/** The workflow's answer to one proposal: the result, and whether this proposal started the run. */
export interface ProposeResponse {
  result: ToolResult;
  startedRun: boolean;
  /**
   * Set when this proposal was admitted but joined a run its starter's admission refused (that run
   * runs nothing): the client proposes again, under the same proposal id, once that run has closed.
   */
  proposeAgain?: true;
}

/** Delivers a proposal (update-with-start) and answers when the call has a result for the agent. */
export const proposeUpdate = defineUpdate<ProposeResponse, [ProposeRequest]>('propose');

/** One decision attempt the workflow saw: accepted, or refused with its code. */
export interface DecisionRecord {
  approver: string;
  decision: DecisionEnvelope['decision'];
  reason: string;
  round: number;
  /** `accepted`, or the refusal's decision code. */
  outcome: string;
  at: string;
}

/** Why a round was opened in place of an earlier one of the same call, in words a person reads. */
export interface RoundSupersession {
  /** The round it replaced. */
  round: number;
  /** e.g. "the contract of refund_order changed in a deploy while the call waited". */
  reason: string;
}

/** An approval round as approvers see it. */
export interface ApprovalView {
  round: number;
  nonce: string;
  runId: string;
  argsDigest: string;
  previewDigest: string;
  /** The tool's contract the round was opened under: a decision must name it (see `DecisionEnvelope`). */
  contractDigest: string;
  preview: Record<string, unknown>;
  riskLevel: string;
  quorum: number;
  approvals: string[];
  expiresAt: string;
  /** `superseded`: closed without a decision that counts, because what would run changed (see `supersededBecause`). */
  /** `cancelled`: closed without a decision, because the call was cancelled while it waited. */
  state: 'pending' | 'approved' | 'denied' | 'expired' | 'superseded' | 'cancelled';
  /** On a cancelled round: who cancelled it, and why. */
  cancelledBecause?: string;
  /** On a superseded round: why it no longer holds. */
  supersededBecause?: string;
  /** On a round opened in place of another: which one, and why. */
  supersedes?: RoundSupersession;
  /** On a round an approver's edit superseded: who edited (decisions for it are then `ALREADY_DECIDED`). */
  editedBy?: string;
  /** Whose turn it is: the approvers whose grant covers the round and who do not operate the caller. */
  eligible?: string[];
  /** When the approvers' channels are reminded that the round is about to expire (the notifications' `reminder`). */
  remindAt?: string;
  /** Where the round stands in its approval chain, when its level has one. */
  chain?: ChainView;
}

/** A round's approval chain: the groups in order, and which one's turn it is. */
export interface ChainView {
  /** The step whose turn it is, from 1; past the last step once the chain is complete. */
  step: number;
  steps: ChainStepView[];
}

/** One step of a chain: its group, the approvals it needs and has, and whether it is done, current or to come. */
export interface ChainStepView {
  group: string;
  quorum: number;
  approvals: string[];
  state: 'approved' | 'current' | 'waiting';
  /** Until when the current step (or a done one) could be decided. */
  expiresAt?: string;
}

/** One accepted edit of a call's arguments: who, why, in which round, both versions and their digests. */
export interface EditRecord {
  approver: string;
  reason: string;
  /** The round it edited; the next round asks for the edited arguments. */
  round: number;
  /** The digest of the arguments before the edit (the round's), and of the edited ones. */
  argsDigest: string;
  editedDigest: string;
  /** The validated arguments before the edit, and after it (as the evaluation judged them). */
  proposedArguments: Record<string, unknown>;
  editedArguments: Record<string, unknown>;
  /** The risk level of the edited arguments. */
  riskLevel: string;
  at: string;
}

/** What a call is doing now, for the client's `result(callId, { wait: false })`, the CLI and approvers. */
export interface CallState {
  stage: 'validating' | 'checking' | 'awaiting-approval' | 'executing' | 'verifying' | 'recording' | 'done';
  tool: string;
  caller: string;
  session: string;
  /** On whose behalf (end user, tenant, channel), as the proposal carried it; for approvers to read. */
  context?: CallContext;
  validatedArguments?: Record<string, unknown>;
  riskLevel?: string;
  /** Why approval was asked, in words (the policy rule). */
  approvalRule?: string;
  approval?: ApprovalView;
  decisions: DecisionRecord[];
  /** Approvers' edits of the arguments, in order (absent: none). */
  edits?: EditRecord[];
  /** What an approver may edit: the tool's input as the model sends it (JSON Schema), while approval is asked. */
  inputSchema?: Record<string, unknown>;
  /**
   * Step 7 by a standing grant: the grant the call used (its id, approvers, reason, expiry), or why the
   * grant its evaluation saw no longer covered it (the call then waited for a human). Absent: no grant
   * covered it.
   */
  grant?:
    | { outcome: 'used'; grantId: string; approvers: string[]; reason: string; expiresAt: string }
    | { outcome: 'not-covered'; reason: string };
  /** The answer while approval is pending (`APPROVAL_PENDING`); not final. */
  pending?: ToolResult;
  result?: ToolResult;
}

/** Reads a call's current state; pure, never changes the workflow. */
export const callStateQuery = defineQuery<CallState>('callState');

/** What the approver learns synchronously when a decision is accepted (a refused one fails the update with its code). */
export interface DecisionReceipt {
  accepted: true;
  state: ApprovalView['state'];
  approvals: string[];
  quorum: number;
}

/** Delivers one signed decision; its validator refuses with a decision code before anything is recorded. */
export const decideUpdate = defineUpdate<DecisionReceipt, [SignedDecision]>('decide');

/** What the editing approver learns when an edit is accepted: the round it closed, and the edited call's risk level. */
export interface EditReceipt {
  accepted: true;
  /** The round the edit superseded; the next one asks for the edited arguments. */
  round: number;
  editedDigest: string;
  riskLevel: string;
}

/**
 * Delivers one signed edit of the open round's arguments. Its validator refuses with a decision code
 * before anything is recorded; the handler has the edit judged (schema, bound parameters, resource,
 * risk level, policy, the editor's grant) and refuses with an edit code, the round open as it was.
 */
export const editUpdate = defineUpdate<EditReceipt, [SignedEdit]>('edit');

/** Who cancels a waiting call: the call's own caller (its harness's key) or an operator (their key). */
export type Canceller = { caller: string } | { operator: string };

/** What a cancellation signs (kind `cancellation`): one run of one call, by whom, why, when. */
/** The longest reason a cancellation may give. */
export const maxCancellationReasonLength = 500;

export interface Cancellation {
  callId: string;
  runId: string;
  by: Canceller;
  reason: string;
  issuedAt: string;
}

/** A cancellation with its Ed25519 signature (base64url) by the caller's or the operator's key. */
export interface SignedCancellation {
  cancellation: Cancellation;
  signature: string;
}

/** What a canceller learns when the cancellation is accepted (a refused one fails the update with its code). */
export interface CancellationReceipt {
  accepted: true;
  callId: string;
  cancelledBy: string;
}

/**
 * Cancels a call that waits for approval: it closes `APPROVAL_CANCELLED`, nothing applied. Its
 * validator refuses (`SIGNATURE_INVALID`, `CANCEL_TOO_LATE`, `NOT_AWAITING_APPROVAL`) before anything
 * is recorded.
 */
export const cancelUpdate = defineUpdate<CancellationReceipt, [SignedCancellation]>('cancel');

/** Search attributes every call carries (docs/design.md); registered on the namespace at start. */
export const searchAttributes = {
  toolName: defineSearchAttributeKey('ToolName', SearchAttributeType.KEYWORD),
  caller: defineSearchAttributeKey('Caller', SearchAttributeType.KEYWORD),
  sessionId: defineSearchAttributeKey('SessionId', SearchAttributeType.KEYWORD),
  toolCode: defineSearchAttributeKey('ToolCode', SearchAttributeType.KEYWORD),
  approvalState: defineSearchAttributeKey('ApprovalState', SearchAttributeType.KEYWORD),
  riskLevel: defineSearchAttributeKey('RiskLevel', SearchAttributeType.INT),
} as const;

/** The approval states the `ApprovalState` search attribute takes. */
export type ApprovalState =
  | 'none'
  | 'pending'
  | 'approved'
  | 'denied'
  | 'expired'
  | 'cancelled'
  // covered by a standing grant: ran without waiting for a human
  | 'granted';
