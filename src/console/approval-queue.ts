import type { CallContext } from '../calls/call-context';
import type { Client } from '@temporalio/client';
import { QueryNotRegisteredError } from '@temporalio/client';
import type { AuditRecord, AuditStore } from '../audit/audit-store';
import type { CallState } from '../calls/protocol';
import type { DecisionAttempt } from '../shared/temporal';
import { callStateQuery, searchAttributes } from '../calls/protocol';
import { isCallId } from '../calls/proposal';

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
  /** On whose behalf the call acts, when its harness said. */
  context?: CallContext;
  riskLevel: string;
  preview: Record<string, unknown>;
  /** When the call started (ISO), for newest-first order. */
  startedAt: string;
  expiresAt: string;
  /** When its channels are reminded it expires soon (the notifications' reminder); the card is marked from then. */
  remindAt?: string;
  approvals: string[];
  quorum: number;
}

/** Which pending calls to show: all, or one tool's, or one caller's. */
export interface QueueFilter {
  tool?: string;
  caller?: string;
}

/** The pending calls a queue page shows, and how many there are. */
export interface PendingQueue {
  /** The newest matching calls, at most the limit, newest first. */
  entries: QueueEntry[];
  /** How many pending calls match the filter in the listing (which stops at its scan limit). */
  matching: number;
  /** False when the listing stopped at its scan limit: more calls may be waiting than `matching`. */
  complete: boolean;
}

/**
 * Calls on `taskQueue` waiting for approval now, newest first, filtered by tool and caller: the
 * listing (at most `scanLimit` executions, read from visibility alone) is filtered and ordered, then
 * only the newest `limit` are asked for their state, a few at a time. A call whose state cannot be
 * read right now (no worker answers), or that was decided meanwhile, is left out, not fatal.
 */
export async function pendingCalls(input: {
  client: Client;
  taskQueue: string;
  filter?: QueueFilter;
  /** How many entries to read in full (default 50). */
  limit?: number;
  /** How many pending executions to list at most (default 1,000). */
  scanLimit?: number;
}): Promise<PendingQueue> {
  // The queue name is the console's own configuration, never a request's; quotes are dropped all the same.
  const query =
    `${searchAttributes.approvalState.name} = "pending" AND ExecutionStatus = "Running"` +
    ` AND TaskQueue = "${input.taskQueue.replace(/"/g, '')}"`;
  const limit = input.limit ?? 50;
  const scanLimit = input.scanLimit ?? 1_000;
  const { filter } = input;
  const listed: { callId: string; startedAt: string; tool?: string; caller?: string }[] = [];
  let complete = true;
  for await (const execution of input.client.workflow.list({ query })) {
    if (listed.length >= scanLimit) {
      complete = false;
      break;
    }
    const attributes = execution.typedSearchAttributes;
    listed.push({
      callId: execution.workflowId,
      startedAt: execution.startTime.toISOString(),
      tool: attributes.get(searchAttributes.toolName),
      caller: attributes.get(searchAttributes.caller),
    });
  }
  const matches = (tool: string | undefined, caller: string | undefined): boolean =>
    (!filter?.tool || tool === filter.tool) && (!filter?.caller || caller === filter.caller);
  const matching = listed
    .filter((call) => matches(call.tool, call.caller))
    .sort((a, b) => b.startedAt.localeCompare(a.startedAt) || a.callId.localeCompare(b.callId));
  const entries: QueueEntry[] = [];
  const shown = matching.slice(0, limit);
  // A few queries at a time: each one is a task for a worker.
  for (let start = 0; start < shown.length; start += 8) {
    const states = await Promise.all(
      shown.slice(start, start + 8).map(async (call) => {
        try {
          return await input.client.workflow.getHandle(call.callId).query(callStateQuery);
        } catch {
          return undefined;
        }
      }),
    );
    states.forEach((state, index) => {
      const call = shown[start + index];
      const approval = state?.approval;
      if (!call || !state || !approval || approval.state !== 'pending') return;
      if (!matches(state.tool, state.caller)) return;
      entries.push({
        callId: call.callId,
        tool: state.tool,
        caller: state.caller,
        session: state.session,
        ...(state.context ? { context: state.context } : {}),
        riskLevel: approval.riskLevel,
        preview: approval.preview,
        startedAt: call.startedAt,
        expiresAt: approval.expiresAt,
        ...(approval.remindAt !== undefined ? { remindAt: approval.remindAt } : {}),
        approvals: approval.approvals,
        quorum: approval.quorum,
      });
    });
  }
  return { entries, matching: matching.length, complete };
}

