// `toolgate_call_status`: the one tool the MCP server adds to the caller's own. It answers a call's
// current result, so a model told APPROVAL_PENDING can learn the outcome later, and it answers only
// for calls of the connection's caller: any other id, and an id that does not exist, get one answer.
import { z } from 'zod';
import type { ToolGateClient } from '../client';
import type { ToolResult } from '../shared/tool-result';
import { rejection } from '../shared/tool-result';
import { defineToolContract } from '../tools/define-tool';
import { validateArguments } from '../tools/validate-arguments';

/** The name of the status tool every MCP connection lists after the caller's tools. */
export const callStatusToolName = 'toolgate_call_status';

/**
 * The status tool as a contract, so its JSON Schema and its argument errors are made exactly like a
 * real tool's. It never reaches a worker: the MCP server answers it itself.
 */
export const callStatusContract = defineToolContract({
  name: callStatusToolName,
  description:
    'The current result of an earlier call of yours, by its call id: APPROVAL_PENDING while a human has not ' +
    'decided, then the final result (OK with what was applied, or why not). Read-only. Ask it when the user ' +
    'wants to know what happened to a call that was waiting for approval; never propose the call again to find out.',
  input: z.strictObject({
    call_id: z
      .string()
      .min(1)
      .max(256)
      .describe('The call id (tc-...) of an earlier result: its callId field, or data.callId.'),
  }),
  output: z.record(z.string(), z.unknown()),
  effect: 'read',
});

/** What the status tool needs: the client and the connection's caller. */
export interface CallStatusInput {
  client: ToolGateClient;
  caller: string;
  /** The end user the connection acts for (its token's), when it names one: only their calls answer. */
  onBehalfOf?: string;
  /** The tool's arguments as the model sent them. */
  arguments: unknown;
  /** How long to wait for a call that is running and has no answer yet, e.g. executing after approval. */
  waitMs?: number;
}

/**
 * The current result of one of the caller's calls (`ToolGateClient.callStatus`): APPROVAL_PENDING
 * while it waits for a human, its final result once it has one; anything else is `CALL_NOT_FOUND`.
 * Never changes anything.
 */
export async function callStatus(input: CallStatusInput): Promise<ToolResult> {
  const validation = validateArguments({ contract: callStatusContract, value: input.arguments });
  if (!validation.ok) {
    return rejection({
      tool: callStatusToolName,
      callId: '',
      code: 'INVALID_ARGUMENTS',
      message: validation.message,
      data: { issues: validation.issues },
    });
  }
  return input.client.callStatus({
    callId: validation.args.call_id as string,
    caller: input.caller,
    ...(input.onBehalfOf !== undefined ? { onBehalfOf: input.onBehalfOf } : {}),
    ...(input.waitMs !== undefined ? { waitMs: input.waitMs } : {}),
  });
}
