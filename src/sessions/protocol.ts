/**
 * What clients and the worker exchange about sessions, now that a session is state in the audit store
 * and not a workflow (issue 28). A call admits itself (its workflow's first step); everything else a
 * harness or an operator asks of a session (its stats, its end, a reset of its circuits, the list of
 * sessions, the admission of a proposal that replays a completed call) is one short workflow of type
 * `toolSessionOperation` that runs one local activity against the store and closes. Sandbox-safe.
 */
import type { Proposal } from '../calls/proposal';
import type { SessionStats, SessionSummary } from './session';
import type { ToolResult } from '../shared/tool-result';

/** The workflow type of a session operation; the user's workflows module exports it under this name. */
export const sessionOperationWorkflowType = 'toolSessionOperation';

/** The workflow ID prefix of session operations (a fresh id follows per operation). */
export const sessionOperationIdPrefix = 'tso-';

/** What an ending session signs (kind `session-end`): the session, its caller and the reason. */
export interface SessionEndClaims {
  session: string;
  caller: string;
  reason?: string;
  /** When the harness signed it (ISO 8601): an end is refused more than five minutes after. */
  issuedAt: string;
}

/** What an operator's reset signs (kind `session-reset`). */
export interface SessionResetClaims {
  session: string;
  tool?: string;
  operator: string;
  reason: string;
  issuedAt: string;
}

/** One operation on the session store. */
export type SessionOperation =
  | {
      op: 'admit';
      /** A proposal that replays a completed call: it is a step of its session like any other. */
      proposalId: string;
      callId: string;
      proposal: Proposal;
      signature?: string;
    }
  | { op: 'stats'; session: string }
  | { op: 'list'; limit?: number }
  | { op: 'end'; claims: SessionEndClaims; signature: string }
  | { op: 'reset'; claims: SessionResetClaims; signature: string };

/** The answer to each operation. */
export type SessionOperationAnswer =
  | { op: 'admit'; admitted: true }
  | { op: 'admit'; admitted: false; result: ToolResult }
  | { op: 'stats'; stats: SessionStats }
  | { op: 'list'; sessions: SessionSummary[] }
  | { op: 'end' | 'reset'; ok: true; stats: SessionStats }
  | { op: 'end' | 'reset'; ok: false; code: SessionOperationRefusal; message: string };

/** Why an end or a reset was refused. */
export type SessionOperationRefusal = 'UNAUTHENTICATED_CALLER' | 'SIGNATURE_INVALID' | 'NOT_AN_OPERATOR';

/** How long a signed end or reset holds after it was issued. */
export const sessionOperationWindowMs = 5 * 60 * 1000;