/**
 * A call's state, or null when there is no such call: an id that is not a call id (the key registry's,
 * a session's) or a workflow without the call's state query is no call, never a server error.
 */
export async function callState(input: { client: Client; callId: string }): Promise<CallState | null> {
  if (!isCallId(input.callId)) return null;
  try {
    return await input.client.workflow.getHandle(input.callId).query(callStateQuery);
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'WorkflowNotFoundError' || error instanceof QueryNotRegisteredError) return null;
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

/** One page of the approval history, with what was left off. */
export interface ApprovalHistory {
  closed: HistoryEntry[];
  /** Refused attempts on the page's calls and on the open calls, newest first, at most the refused limit. */
  refused: RefusedAttempt[];
  /** How many refused attempts there were on those calls in all. */
  refusedTotal: number;
  /** True when older closed calls may follow this page. */
  more: boolean;
}

/**
 * One page of the approval history the audit store holds: the closed calls that asked for approval
 * (decided, expired, or refused at a later step), newest first, skipping `offset` and taking
 * `limit`, with their decision attempts; and the refused attempts on those calls and on
 * `openCallIds` (calls still waiting), newest first, at most `refusedLimit`. Reads a bounded number
 * of records: four per closed call wanted.
 */
export async function approvalHistory(input: {
  audit: AuditStore;
  openCallIds: readonly string[];
  limit?: number;
  offset?: number;
  refusedLimit?: number;
}): Promise<ApprovalHistory> {
  const limit = input.limit ?? 25;
  const offset = input.offset ?? 0;
  const scanned = (offset + limit) * 4;
  const records = await input.audit.recent({ limit: scanned });
  const closed: HistoryEntry[] = [];
  let skipped = 0;
  let more = records.length >= scanned;
  for (const record of records) {
    const attempts = await input.audit.decisionAttemptsOf(record.callId);
    const askedApproval = record.code.startsWith('APPROVAL_') || (record.decisions?.length ?? 0) > 0;
    if (!askedApproval && attempts.length === 0) continue;
    if (skipped < offset) {
      skipped++;
      continue;
    }
    if (closed.length >= limit) {
      more = true;
      break;
    }
    const ofRun = attempts.filter((attempt) => attempt.runId === record.runId || attempt.runId === '');
    closed.push({ record, attempts: ofRun });
  }
  // The admin side and the workflow each log a refusal they both saw, under the same update id:
  // shown once, as the workflow judged it.
  const refusedByUpdate = new Map<string, RefusedAttempt>();
  const callIds = new Set([...closed.map((entry) => entry.record.callId), ...input.openCallIds]);
  for (const callId of callIds) {
    for (const attempt of await input.audit.decisionAttemptsOf(callId)) {
      if (attempt.outcome === 'accepted') continue;
      const seen = refusedByUpdate.get(attempt.updateId);
      if (!seen || attempt.source === 'workflow') refusedByUpdate.set(attempt.updateId, attempt);
    }
  }
  const refused = [...refusedByUpdate.values()];
  refused.sort((a, b) => b.recordedAt.localeCompare(a.recordedAt));
  return {
    closed,
    refused: refused.slice(0, input.refusedLimit ?? 100),
    refusedTotal: refused.length,
    more,
  };
}
