// The message an agent loop adds to the conversation when a call that waited for approval is final,
// so the model can tell the user what happened. Written by the loop, read by the scripted model.
import type { ToolResult } from 'toolgate';

const noticePattern = /^\[toolgate\] call (\S+) is final: (\{[\s\S]*\})\s*$/;

/** The user message that reports a pending call's final result: `[toolgate] call <id> is final: <ToolResult JSON>`. */
export function finalResultNotice(result: ToolResult): string {
  return `[toolgate] call ${result.callId} is final: ${JSON.stringify(result)}`;
}

/** The call id and result a notice reports, or undefined when `text` is not such a notice. */
export function parseFinalResultNotice(text: string): { callId: string; result: ToolResult } | undefined {
  const match = noticePattern.exec(text);
  if (!match?.[1] || !match[2]) return undefined;
  let result: unknown;
  try {
    result = JSON.parse(match[2]);
  } catch {
    return undefined;
  }
  return isToolResult(result) ? { callId: match[1], result } : undefined;
}

/** True when `value` has a ToolResult's shape (what toolgate sends back as a tool message's content). */
export function isToolResult(value: unknown): value is ToolResult {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.ok === 'boolean' &&
    typeof candidate.tool === 'string' &&
    typeof candidate.code === 'string' &&
    typeof candidate.message === 'string' &&
    typeof candidate.effect === 'string' &&
    typeof candidate.callId === 'string'
  );
}
