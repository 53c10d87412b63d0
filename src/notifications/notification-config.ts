import { ConfigurationError } from '../policy/load-policy';
import { durationMs } from '../shared/durations';
import type { ApprovalNotificationPlan } from './notices';

/** Approval notifications in a config: where to post, and when (worker side only). */
export interface NotificationsConfig {
  /** The approvals console's base URL; each message links to `<consoleUrl>/calls/<callId>`. */
  consoleUrl?: string;
  /** Webhooks by name: the URL, and the environment variable holding the channel's HMAC secret. */
  channels: Record<string, { url: string; secretEnv?: string }>;
  /** The channels told when a call starts waiting for approval. */
  waiting: string[];
  /** The channels told when nobody decided after `after` (e.g. `'30m'`; units ms, s, m, h, d). */
  escalation?: { after: string; channels: string[] };
  /**
   * A reminder `before` a round expires (e.g. `'15m'`), still undecided: the waiting channels and
   * `channels` are told it expires soon, and the console marks it.
   */
  reminder?: { before: string; channels?: string[] };
  /** Whether a decision or an expiry is posted to the channels that were told (default true). */
  followUp?: boolean;
  /**
   * Per approver group, its channels: a chain's step asks its group's channels (instead of `waiting`)
   * when it becomes the group's turn, e.g. `{ finance: ['finance'] }`.
   */
  groups?: Record<string, string[]>;
}

/** A webhook ready to post to: its URL and, when configured, its secret. */
export interface WebhookChannel {
  url: string;
  secret?: string;
}

/** Notifications as a worker runs them: the plan each call records, the channels and the console link. */
export interface ResolvedNotifications {
  plan: ApprovalNotificationPlan;
  channels: Record<string, WebhookChannel>;
  consoleUrl?: string;
}

/**
 * Checks a config's `notifications` and reads the channels' secrets from `env`, at a worker's
 * start-up: an unknown channel, a bad URL or duration, or a secret variable that is not set throws a
 * `ConfigurationError` naming the file, the field and the fix.
 */
export function resolveNotifications(input: {
  config: NotificationsConfig;
  source: string;
  env: Record<string, string | undefined>;
}): ResolvedNotifications {
  const { config, source, env } = input;
  const fail = (field: string, problem: string): never => {
    throw new ConfigurationError(`config file ${source}: notifications.${field}: ${problem}`);
  };
  const channelEntries = Object.entries(config.channels ?? {});
  if (!channelEntries.length) {
    fail('channels', 'no channel; name at least one, e.g. channels: { approvers: { url, secretEnv } }');
  }
  const channels: Record<string, WebhookChannel> = {};
  for (const [name, channel] of channelEntries) {
    if (!isHttpUrl(channel?.url)) {
      fail(`channels.${name}.url`, `"${String(channel?.url)}" is not an http(s) URL; give the webhook's URL`);
    }
    const entry: WebhookChannel = { url: channel.url };
    if (channel.secretEnv !== undefined) {
      const secret = env[channel.secretEnv];
      if (!secret) {
        fail(
          `channels.${name}.secretEnv`,
          `environment variable ${channel.secretEnv} is not set; set it to the channel's HMAC secret, or remove secretEnv to post unsigned`,
        );
      }
      entry.secret = secret;
    }
    channels[name] = entry;
  }
  const known = (field: string, names: unknown): string[] => {
    if (!Array.isArray(names) || !names.length) {
      fail(
        field,
        `name at least one channel of notifications.channels (${Object.keys(channels).join(', ')})`,
      );
    }
    for (const name of names as unknown[]) {
      if (typeof name !== 'string' || !Object.hasOwn(channels, name)) {
        fail(
          field,
          `unknown channel "${String(name)}"; use one of ${Object.keys(channels).join(', ')} or add it to notifications.channels`,
        );
      }
    }
    return [...new Set(names as string[])];
  };
  const plan: ApprovalNotificationPlan = {
    waiting: known('waiting', config.waiting),
    followUp: config.followUp ?? true,
  };
  if (config.escalation) {
    const { after } = config.escalation;
    if (typeof after !== 'string' || !/^\d+(ms|s|m|h|d)$/.test(after) || durationMs(after) <= 0) {
      fail('escalation.after', `"${String(after)}" is not a duration; write e.g. '30m', '2h' or '45s'`);
    }
    plan.escalation = {
      afterMs: durationMs(after),
      channels: known('escalation.channels', config.escalation.channels),
    };
  }
  if (config.reminder) {
    const { before } = config.reminder;
    if (typeof before !== 'string' || !/^\d+(ms|s|m|h|d)$/.test(before) || durationMs(before) <= 0) {
      fail('reminder.before', `"${String(before)}" is not a duration; write e.g. '30m', '2h' or '45s'`);
    }
    plan.reminder = {
      beforeMs: durationMs(before),
      channels:
        config.reminder.channels === undefined ? [] : known('reminder.channels', config.reminder.channels),
    };
  }
  if (config.groups !== undefined) {
    if (config.groups === null || typeof config.groups !== 'object' || Array.isArray(config.groups)) {
      fail('groups', "give each approver group its channels, e.g. groups: { finance: ['finance'] }");
    }
    const groups: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
    for (const [group, names] of Object.entries(config.groups)) {
      groups[group] = known(`groups.${group}`, names);
    }
    plan.groups = groups;
  }
  const consoleUrl: unknown = config.consoleUrl;
  if (consoleUrl !== undefined && !isHttpUrl(consoleUrl)) {
    fail(
      'consoleUrl',
      `${JSON.stringify(consoleUrl)} is not an http(s) URL; give the console's address as approvers open it`,
    );
  }
  return {
    plan,
    channels,
    ...(config.consoleUrl !== undefined ? { consoleUrl: config.consoleUrl.replace(/\/+$/, '') } : {}),
  };
}

function isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}
