/**
 * Approval notifications as the call workflow and the worker share them: the events, their ids, the
 * plan the worker's evaluation records for a call that needs approval, and what one delivery carries.
 * Types and pure functions only: this module runs in the workflow sandbox too.
 */

/** What a call tells its approvers' channels about, named as nouns. */
export const notificationEvents = [
  'approval-requested',
  'approval-escalated',
  // a round still undecided shortly before it expires (the plan's reminder)
  'approval-expiring',
  // a chain's step completed: the next group's turn (the chain's escalation)
  'approval-turn',
  'approval-decided',
  'approval-expired',
] as const;

export type NotificationEvent = (typeof notificationEvents)[number];

/**
 * Which channels hear about a call's approval, recorded by its evaluation (never read from the
 * config by the workflow), so a deploy that changes the config never changes a waiting call's replay.
 */
export interface ApprovalNotificationPlan {
  /** Told when a round opens. */
  waiting: string[];
  /** Told when a round is still undecided after `afterMs`. */
  escalation?: { afterMs: number; channels: string[] };
  /** Told when a round is still undecided `beforeMs` before it expires: the waiting channels and these. */
  reminder?: { beforeMs: number; channels: string[] };
  /** Whether the channels told of a round are told how it ended (decided or expired). */
  followUp: boolean;
  /** Per approver group, the channels asked when it is the group's turn in a chain (instead of `waiting`). */
  groups?: Record<string, string[]>;
}

/** One event's id, the same on every attempt and every channel: `${callId}:${runId}:${round}:${event}`. */
export function notificationEventId(input: {
  callId: string;
  runId: string;
  round: number;
  event: NotificationEvent;
  /** A chain's step after the first: its turn is an event of its own. */
  step?: number;
}): string {
  const step = input.step !== undefined && input.step > 1 ? `:${input.step}` : '';
  return `${input.callId}:${input.runId}:${input.round}:${input.event}${step}`;
}

/** How a round ended, for a follow-up. */
export type RoundEnding =
  | { state: 'approved'; approvers: string[] }
  | { state: 'denied'; approver: string; reason: string }
  | { state: 'expired' }
  /** Closed without a decision that counts: the tool's contract changed while the call waited. */
  | { state: 'superseded'; reason: string }
  /** Closed without a decision: the call was cancelled (by its caller or an operator) or its tool disabled. */
  | { state: 'cancelled'; reason: string };

/** One delivery of one event to one channel: the notification activity's input. */
export interface ApprovalNotice {
  channel: string;
  event: NotificationEvent;
  eventId: string;
  callId: string;
  runId: string;
  round: number;
  tool: string;
  caller: string;
  /** On whose behalf the call acts (`for CUS-1 (end-user-chat)`), when its harness said. */
  actingFor?: string;
  riskLevel: string;
  summary: string;
  expiresAt: string;
  /** Present on `approval-decided` and `approval-expired`. */
  ending?: RoundEnding;
  /** On a chain's request or turn: the group asked, its step (from 1) and the chain's length. */
  chain?: NoticeChainStep;
}

/** Which step of a chain a notice asks for. */
export interface NoticeChainStep {
  group: string;
  step: number;
  steps: number;
}

/** What a delivery did: posted now, or found already delivered for this event and channel. */
export type NoticeDelivery = { ok: true; status: 'delivered' | 'already-delivered'; httpStatus?: number };
