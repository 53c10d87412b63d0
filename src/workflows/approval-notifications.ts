import { condition, log, proxyActivities } from '@temporalio/workflow';
import type { NotificationActivities } from '../activities/notification-activities';
import type {
  ApprovalNotice,
  ApprovalNotificationPlan,
  NotificationEvent,
  RoundEnding,
} from '../shared/notifications';
import { notificationEventId } from '../shared/notifications';
import type { ApprovalView } from '../shared/temporal';

// One activity per event and channel: a channel that fails retries alone, one that took it is not
// posted again. Backoff from 0.5 s doubling to 1 min, 10 attempts: about three minutes in all.
const notificationActivities = proxyActivities<NotificationActivities>({
  startToCloseTimeout: '15s',
  retry: {
    initialInterval: '500ms',
    backoffCoefficient: 2,
    maximumInterval: '1m',
    maximumAttempts: 10,
  },
});

/**
 * A call's approval notifications: what the channels in the evaluation's recorded plan are told when a
 * round opens, stays undecided past the escalation delay, and ends. Deliveries run beside the wait and
 * never block it; `settle()` waits for every one before the run closes. Without a plan it schedules
 * nothing, so a call of a deployment without notifications has the same commands as before.
 */
export class ApprovalNotifications {
  private readonly deliveries: Promise<void>[] = [];
  private readonly endedRounds = new Set<number>();
  private readonly escalatedRounds = new Set<number>();
  private closing = false;

  constructor(
    private readonly call: {
      callId: string;
      runId: string;
      tool: string;
      caller: string;
      summary: string;
      riskLevel: string;
      /** How long a round waits before it expires: an escalation at or after it never fires. */
      windowMs: number;
    },
    private readonly plan: ApprovalNotificationPlan | undefined,
  ) {}

  /** A round opened: tell the waiting channels, and escalate if nobody decides in time. */
  opened(round: ApprovalView): void {
    if (!this.plan) return;
    this.send({ event: 'approval-requested', round, channels: this.plan.waiting });
    const { escalation } = this.plan;
    if (escalation && escalation.afterMs < this.call.windowMs) {
      // A cancelled run cancels the timer too: nothing to escalate then.
      this.deliveries.push(this.escalateUnlessEnded(round, escalation).catch(() => undefined));
    }
  }

  /** A round ended (approved, denied or expired): cancel its escalation and post the follow-up. */
  ended(round: ApprovalView, ending: RoundEnding): void {
    this.endedRounds.add(round.round);
    if (!this.plan?.followUp) return;
    const channels = [
      ...this.plan.waiting,
      ...(this.escalatedRounds.has(round.round) ? (this.plan.escalation?.channels ?? []) : []),
    ];
    this.send({
      event: ending.state === 'expired' ? 'approval-expired' : 'approval-decided',
      round,
      channels: [...new Set(channels)],
      ending,
    });
  }

  /** Waits for every delivery (each retried on its own; a failed one is logged, never thrown). */
  async settle(): Promise<void> {
    this.closing = true;
    while (this.deliveries.length) await Promise.all(this.deliveries.splice(0));
  }

  /** A durable timer raced against the round's end; the end cancels it. */
  private async escalateUnlessEnded(
    round: ApprovalView,
    escalation: { afterMs: number; channels: string[] },
  ): Promise<void> {
    const ended = await condition(
      () => this.closing || this.endedRounds.has(round.round),
      escalation.afterMs,
    );
    if (ended) return;
    this.escalatedRounds.add(round.round);
    this.send({ event: 'approval-escalated', round, channels: escalation.channels });
  }

  private send(input: {
    event: NotificationEvent;
    round: ApprovalView;
    channels: string[];
    ending?: RoundEnding;
  }): void {
    const { call } = this;
    const eventId = notificationEventId({
      callId: call.callId,
      runId: call.runId,
      round: input.round.round,
      event: input.event,
    });
    for (const channel of input.channels) {
      const notice: ApprovalNotice = {
        channel,
        event: input.event,
        eventId,
        callId: call.callId,
        runId: call.runId,
        round: input.round.round,
        tool: call.tool,
        caller: call.caller,
        riskLevel: input.round.riskLevel,
        summary: call.summary,
        expiresAt: input.round.expiresAt,
        ...(input.ending ? { ending: input.ending } : {}),
      };
      this.deliveries.push(
        notificationActivities.notifyApprovalChannel(notice).then(
          () => undefined,
          (error: unknown) => {
            log.warn('approval notification was not delivered', { eventId, channel, error: String(error) });
          },
        ),
      );
    }
  }
}
