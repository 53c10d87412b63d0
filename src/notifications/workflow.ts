import {
  allHandlersFinished,
  CancellationScope,
  condition,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type { NotificationActivities, UndeliveredAttempt, UndeliveredNotice } from './activities';
import type { ApprovalNotifierInput, NotifiedCall, NotifiedRound, RoundProgress } from './protocol';
import {
  approvalNotifierWorkflowId,
  callClosedSignal,
  chainTurnSignal,
  roundEndedSignal,
  roundOpenedSignal,
} from './protocol';
import type { ApprovalNotice, ApprovalNotificationPlan, NotificationEvent, RoundEnding } from './notices';
import { notificationEventId } from './notices';

// Every delivery is retried from 0.5 s doubling to 1 min; a follow-up 10 times: about three minutes in all.
const backoff = { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '1m' } as const;
const followUpOptions: ActivityOptions = {
  startToCloseTimeout: '15s',
  retry: { ...backoff, maximumAttempts: 10 },
};

// A request or an escalation matters while its round can be decided: it is retried (every minute at
// most) until the round expires, and for at least this long, so a very short round still gets a try.
const shortestPendingDeliveryMs = 10_000;

const recordActivities = proxyActivities<NotificationActivities>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 10, maximumInterval: '10s' },
});

// A signal is a wake-up: what it says is checked against the call's state, read again for a while.
const progressActivities = proxyActivities<NotificationActivities>({
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 5, maximumInterval: '5s' },
});

/**
 * How long, past its last round's expiry, the notifier waits for a call that says nothing more before
 * it takes the call for gone (terminated: it never says it closed) and finishes. A running call is
 * silent only while a round waits or while it runs its last steps (minutes), never for a day.
 */
const callSilenceLimitMs = 24 * 60 * 60 * 1000;

/**
 * The workflow that delivers one call run's approval notifications, started by the call when its
 * first round opens and abandoned when the call closes, so a channel that is down never holds the
 * call's answer. One retried activity per event and channel, keyed by the event's id (never posted
 * twice for one event, never lost to a restart); a delivery that finally fails is audited as failed.
 * It finishes once the call has closed and every delivery is done, or once the call has been silent
 * for a day past its round's expiry (a terminated call never says it closed).
 */
export async function toolgateApprovalNotifications(input: ApprovalNotifierInput): Promise<void> {
  const notStarted = notStartedByItsCall(input.call);
  if (notStarted) {
    // Anyone with a Temporal client may start a workflow of this type: only the call's own child posts.
    log.warn('approval notifier not started by its call: it posts nothing', {
      callId: input.call.callId,
      reason: notStarted,
    });
    return;
  }
  const notifier = new ApprovalNotifier(input.call, input.plan);
  // Signals are wake-ups only (anyone may send them): each is checked against the call's state.
  setHandler(roundOpenedSignal, (round) => notifier.heard({ kind: 'opened', round: round.round }));
  setHandler(roundEndedSignal, ({ round }) => notifier.heard({ kind: 'ended', round: round.round }));
  setHandler(chainTurnSignal, (round) =>
    notifier.heard({ kind: 'turn', round: round.round, step: round.chain?.step ?? 0 }),
  );
  setHandler(callClosedSignal, () => notifier.heard({ kind: 'closed', round: 0 }));
  notifier.opened(input.firstRound);
  await notifier.untilCallClosed();
  await notifier.settle();
  await condition(allHandlersFinished);
}

/** A signal as the notifier hears it: what it claims, checked against the call's state. */
type HeardMessage =
  { kind: 'opened' | 'ended' | 'closed'; round: number } | { kind: 'turn'; round: number; step: number };

/** Why this run is not the notifier its call started (its parent and id), or undefined when it is. */
function notStartedByItsCall(call: NotifiedCall): string | undefined {
  const info = workflowInfo();
  if (info.parent?.workflowId !== call.callId || info.parent.runId !== call.runId) {
    return 'its parent is not the call run its input names';
  }
  if (info.workflowId !== approvalNotifierWorkflowId(call)) return 'its id is not the call run’s notifier id';
  return undefined;
}

/**
 * A call run's notifications and their rules: what the plan's channels are told when a round opens,
 * stays undecided past the escalation delay, and ends; which deliveries a decision makes moot.
 */
