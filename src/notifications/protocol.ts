import { defineSignal } from '@temporalio/workflow';
import type { ApprovalNotificationPlan, NoticeChainStep, RoundEnding } from './notices';
import type { ApprovalView, CallState, ChainView, DecisionRecord } from '../calls/protocol';

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
  /** On whose behalf the call acts, for approvers (`for CUS-1 (end-user-chat)`); absent: nobody named. */
  actingFor?: string;
  summary: string;
  /** How long a round waits before it expires: an escalation at or after it never fires. */
  windowMs: number;
}

/** What a notice says about a round. */
export interface NotifiedRound {
  round: number;
  riskLevel: string;
  expiresAt: string;
  /** A chain's round: the step whose turn it is. */
  chain?: NoticeChainStep;
}

/** The notifier's input: the call, the plan its evaluation recorded, and the round that opened first. */
export interface ApprovalNotifierInput {
  call: NotifiedCall;
  plan: ApprovalNotificationPlan;
  firstRound: NotifiedRound;
}

/** A later round opened (the preview changed after an approval). */
export const roundOpenedSignal = defineSignal<[NotifiedRound]>('approvalRoundOpened');

/** A chain's step completed: the next group's turn, in the same round. */
export const chainTurnSignal = defineSignal<[NotifiedRound]>('approvalChainTurn');

/** A round ended: approved, denied or expired. */
export const roundEndedSignal =
  defineSignal<[{ round: NotifiedRound; ending: RoundEnding }]>('approvalRoundEnded');

/** The call recorded its answer and closes: no round opens any more. */
export const callClosedSignal = defineSignal('approvalCallClosed');

/**
 * What a call's own state says of one of its rounds: the only source the notifier posts from, since
 * its signals (and a notifier's input) can come from anyone holding a Temporal client. `current`: the
 * round the call shows now (its risk level and expiry are known); `ending`: how it ended, if it did.
 */
export type RoundProgress =
  | {
      ok: true;
      round: number;
      current: boolean;
      riskLevel?: string;
      expiresAt?: string;
      /** The current round's chain step, when it has a chain. */
      chain?: NoticeChainStep;
      ending?: RoundEnding;
      callClosed: boolean;
    }
  | { ok: false; reason: string; callClosed: boolean };

/** Reads a round's progress from the call's state (`callStateQuery`); pure, never trusts a signal. */
export function roundProgressOf(input: { state: CallState; runId: string; round: number }): RoundProgress {
  const { state, runId, round } = input;
  const callClosed = state.stage === 'done';
  const view = state.approval;
  if (!view || view.runId !== runId) {
    return { ok: false, reason: 'the call has no approval round in this run', callClosed };
  }
  if (!Number.isInteger(round) || round < 1 || round > view.round) {
    return { ok: false, reason: `the call never opened round ${round}`, callClosed };
  }
  const accepted = state.decisions.filter(
    (decision) => decision.round === round && decision.outcome === 'accepted',
  );
  if (round < view.round) {
    // A past round: approved (then the preview changed), or superseded by a contract change.
    const approvers = accepted
      .filter((decision) => decision.decision === 'approve')
      .map((decision) => decision.approver);
    const ending: RoundEnding =
      approvers.length >= view.quorum
        ? { state: 'approved', approvers }
        : {
            state: 'superseded',
            reason:
              view.supersedes?.round === round ? view.supersedes.reason : 'a later round opened in its place',
          };
    return { ok: true, round, current: false, ending, callClosed };
  }
  const facts = {
    ok: true as const,
    round,
    current: true,
    riskLevel: view.riskLevel,
    expiresAt: view.expiresAt,
    ...(view.chain ? { chain: chainStepOf(view.chain) } : {}),
  };
  const ending = currentRoundEnding({ view, accepted });
  return { ...facts, ...(ending ? { ending } : {}), callClosed };
}

/** A round's chain as a notice names it: the step whose turn it is (the last one once complete). */
export function chainStepOf(chain: ChainView): NoticeChainStep {
  const step = Math.min(chain.step, chain.steps.length);
  return { group: chain.steps[step - 1]?.group ?? '', step, steps: chain.steps.length };
}

function currentRoundEnding(input: {
  view: ApprovalView;
  accepted: DecisionRecord[];
}): RoundEnding | undefined {
  const { view } = input;
  switch (view.state) {
    case 'pending':
      return undefined;
    case 'approved':
      return { state: 'approved', approvers: [...view.approvals] };
    case 'expired':
      return { state: 'expired' };
    case 'cancelled':
      return { state: 'cancelled', reason: view.cancelledBecause ?? 'cancelled' };
    case 'superseded':
      return { state: 'superseded', reason: view.supersededBecause ?? 'a later round opened in its place' };
    case 'denied': {
      const denial = input.accepted.find((decision) => decision.decision === 'deny');
      return denial
        ? { state: 'denied', approver: denial.approver, reason: denial.reason }
        : { state: 'denied', approver: 'unknown', reason: '' };
    }
  }
}
