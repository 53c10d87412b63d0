import type { ApprovalNotice, NoticeChainStep, RoundEnding } from './notices';

/** The JSON a channel receives: Slack's `text` and `blocks`, then toolgate's own fields. */
export interface WebhookMessage {
  text: string;
  blocks: { type: 'section'; text: { type: 'mrkdwn'; text: string } }[];
  event: ApprovalNotice['event'];
  eventId: string;
  callId: string;
  round: number;
  tool: string;
  caller: string;
  /** On whose behalf the call acts, when its harness said. */
  actingFor?: string;
  riskLevel: string;
  expiresAt: string;
  summary: string;
  consoleUrl: string | null;
  /** How the round ended, on a follow-up. */
  outcome?: RoundEnding['state'];
  approvers?: string[];
  reason?: string;
  /** On a chain's request or turn: the group asked, its step and the chain's length. */
  chain?: NoticeChainStep;
}

/**
 * One event as a Slack-compatible message (incoming webhooks read `text`; `blocks` render richer)
 * with toolgate's fields beside it for receivers of their own. Pure: the same notice, the same body.
 * Every value set into `text` and `blocks` is escaped for Slack (`&`, `<`, `>`), so a summary or a
 * reason never renders as a link, a mention or a channel-wide ping; toolgate's own fields stay as
 * they are, for a receiver to escape for wherever it shows them.
 */
export function webhookMessage(input: { notice: ApprovalNotice; consoleUrl?: string }): WebhookMessage {
  const { notice } = input;
  const link = input.consoleUrl ? `${input.consoleUrl}/calls/${encodeURIComponent(notice.callId)}` : null;
  const summary = slackEscaped(notice.summary);
  const caller = slackEscaped(notice.caller);
  const riskLevel = slackEscaped(notice.riskLevel);
  const who =
    notice.actingFor !== undefined
      ? `${summary} by ${caller} ${slackEscaped(notice.actingFor)}`
      : `${summary} by ${caller}`;
  const expires = `${slackEscaped(notice.expiresAt.slice(11, 16))} UTC`;
  const { ending } = notice;
  let line: string;
  const turn = notice.chain
    ? `group ${slackEscaped(notice.chain.group)} (step ${notice.chain.step} of ${notice.chain.steps}): `
    : '';
  switch (notice.event) {
    case 'approval-requested':
      line = `${turn}${who} waits for approval (${riskLevel}), expires ${expires}`;
      break;
    case 'approval-turn':
      line = `Your turn, ${turn}${who} passed the steps before and waits for your approval (${riskLevel}), expires ${expires}`;
      break;
    case 'approval-escalated':
      line = `Still undecided: ${who} waits for approval (${riskLevel}), expires ${expires}`;
      break;
    case 'approval-expiring':
      line = `Expires soon, at ${expires}, undecided: ${who} waits for approval (${riskLevel})`;
      break;
    case 'approval-expired':
      line = `Expired without a decision: ${who} (${riskLevel}) was not run`;
      break;
    case 'approval-decided':
      line =
        ending?.state === 'denied'
          ? `Denied by ${slackEscaped(ending.approver)}: ${who} (${riskLevel}), reason: ${slackEscaped(ending.reason)}`
          : ending?.state === 'cancelled'
            ? `Cancelled while waiting: ${who} (${riskLevel}) was not run; ${slackEscaped(ending.reason)}`
            : `Approved by ${ending?.state === 'approved' ? ending.approvers.map(slackEscaped).join(', ') : 'its approvers'}: ${who} (${riskLevel})`;
      break;
  }
  // The link is the console's (config) and the call id, encoded: escaped all the same, as Slack asks.
  const escapedLink = link === null ? null : slackEscaped(link);
  const text = escapedLink ? `${line} — ${escapedLink}` : line;
  return {
    text,
    blocks: [
      {
        type: 'section',
        text: {
          type: 'mrkdwn',
          text: escapedLink ? `${line}\n<${escapedLink.replace(/\|/g, '%7C')}|Open in the console>` : line,
        },
      },
    ],
    event: notice.event,
    eventId: notice.eventId,
    callId: notice.callId,
    round: notice.round,
    tool: notice.tool,
    caller: notice.caller,
    ...(notice.actingFor !== undefined ? { actingFor: notice.actingFor } : {}),
    riskLevel: notice.riskLevel,
    expiresAt: notice.expiresAt,
    summary: notice.summary,
    consoleUrl: link,
    ...(notice.chain ? { chain: { ...notice.chain } } : {}),
    ...(ending ? { outcome: ending.state } : {}),
    ...(ending?.state === 'approved' ? { approvers: ending.approvers } : {}),
    ...(ending?.state === 'denied' ? { approvers: [ending.approver], reason: ending.reason } : {}),
    ...(ending?.state === 'cancelled' ? { reason: ending.reason } : {}),
  };
}

/**
 * A value as Slack's text shows it literally: `&`, `<` and `>` as `&amp;`, `&lt;` and `&gt;` (Slack's
 * control characters: `<...>` is a link, a mention or `<!channel>`). Nothing else is touched.
 */
export function slackEscaped(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
