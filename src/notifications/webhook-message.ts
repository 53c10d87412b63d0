import type { ApprovalNotice } from '../shared/notifications';

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
  riskLevel: string;
  expiresAt: string;
  summary: string;
  consoleUrl: string | null;
  /** How the round ended, on a follow-up. */
  outcome?: 'approved' | 'denied' | 'expired';
  approvers?: string[];
  reason?: string;
}

/**
 * One event as a Slack-compatible message (incoming webhooks read `text`; `blocks` render richer)
 * with toolgate's fields beside it for receivers of their own. Pure: the same notice, the same body.
 */
export function webhookMessage(input: { notice: ApprovalNotice; consoleUrl?: string }): WebhookMessage {
  const { notice } = input;
  const link = input.consoleUrl ? `${input.consoleUrl}/calls/${encodeURIComponent(notice.callId)}` : null;
  const who = `${notice.summary} by ${notice.caller}`;
  const expires = `${notice.expiresAt.slice(11, 16)} UTC`;
  const { ending } = notice;
  let line: string;
  switch (notice.event) {
    case 'approval-requested':
      line = `${who} waits for approval (${notice.riskLevel}), expires ${expires}`;
      break;
    case 'approval-escalated':
      line = `Still undecided: ${who} waits for approval (${notice.riskLevel}), expires ${expires}`;
      break;
    case 'approval-expired':
      line = `Expired without a decision: ${who} (${notice.riskLevel}) was not run`;
      break;
    case 'approval-decided':
      line =
        ending?.state === 'denied'
          ? `Denied by ${ending.approver}: ${who} (${notice.riskLevel}), reason: ${ending.reason}`
          : `Approved by ${ending?.state === 'approved' ? ending.approvers.join(', ') : 'its approvers'}: ${who} (${notice.riskLevel})`;
      break;
  }
  const text = link ? `${line} — ${link}` : line;
  return {
    text,
    blocks: [
      {
        type: 'section',
        text: { type: 'mrkdwn', text: link ? `${line}\n<${link}|Open in the console>` : line },
      },
    ],
    event: notice.event,
    eventId: notice.eventId,
    callId: notice.callId,
    round: notice.round,
    tool: notice.tool,
    caller: notice.caller,
    riskLevel: notice.riskLevel,
    expiresAt: notice.expiresAt,
    summary: notice.summary,
    consoleUrl: link,
    ...(ending ? { outcome: ending.state } : {}),
    ...(ending?.state === 'approved' ? { approvers: ending.approvers } : {}),
    ...(ending?.state === 'denied' ? { approvers: [ending.approver], reason: ending.reason } : {}),
  };
}
