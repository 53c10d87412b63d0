import {
  CancellationScope,
  ChildWorkflowCancellationType,
  log,
  ParentClosePolicy,
  startChild,
} from '@temporalio/workflow';
import type { ChildWorkflowHandle } from '@temporalio/workflow';
import type { NotifiedCall, NotifiedRound } from './protocol';
import {
  approvalNotifierWorkflowId,
  approvalNotifierWorkflowType,
  callClosedSignal,
  chainStepOf,
  chainTurnSignal,
  roundEndedSignal,
  roundOpenedSignal,
} from './protocol';
import type { ApprovalNotificationPlan, RoundEnding } from './notices';
import type { ApprovalView } from '../calls/protocol';
import type { toolgateApprovalNotifications } from './workflow';

type Notifier = ChildWorkflowHandle<typeof toolgateApprovalNotifications>;

/**
 * A call's approval notifications, from the call's side. The first round that opens starts the
 * notifier (`toolgateApprovalNotifications`, a child the call abandons when it closes) with the plan
 * the evaluation recorded; later rounds and their ends are signalled to it in order, and `closed()`
 * tells it the call closes. The call never waits for a webhook: `closed()` waits only for the server
 * to take these messages. Without a plan it sends nothing, so a call of a deployment without
 * notifications has the same commands as before.
 */
export class ApprovalNotifications {
  /** The notifier's start, then each signal after the one before: it hears the rounds in order. */
  private messages?: Promise<Notifier | undefined>;

  constructor(
    private readonly call: NotifiedCall,
    private readonly plan: ApprovalNotificationPlan | undefined,
  ) {}

  /** A round opened: the first starts the notifier, a later one is signalled to it. */
  opened(round: ApprovalView): void {
    if (!this.plan) return;
    if (!this.messages) {
      this.messages = this.start(this.plan, notifiedRound(round));
      return;
    }
    this.tell((notifier) => notifier.signal(roundOpenedSignal, notifiedRound(round)));
  }

  /** A chain's turn passed to its next group: the notifier asks that group's channels. */
  turn(round: ApprovalView): void {
    this.tell((notifier) => notifier.signal(chainTurnSignal, notifiedRound(round)));
  }

  /** A round ended (approved, denied or expired): the notifier cancels its escalation and follows up. */
  ended(round: ApprovalView, ending: RoundEnding): void {
    this.tell((notifier) => notifier.signal(roundEndedSignal, { round: notifiedRound(round), ending }));
  }

  /** The call recorded its answer: tells the notifier, and waits until the server took every message. */
  async closed(): Promise<void> {
    this.tell((notifier) => notifier.signal(callClosedSignal));
    await this.messages;
  }

  private async start(
    plan: ApprovalNotificationPlan,
    firstRound: NotifiedRound,
  ): Promise<Notifier | undefined> {
    const { call } = this;
    try {
      // Not cancellable, and abandoned: the call's end, however it ends, never ends its notifications.
      return await CancellationScope.nonCancellable(() =>
        startChild<typeof toolgateApprovalNotifications>(approvalNotifierWorkflowType, {
          workflowId: approvalNotifierWorkflowId(call),
          args: [{ call, plan, firstRound }],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          cancellationType: ChildWorkflowCancellationType.ABANDON,
          staticSummary: `approval notifications: ${call.tool} for ${call.caller}`,
        }),
      );
    } catch (error) {
      log.warn('approval notifications could not start', { callId: call.callId, error: String(error) });
      return undefined;
    }
  }

  /** Sends one signal once the previous message was taken; a notifier that is gone hears no more. */
  private tell(signal: (notifier: Notifier) => Promise<void>): void {
    if (!this.messages) return;
    this.messages = this.messages.then(async (notifier) => {
      if (!notifier) return undefined;
      try {
        await CancellationScope.nonCancellable(() => signal(notifier));
        return notifier;
      } catch (error) {
        log.warn('approval notifications could not be told', {
          callId: this.call.callId,
          error: String(error),
        });
        return undefined;
      }
    });
  }
}

function notifiedRound(round: ApprovalView): NotifiedRound {
  return {
    round: round.round,
    riskLevel: round.riskLevel,
    expiresAt: round.expiresAt,
    ...(round.chain ? { chain: chainStepOf(round.chain) } : {}),
  };
}
