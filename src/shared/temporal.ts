import type { Sinks } from '@temporalio/workflow';
import type { RegistryEvent } from '../approver-keys/protocol';
import type { Proposal } from '../calls/proposal';
import type { ToolResult } from './tool-result';

/** The task queue toolgate's workers poll unless configured otherwise. */
export const defaultTaskQueue = 'toolgate';
/** A decision attempt, accepted or refused, as the audit store keeps it. */
export interface DecisionAttempt {
  updateId: string;
  callId: string;
  runId: string;
  approver: string;
  decision: string;
  /** `accepted`, or the refusal's decision code. */
  outcome: string;
  source: 'workflow' | 'admin';
  envelope: unknown;
  /** The enrolled key the decision was signed with (absent: the policy's key of the approver). */
  keyId?: string;
}

/**
 * A proposal its session refused at admission (step 0): no call workflow runs for it, so the worker
 * writes its audit record from this.
 */
export interface AdmissionRefusal {
  /** The proposal's id: with the call id, it keys the record, so the same refusal is written once. */
  proposalId: string;
  callId: string;
  /** The session that refused it (a proposal sent into another session names its own in `proposal`). */
  session: string;
  proposal: Proposal;
  result: ToolResult;
  /** The policy version the session judged by, when it had loaded the caller's policy. */
  policyVersion?: string;
  /** When the session decided (workflow time). */
  at: string;
}

/**
 * Sinks the workflows use for what has no command of its own: refused decisions leave no trace in
 * history, and session refusals start no call; both are audited here.
 */
export interface ToolGateSinks extends Sinks {
  audit: {
    decisionAttempt(attempt: Omit<DecisionAttempt, 'source'>): void;
    /** Every change attempted on the approver-key registry, accepted or refused. */
    registryEvent(event: RegistryEvent): void;
  };
}
