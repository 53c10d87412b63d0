import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { Proposal } from './proposal';
import type { ToolResult } from './tool-result';

/** The task queue toolgate's workers poll unless configured otherwise. */
export const defaultTaskQueue = 'toolgate';
/** The workflow type every call runs as; the user's workflows module exports it under this name. */
export const toolCallWorkflowType = 'toolCall';

/** One proposal delivered to a call's workflow; `proposalId` is also the update id, unique per proposal. */
export interface ProposeRequest {
  proposalId: string;
  proposal: Proposal;
}

/** The workflow's answer to one proposal: the result, and whether this proposal started the run. */
export interface ProposeResponse {
  result: ToolResult;
  startedRun: boolean;
}

/** Delivers a proposal (update-with-start) and answers when the call has a result for the agent. */
export const proposeUpdate = defineUpdate<ProposeResponse, [ProposeRequest]>('propose');

/** What a call is doing now, for the client's `result(callId, { wait: false })` and the CLI. */
export interface CallState {
  stage: 'validating' | 'checking' | 'executing' | 'verifying' | 'recording' | 'done';
  result?: ToolResult;
}

/** Reads a call's current state; pure, never changes the workflow. */
export const callStateQuery = defineQuery<CallState>('callState');

/** Search attributes every call carries (DESIGN.md); registered on the namespace at start. */
export const searchAttributes = {
  toolName: defineSearchAttributeKey('ToolName', SearchAttributeType.KEYWORD),
  caller: defineSearchAttributeKey('Caller', SearchAttributeType.KEYWORD),
  sessionId: defineSearchAttributeKey('SessionId', SearchAttributeType.KEYWORD),
  toolCode: defineSearchAttributeKey('ToolCode', SearchAttributeType.KEYWORD),
  approvalState: defineSearchAttributeKey('ApprovalState', SearchAttributeType.KEYWORD),
  riskLevel: defineSearchAttributeKey('RiskLevel', SearchAttributeType.INT),
} as const;

/** The approval states the `ApprovalState` search attribute takes. */
export type ApprovalState = 'none' | 'pending' | 'approved' | 'denied' | 'expired';
