import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AuditStore } from '../audit/audit-store';
import type { ResolvedNotifications } from './notification-config';
import { webhookMessage } from './webhook-message';
import { signWebhookPayload } from './webhook-signature';
import type { RoundProgress } from './protocol';
import { roundProgressOf } from './protocol';
import type { ApprovalNotice, NoticeDelivery } from './notices';
import { callStateQuery } from '../calls/protocol';

/** The ApplicationFailure types a delivery raises; the notifier audits a delivery that finally failed. */
export const notificationFailureTypes = {
  /** The receiver did not take it now (network, timeout, 408, 429, 5xx): retried. */
  undelivered: 'NOTIFICATION_UNDELIVERED',
  /** The receiver refused it (another 4xx), or the channel is no longer configured: not retried. */
  refused: 'NOTIFICATION_REFUSED',
} as const;

/** How long one POST may take before it counts as a failed attempt. */
const requestTimeoutMs = 10_000;

/**
 * Builds the activity that posts one approval event to one channel. Each attempt carries the event's
 * id as `Idempotency-Key` and, when the channel has a secret, a fresh timestamp and HMAC signature;
 * a delivery the audit store already holds for this event and channel is not posted again (a retry
 * after the receiver took it but the answer was lost to a crash may still post twice: the key is the
 * receiver's way to drop it).
 */
export function createNotificationActivities(dependencies: {
  notifications?: ResolvedNotifications;
  audit: AuditStore;
}) {
  const { audit } = dependencies;
  return {
    /**
     * What the call's own state says of one of its rounds, read with the worker's client (a query of
     * the call's run): how the notifier tells a real signal from a forged one. Retried on failure.
     */
    async readRoundProgress(input: { callId: string; runId: string; round: number }): Promise<RoundProgress> {
      return readRoundProgress(input);
    },

    /**
     * Posts one event to one channel, with the facts the call's state holds (never the notice's own
     * claims): an event the state does not bear out is not posted, and is audited as failed with why.
     * Retried by the workflow's policy, never posted twice when audited delivered.
     */
    async notifyApprovalChannel(claimed: ApprovalNotice): Promise<NoticeOutcome> {
      const progress = await readRoundProgress(claimed);
      const checked = noticeFromState({ notice: claimed, progress });
      if (!checked.ok) {
        await audit.appendNotificationDelivery({
          eventId: claimed.eventId,
          channel: claimed.channel,
          callId: claimed.callId,
          event: claimed.event,
          outcome: 'failed',
          reason: checked.reason,
        });
        log.warn('approval notification not borne out by the call: not posted', {
          eventId: claimed.eventId,
          channel: claimed.channel,
          reason: checked.reason,
        });
        return { ok: false, status: 'skipped', reason: checked.reason };
      }
      const notice = checked.notice;
      const channels = dependencies.notifications?.channels ?? {};
      const channel = Object.hasOwn(channels, notice.channel) ? channels[notice.channel] : undefined;
      if (!channel) {
        // The config changed while the call waited: nothing to post to.
        throw ApplicationFailure.nonRetryable(
          `notification channel "${notice.channel}" is not configured on this worker`,
          notificationFailureTypes.refused,
        );
      }
      const done = (await audit.notificationDeliveriesOf(notice.callId)).find(
        (delivery) => delivery.eventId === notice.eventId && delivery.channel === notice.channel,
      );
      if (done?.outcome === 'delivered') return { ok: true, status: 'already-delivered' };
      const body = JSON.stringify(
        webhookMessage({
          notice,
          ...(dependencies.notifications?.consoleUrl
            ? { consoleUrl: dependencies.notifications.consoleUrl }
            : {}),
        }),
      );
      const timestamp = String(Math.floor(Date.now() / 1000));
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'idempotency-key': notice.eventId,
        'x-toolgate-event': notice.event,
        'x-toolgate-timestamp': timestamp,
      };
      if (channel.secret !== undefined) {
        headers['x-toolgate-signature'] = signWebhookPayload({ secret: channel.secret, timestamp, body });
      }
      const { attempt } = Context.current().info;
      let status: number;
      try {
        const response = await fetch(channel.url, {
          method: 'POST',
          headers,
          body,
          signal: AbortSignal.timeout(requestTimeoutMs),
        });
        status = response.status;
        await response.body?.cancel();
      } catch (error) {
        throw undelivered({
          message: `channel "${notice.channel}" could not be reached: ${(error as Error).message}`,
          attempt,
        });
      }
      const record = {
        eventId: notice.eventId,
        channel: notice.channel,
        callId: notice.callId,
        event: notice.event,
        httpStatus: status,
        attempt,
      };
      if (status >= 200 && status < 300) {
        await audit.appendNotificationDelivery({ ...record, outcome: 'delivered' });
        return { ok: true, status: 'delivered', httpStatus: status };
      }
      if (status >= 400 && status < 500 && status !== 408 && status !== 429) {
        await audit.appendNotificationDelivery({ ...record, outcome: 'refused' });
        log.warn('notification refused by its channel', {
          channel: notice.channel,
          status,
          eventId: notice.eventId,
        });
        throw ApplicationFailure.nonRetryable(
          `channel "${notice.channel}" refused the notification with HTTP ${status}`,
          notificationFailureTypes.refused,
        );
      }
      throw undelivered({
        message: `channel "${notice.channel}" answered HTTP ${status}`,
        attempt,
        httpStatus: status,
      });
    },

    /**
     * Audits a delivery that never reached its channel (retries ran out, its round ended first, the
     * channel is gone), so an operator sees the lost notification. Idempotent: a delivery already
     * audited for this event and channel (delivered or refused) stays as it was.
     */
    async recordUndeliveredNotification(input: UndeliveredNotice): Promise<void> {
      const { notice } = input;
      const recorded = await audit.appendNotificationDelivery({
        eventId: notice.eventId,
        channel: notice.channel,
        callId: notice.callId,
        event: notice.event,
        outcome: 'failed',
        reason: input.reason,
        ...(input.httpStatus !== undefined ? { httpStatus: input.httpStatus } : {}),
        ...(input.attempt !== undefined ? { attempt: input.attempt } : {}),
      });
      if (recorded) {
        log.warn('approval notification was not delivered', {
          channel: notice.channel,
          eventId: notice.eventId,
          reason: input.reason,
        });
      }
    },
  };
}

