import type { ApprovalView } from '../calls/protocol';
import type { ToolResult } from '../shared/tool-result';

/** Renders a result for a person at a terminal: the code first, then what the model is told. */
export function formatResult(result: ToolResult): string {
  const lines = [
    `${result.ok ? 'OK' : result.code}  ${result.tool || '(no tool)'}${result.replayed ? '  (replayed: nothing ran again)' : ''}`,
    `  call id: ${result.callId}`,
    `  effect:  ${result.effect}`,
    `  message: ${result.message}`,
  ];
  if (result.data !== undefined) {
    const data = JSON.stringify(result.data, null, 2).split('\n').join('\n  ');
    lines.push(`  data:    ${data}`);
  }
  return lines.join('\n');
}

/**
 * Renders an approval round for a person: its state, the tool contract its decisions must name and,
 * when it was opened in place of another or no longer holds, why.
 */
export function formatApprovalRound(round: ApprovalView): string {
  const expiry = round.state === 'pending' ? `, expires ${round.expiresAt}` : '';
  const lines = [
    `round ${round.round}: ${round.state}, ${round.approvals.length}/${round.quorum} approvals${expiry}`,
    `  contract: ${round.contractDigest.slice(0, 12)} (${round.contractDigest})`,
  ];
  if (round.supersedes) {
    lines.push(`  opened in place of round ${round.supersedes.round}: ${round.supersedes.reason}`);
  }
  if (round.supersededBecause !== undefined) lines.push(`  superseded: ${round.supersededBecause}`);
  return lines.join('\n');
}
