import { defineSignal } from '@temporalio/workflow';
import type { ApprovalNotificationPlan, RoundEnding } from './notifications';

/**
 * The workflow that delivers one call run's approval notifications, as the call and the notifier
 * share it: its type, its id, its input and the signals the call sends it. The notifier is a child
 * the call abandons when it closes, so a channel that is down never holds the call's answer; it sets
 * no search attribute, so nothing that lists calls (by `ApprovalState`, `SessionId`...) lists it.
 */

/** The notifier's workflow type. */
export const approvalNotifierWorkflowType = 'toolgateApprovalNotifications';

/** The notifier's workflow id: one per run of a call, `${callId}:${runId}:notifications`. */
export function approvalNotifierWorkflowId(input: { callId: string; runId: string }): string {
  return `${input.callId}:${input.runId}:notifications`;
}

/** What every notice of a call run says about the call, fixed for the run. */
export interface NotifiedCall {
  callId: string;
  runId: string;
  tool: string;
  caller: string;
  summary: string;
  /** How long a round waits before it expires: an escalation at or after it never fires. */
  windowMs: number;
}

/** What a notice says about a round. */
export interface NotifiedRound {
  round: number;
  riskLevel: string;
  expiresAt: string;
}

/** The notifier's input: the call, the plan its evaluation recorded, and the round that opened first. */
export interface ApprovalNotifierInput {
  call: NotifiedCall;
  plan: ApprovalNotificationPlan;
  firstRound: NotifiedRound;
}

/** A later round opened (the preview changed after an approval). */
export const roundOpenedSignal = defineSignal<[NotifiedRound]>('approvalRoundOpened');

/** A round ended: approved, denied or expired. */
export const roundEndedSignal =
  defineSignal<[{ round: NotifiedRound; ending: RoundEnding }]>('approvalRoundEnded');

/** The call recorded its answer and closes: no round opens any more. */
export const callClosedSignal = defineSignal('approvalCallClosed');