/** A delivery that never reached its channel, as the notifier audits it. */
export interface UndeliveredNotice {
  notice: ApprovalNotice;
  reason: string;
  httpStatus?: number;
  attempt?: number;
}

/** What a delivery did: posted (or found posted), or skipped because the call's state does not bear it out. */
export type NoticeOutcome = NoticeDelivery | { ok: false; status: 'skipped'; reason: string };

/** The call run's state, through the worker's client; a query that fails is retried by the activity's policy. */
async function readRoundProgress(input: {
  callId: string;
  runId: string;
  round: number;
}): Promise<RoundProgress> {
  const handle = Context.current().client.workflow.getHandle(input.callId, input.runId);
  const state = await handle.query(callStateQuery);
  return roundProgressOf({ state, runId: input.runId, round: input.round });
}

/**
 * The notice as the call's state tells it (risk level, expiry, ending), or why the state does not
 * bear it out: an unknown round; a request for a round the call no longer shows; an escalation of a
 * round that ended; a follow-up whose round did not end that way.
 */
function noticeFromState(input: {
  notice: ApprovalNotice;
  progress: RoundProgress;
}): { ok: true; notice: ApprovalNotice } | { ok: false; reason: string } {
  const { notice, progress } = input;
  if (!progress.ok) return { ok: false, reason: `not borne out by the call: ${progress.reason}` };
  const facts = {
    ...notice,
    ...(progress.riskLevel !== undefined ? { riskLevel: progress.riskLevel } : {}),
    ...(progress.expiresAt !== undefined ? { expiresAt: progress.expiresAt } : {}),
  };
  const { ending } = progress;
  switch (notice.event) {
    case 'approval-requested': {
      if (!progress.current)
        return { ok: false, reason: `round ${notice.round} is no longer the call's round` };
      // A chain's first request is moot once the turn passed on: the next group was asked.
      if (notice.chain && progress.chain?.step !== notice.chain.step)
        return { ok: false, reason: `round ${notice.round} moved on in its chain` };
      const { ending: _claimed, ...request } = facts;
      return { ok: true, notice: request };
    }
    case 'approval-turn': {
      // A turn is news only while it is that step's turn.
      if (!progress.current || ending || progress.chain?.step !== notice.chain?.step)
        return {
          ok: false,
          reason: `round ${notice.round} is not at step ${notice.chain?.step ?? '?'} of its chain`,
        };
      const { ending: _claimed, ...turn } = facts;
      return { ok: true, notice: { ...turn, chain: progress.chain! } };
    }
    case 'approval-escalated':
    case 'approval-expiring': {
      if (!progress.current || ending) return { ok: false, reason: `round ${notice.round} is not undecided` };
      const { ending: _claimed, ...escalation } = facts;
      return { ok: true, notice: escalation };
    }
    case 'approval-expired':
      return ending?.state === 'expired'
        ? { ok: true, notice: { ...facts, ending } }
        : { ok: false, reason: `round ${notice.round} did not expire` };
    case 'approval-decided':
      // Cancelled (by the caller or an operator, or its tool turned off) ends it as surely as a decision.
      return ending?.state === 'approved' || ending?.state === 'denied' || ending?.state === 'cancelled'
        ? { ok: true, notice: { ...facts, ending } }
        : { ok: false, reason: `round ${notice.round} was not decided` };
  }
}

/** What an undelivered attempt tells the notifier, in its failure's details. */
export interface UndeliveredAttempt {
  attempt: number;
  httpStatus?: number;
}

/** A failed attempt, retried by the notifier's policy; its details say which attempt and what the channel answered. */
function undelivered(input: { message: string } & UndeliveredAttempt): ApplicationFailure {
  const details: UndeliveredAttempt = {
    attempt: input.attempt,
    ...(input.httpStatus !== undefined ? { httpStatus: input.httpStatus } : {}),
  };
  return ApplicationFailure.create({
    message: input.message,
    type: notificationFailureTypes.undelivered,
    nonRetryable: false,
    details: [details],
  });
}

/** The notification activities, as the workflow imports their types. */
export type NotificationActivities = ReturnType<typeof createNotificationActivities>;
