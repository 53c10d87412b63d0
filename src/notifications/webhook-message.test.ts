import { describe, expect, it } from 'vitest';
import type { ApprovalNotice } from './notices';
import { slackEscaped, webhookMessage } from './webhook-message';

// A user tool's summary may carry model text, and an approver writes the denial's reason: neither may
// become a link, a mention or a channel-wide ping in the approvers' channel.
const notice: ApprovalNotice = {
  channel: 'approvers',
  event: 'approval-requested',
  eventId: 'tc-1:run:1:approval-requested',
  callId: 'tc-1',
  runId: 'run',
  round: 1,
  tool: 'send_email',
  caller: 'support-bot',
  riskLevel: 'irreversible',
  summary: 'email "<!channel> urgent: <https://evil.example/approve|Open in the console>" to ceo@example.com',
  expiresAt: '2026-12-01T14:32:00.000Z',
};

describe('webhook messages', () => {
  it("escapes Slack's control characters in a summary, in text and in blocks", () => {
    const body = webhookMessage({ notice, consoleUrl: 'https://console.example' });
    const escaped =
      'email "&lt;!channel&gt; urgent: &lt;https://evil.example/approve|Open in the console&gt;" to ceo@example.com';
    expect(body.text).toBe(
      `${escaped} by support-bot waits for approval (irreversible), expires 14:32 UTC — https://console.example/calls/tc-1`,
    );
    expect(body.blocks[0]?.text.text).toBe(
      `${escaped} by support-bot waits for approval (irreversible), expires 14:32 UTC\n` +
        '<https://console.example/calls/tc-1|Open in the console>',
    );
    // The only link left in the mrkdwn is toolgate's own.
    expect(body.blocks[0]?.text.text.match(/</g)).toHaveLength(1);
  });

  it("escapes a denial's reason and the approver's name", () => {
    const body = webhookMessage({
      notice: {
        ...notice,
        summary: 'refund 2590 BRL on ORD-1001',
        event: 'approval-decided',
        ending: {
          state: 'denied',
          approver: 'b<o>b',
          reason: '<!here> see <https://evil.example|the console> & go',
        },
      },
    });
    const line =
      'Denied by b&lt;o&gt;b: refund 2590 BRL on ORD-1001 by support-bot (irreversible), ' +
      'reason: &lt;!here&gt; see &lt;https://evil.example|the console&gt; &amp; go';
    expect(body.text).toBe(line);
    expect(body.blocks[0]?.text.text).toBe(line);
  });

  it("escapes approvers' names on an approval", () => {
    const body = webhookMessage({
      notice: {
        ...notice,
        event: 'approval-decided',
        ending: { state: 'approved', approvers: ['<@U1>', 'bob'] },
      },
    });
    expect(body.text).toMatch(/^Approved by &lt;@U1&gt;, bob: /);
  });

  it("keeps toolgate's own fields as they are, for a receiver to escape where it shows them", () => {
    const body = webhookMessage({
      notice: {
        ...notice,
        event: 'approval-decided',
        ending: { state: 'denied', approver: 'bob', reason: '<x>' },
      },
    });
    expect(body).toMatchObject({ summary: notice.summary, reason: '<x>', approvers: ['bob'] });
  });

  it("escapes the console's link too, so a query string stays one link", () => {
    const body = webhookMessage({ notice, consoleUrl: 'https://console.example/a?x=1&y=<2>|z' });
    expect(body.blocks[0]?.text.text).toMatch(
      /\n<https:\/\/console\.example\/a\?x=1&amp;y=&lt;2&gt;%7Cz\/calls\/tc-1\|Open in the console>$/,
    );
    expect(body.consoleUrl).toBe('https://console.example/a?x=1&y=<2>|z/calls/tc-1');
  });

  it('escapes &, < and > only, & first', () => {
    expect(slackEscaped('a & <b> *c* _d_ &amp;')).toBe('a &amp; &lt;b&gt; *c* _d_ &amp;amp;');
  });
});