export class ApprovalNotifier {
  private readonly deliveries: Promise<void>[] = [];
  /** Per open round, the scope of its request, escalation timer and escalation: a decision cancels it. */
  private readonly pendingRounds = new Map<number, CancellationScope>();
  private readonly endedRounds = new Set<number>();
  /** Per round whose escalation was due: whether a channel took it (a round it ended first was not escalated). */
  private readonly escalations = new Map<number, Promise<boolean>>();
  private closed = false;
  /** Counts what the call said, so that a silence can be told from a message. */
  private messages = 0;
  /** The signals heard, checked against the call's state one after the other, in order. */
  private checks: Promise<void> = Promise.resolve();
  /** Each round's facts, as the call's state (or the call's own input) gave them. */
  private readonly rounds = new Map<number, NotifiedRound>();
  private lastExpiryMs = 0;
  /** The chain turns asked already, as `round:step`. */
  private readonly turns = new Set<string>();
  /** Every channel a request or a turn went to: the follow-up tells them all. */
  private readonly told = new Set<string>();

  constructor(
    private readonly call: NotifiedCall,
    private readonly plan: ApprovalNotificationPlan,
  ) {}

  /**
   * A signal woke the notifier: what it claims is acted on only as the call's state bears it out (a
   * round it shows open, a round it shows ended and how, a call it shows done); otherwise ignored.
   */
  heard(message: HeardMessage): Promise<void> {
    this.messages++;
    const check = this.checks.then(() => this.check(message));
    this.checks = check;
    return check;
  }

  private async check(message: HeardMessage): Promise<void> {
    const { callId, runId } = this.call;
    let progress: RoundProgress;
    try {
      progress = await progressActivities.readRoundProgress({
        callId,
        runId,
        round: message.kind === 'closed' ? 1 : message.round,
      });
    } catch (error) {
      log.warn('a signal could not be checked against the call: ignored', { callId, error: String(error) });
      return;
    }
    const ignored = (reason: string) =>
      log.warn('a signal the call does not bear out: ignored', { callId, kind: message.kind, reason });
    if (message.kind === 'closed') {
      if (!progress.callClosed) return ignored('the call is not done');
      return this.callClosed();
    }
    if (!progress.ok) return ignored(progress.reason);
    const known = this.rounds.get(progress.round);
    const round: NotifiedRound | undefined =
      progress.riskLevel !== undefined && progress.expiresAt !== undefined
        ? {
            round: progress.round,
            riskLevel: progress.riskLevel,
            expiresAt: progress.expiresAt,
            ...(progress.chain ? { chain: progress.chain } : {}),
          }
        : known;
    if (!round) return ignored(`round ${message.round} was never heard open`);
    if (message.kind === 'turn') {
      if (!progress.current || progress.ending || progress.chain?.step !== message.step)
        return ignored(`round ${message.round} is not at step ${message.step} of its chain`);
      return this.turn(round);
    }
    if (message.kind === 'opened') {
      if (!progress.current) return ignored(`round ${message.round} is not the call's round`);
      return this.opened(round);
    }
    if (!progress.ending) return ignored(`round ${message.round} has not ended`);
    return this.ended(round, progress.ending);
  }

  /** A round opened: ask the waiting channels, and escalate if nobody decides in time. */
  opened(round: NotifiedRound): void {
    this.messages++;
    if (!this.rounds.has(round.round)) this.rounds.set(round.round, round);
    this.lastExpiryMs = Math.max(this.lastExpiryMs, Date.parse(round.expiresAt));
    if (this.closed || this.pendingRounds.has(round.round) || this.endedRounds.has(round.round)) return;
    const scope = new CancellationScope();
    this.pendingRounds.set(round.round, scope);
    this.deliveries.push(scope.run(() => this.askApprovers(round)));
  }

  /**
   * A chain's step completed: the request and escalation of the step before are moot (cancelled), and
   * the group whose turn it is now is asked, once per step, with the step's own expiry.
   */
  turn(round: NotifiedRound): void {
    this.messages++;
    const step = round.chain?.step ?? 0;
    const key = `${round.round}:${step}`;
    this.lastExpiryMs = Math.max(this.lastExpiryMs, Date.parse(round.expiresAt));
    if (this.closed || this.endedRounds.has(round.round) || this.turns.has(key)) return;
    this.turns.add(key);
    this.pendingRounds.get(round.round)?.cancel();
    const scope = new CancellationScope();
    this.pendingRounds.set(round.round, scope);
    this.deliveries.push(
      scope.run(async () => {
        await this.send({ event: 'approval-turn', round, channels: this.channelsFor(round) });
      }),
    );
  }

  /** Who is asked for a round: its chain step's group channels when the plan has them, else the waiting ones. */
  private channelsFor(round: NotifiedRound): string[] {
    const group = round.chain ? this.plan.groups?.[round.chain.group] : undefined;
    const channels = group ?? this.plan.waiting;
    for (const channel of channels) this.told.add(channel);
    return channels;
  }

