import { describe, expect, it } from 'vitest';
import type { NotificationsConfig } from './notification-config';
import { resolveNotifications } from './notification-config';

const source = 'toolgate.config.ts';
const env = { APPROVERS_SECRET: 's3cret' };
const valid: NotificationsConfig = {
  consoleUrl: 'https://console.example/',
  channels: {
    approvers: { url: 'https://hooks.example/approvers', secretEnv: 'APPROVERS_SECRET' },
    oncall: { url: 'https://hooks.example/oncall' },
  },
  waiting: ['approvers'],
  escalation: { after: '30m', channels: ['oncall'] },
};

const problem = (config: Partial<NotificationsConfig>, environment: Record<string, string> = env): string => {
  try {
    resolveNotifications({ config: { ...valid, ...config }, source, env: environment });
  } catch (error) {
    expect((error as Error).name).toBe('ConfigurationError');
    return (error as Error).message;
  }
  throw new Error('expected a ConfigurationError');
};

describe('notifications in the config', () => {
  it('resolves channels with their secrets and the plan each call records', () => {
    expect(resolveNotifications({ config: valid, source, env })).toEqual({
      plan: {
        waiting: ['approvers'],
        escalation: { afterMs: 1_800_000, channels: ['oncall'] },
        followUp: true,
      },
      channels: {
        approvers: { url: 'https://hooks.example/approvers', secret: 's3cret' },
        oncall: { url: 'https://hooks.example/oncall' },
      },
      consoleUrl: 'https://console.example',
    });
  });

  it('names the field and the fix for an unknown channel, a bad duration, a missing secret or URL', () => {
    expect(problem({ waiting: ['approverz'] })).toMatch(
      /toolgate\.config\.ts: notifications\.waiting: unknown channel "approverz"; use one of approvers, oncall/,
    );
    expect(problem({ escalation: { after: '30 minutes', channels: ['oncall'] } })).toMatch(
      /notifications\.escalation\.after: "30 minutes" is not a duration; write e\.g\. '30m'/,
    );
    expect(problem({ escalation: { after: '1h', channels: ['pager'] } })).toMatch(
      /notifications\.escalation\.channels: unknown channel "pager"/,
    );
    expect(problem({}, {})).toMatch(
      /notifications\.channels\.approvers\.secretEnv: environment variable APPROVERS_SECRET is not set/,
    );
    expect(problem({ channels: { approvers: { url: 'ftp://hooks.example' } } })).toMatch(
      /notifications\.channels\.approvers\.url: "ftp:\/\/hooks\.example" is not an http\(s\) URL/,
    );
    expect(problem({ waiting: [] })).toMatch(/notifications\.waiting: name at least one channel/);
    expect(problem({ channels: {} })).toMatch(/notifications\.channels: no channel/);
  });

  it("takes each approver group's channels, and names an unknown one", () => {
    const resolved = resolveNotifications({
      config: { ...valid, groups: { finance: ['oncall', 'oncall'] } },
      source,
      env,
    });
    expect({ ...resolved.plan.groups }).toEqual({ finance: ['oncall'] });
    expect(problem({ groups: { finance: ['nowhere'] } })).toContain(
      'notifications.groups.finance: unknown channel "nowhere"',
    );
  });
});
