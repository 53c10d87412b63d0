// Anthropic's Messages API tool format: `input_schema` definitions, `tool_use` blocks in,
// `tool_result` blocks out (with `is_error`). Plain objects; toolgate needs no Anthropic dependency.
import type { ToolGateClient } from '../client';
import type { ToolResult } from '../shared/tool-result';
import { inputJsonSchema } from './json-schema';
import type { ProviderSession } from './provider-calls';
import { isErrorResult, objectArguments, runModelToolCalls } from './provider-calls';

/** A Messages API tool (`tools[]` of `messages.create`). */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/** A `tool_result` content block; `content` is the `ToolResult` as JSON. */
export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error: boolean;
}

/** The caller's tools (only those its policy allows) as Messages API tools. */
export function anthropicTools(input: { client: ToolGateClient; caller: string }): AnthropicTool[] {
  return input.client.toolsFor(input.caller).map((contract) => ({
    name: contract.name,
    description: contract.description,
    input_schema: inputJsonSchema(contract),
  }));
}

/**
 * Runs the `tool_use` blocks of an assistant message's content through toolgate, in one session,
 * concurrently (other blocks are ignored); returns the user message that answers them all, one
 * `tool_result` per `tool_use` in order, `is_error` set for every result but OK and APPROVAL_PENDING.
 */
export async function runAnthropicToolUses(
  input: ProviderSession & { content: readonly unknown[] },
): Promise<{ message: { role: 'user'; content: AnthropicToolResultBlock[] }; results: ToolResult[] }> {
  // Every tool_use block is a proposal, whatever else it holds: one whose id or name is not a string is
  // still answered (an unknown tool, audited), never dropped.
  const uses = input.content.filter(isToolUse).map((block) => ({
    id: typeof block.id === 'string' ? block.id : '',
    name: typeof block.name === 'string' ? block.name : '',
    input: block.input,
  }));
  const results = await runModelToolCalls({
    ...input,
    calls: uses.map((use) => ({ name: use.name, arguments: objectArguments(use.input) })),
  });
  return {
    message: {
      role: 'user',
      content: uses.map((use, index) => {
        const result = results[index]!;
        return {
          type: 'tool_result',
          tool_use_id: use.id,
          content: JSON.stringify(result),
          is_error: isErrorResult(result),
        };
      }),
    },
    results,
  };
}

function isToolUse(block: unknown): block is { id: unknown; name: unknown; input: unknown } {
  return typeof block === 'object' && block !== null && (block as { type?: unknown }).type === 'tool_use';
}