  /** A round ended: its escalation is off, a decision makes its request moot; the follow-up goes out. */
  ended(round: NotifiedRound, ending: RoundEnding): void {
    this.messages++;
    if (this.endedRounds.has(round.round)) return;
    this.endedRounds.add(round.round);
    // An expired round's request runs out with its own bound; a decided one's is not worth sending now.
    if (ending.state !== 'expired') this.pendingRounds.get(round.round)?.cancel();
    this.pendingRounds.delete(round.round);
    // A superseded round has no outcome to tell: the round opened in its place asks again, if any.
    if (!this.plan.followUp || ending.state === 'superseded') return;
    // The escalation's channels hear the ending too, once the escalation is known to have gone out.
    const escalation = this.escalations.get(round.round);
    const followUp = async () => {
      const escalated = escalation ? await escalation : false;
      const channels = [...this.told, ...(escalated ? (this.plan.escalation?.channels ?? []) : [])];
      await this.send({
        event: ending.state === 'expired' ? 'approval-expired' : 'approval-decided',
        round,
        channels: [...new Set(channels)],
        ending,
      });
    };
    this.deliveries.push(followUp());
  }

  /** The call closes: no round opens any more, and no open one is worth asking for. */
  callClosed(): void {
    this.messages++;
    this.closed = true;
    for (const scope of this.pendingRounds.values()) scope.cancel();
    this.pendingRounds.clear();
  }

  /** Until the call said it closed, or it has been silent for the limit past its last round's expiry. */
  async untilCallClosed(): Promise<void> {
    for (;;) {
      const heard = this.messages;
      const silenceMs = Math.max(0, this.lastExpiryMs - Date.now()) + callSilenceLimitMs;
      const spoke = await condition(() => this.closed || this.messages !== heard, silenceMs);
      if (this.closed) return;
      if (!spoke) {
        log.warn('the call went silent without closing: taken for gone', { callId: this.call.callId });
        return;
      }
    }
  }

  /** Waits for every delivery (each retried on its own; one that finally failed is audited, never thrown). */
  async settle(): Promise<void> {
    await this.checks;
    while (this.deliveries.length) await Promise.all(this.deliveries.splice(0));
  }

  private async askApprovers(round: NotifiedRound): Promise<void> {
    const asked = this.send({ event: 'approval-requested', round, channels: this.channelsFor(round) });
    const { escalation, reminder } = this.plan;
    const later: Promise<void>[] = [];
    if (escalation && escalation.afterMs < this.call.windowMs)
      later.push(this.escalateUnlessEnded(round, escalation));
    if (reminder && reminder.beforeMs < this.call.windowMs)
      later.push(this.remindUnlessEnded(round, reminder));
    await Promise.all([asked, ...later]);
  }

  /**
   * A durable timer to `beforeMs` before the round expires, raced against its end: still undecided
   * then, the waiting channels (and the reminder's) are told it expires soon.
   */
  private async remindUnlessEnded(
    round: NotifiedRound,
    reminder: { beforeMs: number; channels: string[] },
  ): Promise<void> {
    const dueInMs = Date.parse(round.expiresAt) - reminder.beforeMs - Date.now();
    const over = () => this.closed || this.endedRounds.has(round.round);
    try {
      if (dueInMs > 0 ? await condition(over, dueInMs) : over()) return;
    } catch (error) {
      if (isCancellation(error)) return;
      throw error;
    }
    const channels = [...new Set([...this.plan.waiting, ...reminder.channels])];
    await this.send({ event: 'approval-expiring', round, channels });
  }

  /** A durable timer from the round's opening, raced against its end; the end (or a decision) cancels it. */
  private async escalateUnlessEnded(
    round: NotifiedRound,
    escalation: { afterMs: number; channels: string[] },
  ): Promise<void> {
    const openedAtMs = Date.parse(round.expiresAt) - this.call.windowMs;
    const dueInMs = openedAtMs + escalation.afterMs - Date.now();
    const over = () => this.closed || this.endedRounds.has(round.round);
    try {
      if (dueInMs > 0 ? await condition(over, dueInMs) : over()) return;
    } catch (error) {
      if (isCancellation(error)) return;
      throw error;
    }
    const escalated = this.send({ event: 'approval-escalated', round, channels: escalation.channels });
    this.escalations.set(round.round, escalated);
    await escalated;
  }

