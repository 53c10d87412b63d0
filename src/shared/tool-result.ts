import type { ArgumentChange } from './argument-changes';
import type { ErrorCode } from './codes';

/** Did the world change? `unknown` only when the backend itself could not tell. */
export type Effect = 'none' | 'applied' | 'unknown';

/**
 * What goes back to the model for every proposal, success or not. `code` is for code and
 * dashboards; `message` is for the model and says what to do next.
 */
export interface ToolResult {
  ok: boolean;
  tool: string;
  /** `OK`, one of toolgate's codes, or a domain code the tool declared. */
  code: 'OK' | ErrorCode | (string & {});
  message: string;
  effect: Effect;
  data?: Record<string, unknown>;
  callId: string;
  /** Recorded earlier; nothing ran again. */
  replayed?: true;
  /** An approver edited the arguments before approval: what the call ran with instead of what was proposed. */
  edited?: ArgumentsEdited;
}

/** How approvers edited a call's arguments before approving: who, why, and every field that changed. */
export interface ArgumentsEdited {
  /** The approvers who edited, in order (one per edit). */
  by: string[];
  /** The last edit's reason. */
  reason: string;
  /** Each top-level field whose value differs from the proposal's; a side absent when the field was. */
  changes: ArgumentChange[];
}

/** Builds a rejection; a rejection never claims an effect it did not observe. */
export function rejection(input: {
  tool: string;
  callId: string;
  code: ErrorCode | (string & {});
  message: string;
  effect?: Effect;
  data?: Record<string, unknown>;
}): ToolResult {
  const result: ToolResult = {
    ok: false,
    tool: input.tool,
    code: input.code,
    message: input.message,
    effect: input.effect ?? 'none',
    callId: input.callId,
  };
  if (input.data !== undefined) result.data = input.data;
  return result;
}
