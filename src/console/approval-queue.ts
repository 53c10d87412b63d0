import type { Client } from '@temporalio/client';
import type { AuditRecord, AuditStore } from '../audit/audit-store';
import type { CallState, DecisionAttempt } from '../shared/temporal';
import { callStateQuery, searchAttributes } from '../shared/temporal';

/*
 * What the console's pages show, read from Temporal (pending calls, a call's state) and the audit
 * store (what was decided, expired or refused). Read-only: nothing here sends anything to a call.
 */

/** A call waiting for approval, as the queue lists it. */
export interface QueueEntry {
  callId: string;
  tool: string;
  caller: string;
  session: string;
  riskLevel: string;
  preview: Record<string, unknown>;
  /** When the call started (ISO), for newest-first order. */
  startedAt: string;
  expiresAt: string;
  approvals: string[];
  quorum: number;
}

/** Which pending calls to show: all, or one tool's, or one caller's. */
export interface QueueFilter {
  tool?: string;
  caller?: string;
}

/**
 * Calls on `taskQueue` waiting for approval now, newest first, filtered by tool and caller. A call
 * whose state cannot be read right now (no worker answers) is left out, not fatal.
 */
export async function pendingCalls(input: {
  client: Client;
  taskQueue: string;
  filter?: QueueFilter;
  limit?: number;
}): Promise<QueueEntry[]> {
  // The queue name is the console's own configuration, never a request's; quotes are dropped all the same.
  const query =
    `${searchAttributes.approvalState.name} = "pending" AND ExecutionStatus = "Running"` +
    ` AND TaskQueue = "${input.taskQueue.replace(/"/g, '')}"`;
  const found: QueueEntry[] = [];
  const limit = input.limit ?? 200;
  for await (const execution of input.client.workflow.list({ query })) {
    let state: CallState;
    try {
      state = await input.client.workflow.getHandle(execution.workflowId).query(callStateQuery);
    } catch {
      continue;
    }
    const approval = state.approval;
    if (!approval || approval.state !== 'pending') continue;
    if (input.filter?.tool && state.tool !== input.filter.tool) continue;
    if (input.filter?.caller && state.caller !== input.filter.caller) continue;
    found.push({
      callId: execution.workflowId,
      tool: state.tool,
      caller: state.caller,
      session: state.session,
      riskLevel: approval.riskLevel,
      preview: approval.preview,
      startedAt: execution.startTime.toISOString(),
      expiresAt: approval.expiresAt,
      approvals: approval.approvals,
      quorum: approval.quorum,
    });
    if (found.length >= limit) break;
  }
  return found.sort((a, b) => b.startedAt.localeCompare(a.startedAt) || a.callId.localeCompare(b.callId));
}

/** A call's state, or null when there is no such call. */
export async function callState(input: { client: Client; callId: string }): Promise<CallState | null> {
  try {
    return await input.client.workflow.getHandle(input.callId).query(callStateQuery);
  } catch (error) {
    if ((error as Error).name === 'WorkflowNotFoundError') return null;
    throw error;
  }
}

/** One closed call that asked for approval, with every decision attempt made on it. */
export interface HistoryEntry {
  record: AuditRecord;
  attempts: (DecisionAttempt & { recordedAt: string })[];
}

/** A decision attempt that changed nothing, on a call still open or closed. */
export type RefusedAttempt = DecisionAttempt & { recordedAt: string };

/**
 * The approval history the audit store holds: the newest closed calls that asked for approval
 * (decided, expired, or refused at a later step) with their decision attempts, and every refused
 * attempt on those calls and on `openCallIds` (calls still waiting), newest first.
 */
export function approvalHistory(input: {
  audit: AuditStore;
  openCallIds: readonly string[];
  limit?: number;
}): {
  closed: HistoryEntry[];
  refused: RefusedAttempt[];
} {
  const closed: HistoryEntry[] = [];
  for (const record of input.audit.recent({ limit: (input.limit ?? 50) * 4 })) {
    const attempts = input.audit.decisionAttemptsOf(record.callId);
    const askedApproval = record.code.startsWith('APPROVAL_') || (record.decisions?.length ?? 0) > 0;
    if (!askedApproval && attempts.length === 0) continue;
    const ofRun = attempts.filter((attempt) => attempt.runId === record.runId || attempt.runId === '');
    closed.push({ record, attempts: ofRun });
    if (closed.length >= (input.limit ?? 50)) break;
  }
  // The admin side and the workflow each log a refusal they both saw, under the same update id:
  // shown once, as the workflow judged it.
  const refusedByUpdate = new Map<string, RefusedAttempt>();
  const callIds = new Set([...closed.map((entry) => entry.record.callId), ...input.openCallIds]);
  for (const callId of callIds) {
    for (const attempt of input.audit.decisionAttemptsOf(callId)) {
      if (attempt.outcome === 'accepted') continue;
      const seen = refusedByUpdate.get(attempt.updateId);
      if (!seen || attempt.source === 'workflow') refusedByUpdate.set(attempt.updateId, attempt);
    }
  }
  const refused = [...refusedByUpdate.values()];
  refused.sort((a, b) => b.recordedAt.localeCompare(a.recordedAt));
  return { closed, refused };
}