  /** One delivery per channel of one event, all under the event's id; whether any channel took it. */
  private async send(input: {
    event: NotificationEvent;
    round: NotifiedRound;
    channels: string[];
    ending?: RoundEnding;
  }): Promise<boolean> {
    const { call } = this;
    const eventId = notificationEventId({
      callId: call.callId,
      runId: call.runId,
      round: input.round.round,
      event: input.event,
      ...(input.event === 'approval-turn' && input.round.chain ? { step: input.round.chain.step } : {}),
    });
    const taken = await Promise.all(
      input.channels.map((channel) =>
        this.deliver({
          channel,
          event: input.event,
          eventId,
          callId: call.callId,
          runId: call.runId,
          round: input.round.round,
          tool: call.tool,
          caller: call.caller,
          ...(call.actingFor !== undefined ? { actingFor: call.actingFor } : {}),
          riskLevel: input.round.riskLevel,
          summary: call.summary,
          expiresAt: input.round.expiresAt,
          ...(input.ending ? { ending: input.ending } : {}),
          ...(input.round.chain ? { chain: input.round.chain } : {}),
        }),
      ),
    );
    return taken.some(Boolean);
  }

  /** One retried activity, whether its channel took it; when it finally fails, the audit store hears why. */
  private async deliver(notice: ApprovalNotice): Promise<boolean> {
    try {
      const outcome = await proxyActivities<NotificationActivities>(
        this.deliveryOptions(notice),
      ).notifyApprovalChannel(notice);
      return outcome.ok;
    } catch (error) {
      const undelivered = undeliveredNotice({ notice, error });
      log.warn('approval notification was not delivered', {
        eventId: notice.eventId,
        channel: notice.channel,
        reason: undelivered.reason,
      });
      try {
        // Audited even when the round's scope was cancelled: the record is what an operator looks for.
        await CancellationScope.nonCancellable(() =>
          recordActivities.recordUndeliveredNotification(undelivered),
        );
      } catch (recordError) {
        log.error('an undelivered approval notification could not be audited', {
          eventId: notice.eventId,
          channel: notice.channel,
          error: String(recordError),
        });
      }
      return false;
    }
  }

  private deliveryOptions(notice: ApprovalNotice): ActivityOptions {
    if (
      notice.event !== 'approval-requested' &&
      notice.event !== 'approval-escalated' &&
      notice.event !== 'approval-turn'
    )
      return followUpOptions;
    const untilExpiryMs = Date.parse(notice.expiresAt) - Date.now();
    return {
      ...followUpOptions,
      scheduleToCloseTimeout: Math.max(untilExpiryMs, shortestPendingDeliveryMs),
      // No attempt limit: the timeout is the bound.
      retry: backoff,
    };
  }
}

/** Why a delivery never reached its channel, from its failure: a decision came first, its round expired, or retries ran out. */
function undeliveredNotice(input: { notice: ApprovalNotice; error: unknown }): UndeliveredNotice {
  const { notice, error } = input;
  const last = lastAttemptOf(error);
  const facts = {
    notice,
    ...(last?.httpStatus !== undefined ? { httpStatus: last.httpStatus } : {}),
    ...(last?.attempt !== undefined ? { attempt: last.attempt } : {}),
  };
  if (isCancellation(error)) return { ...facts, reason: 'its round was decided before the channel took it' };
  const causes = causesOf(error);
  const lastMessage = causes.find((cause) => cause.type !== undefined)?.message;
  // Out of time: the server stops retrying with the last failure (retry state TIMEOUT) or times the attempt out.
  if (causes.some((cause) => cause.retryState === 'TIMEOUT' || cause.timeoutType !== undefined)) {
    const reason = `not delivered before its round expired${lastMessage ? ` (${lastMessage})` : ''}`;
    return { ...facts, reason };
  }
  return { ...facts, reason: lastMessage ?? String(error) };
}

/** The failure and its causes, outermost first (an activity's failure wraps the last attempt's). */
function causesOf(error: unknown): FailureFields[] {
  const chain: FailureFields[] = [];
  let current = error as FailureFields | undefined;
  while (current && typeof current === 'object' && chain.length < 5) {
    chain.push(current);
    current = current.cause as FailureFields | undefined;
  }
  return chain;
}

/** The fields of a Temporal failure read here: compared by shape, never by `instanceof`. */
interface FailureFields {
  type?: string;
  retryState?: string;
  timeoutType?: unknown;
  message?: string;
  details?: unknown[];
  cause?: unknown;
}

/** What the last attempt said about itself (its number, the channel's status), when it said it. */
function lastAttemptOf(error: unknown): UndeliveredAttempt | undefined {
  for (const cause of causesOf(error)) {
    const details = cause.details?.[0] as Partial<UndeliveredAttempt> | undefined;
    if (typeof details?.attempt === 'number') {
      return {
        attempt: details.attempt,
        ...(typeof details.httpStatus === 'number' ? { httpStatus: details.httpStatus } : {}),
      };
    }
  }
  return undefined;
}
