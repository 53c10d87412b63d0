// OpenAI's tool formats (Chat Completions and Responses): definitions from the one zod schema per
// tool, and tool calls in, tool results out. Plain objects shaped as the `openai` client's params,
// so toolgate needs no OpenAI dependency.
import type { ToolGateClient } from '../client';
import type { ToolResult } from '../shared/tool-result';
import { inputJsonSchema, openAIStrictJsonSchema } from './json-schema';
import type { ProviderSession, StrictMode } from './provider-calls';
import { openAIArguments, runModelToolCalls, sentStrict } from './provider-calls';

/** A Chat Completions function tool (`tools[]` of `chat.completions.create`). */
export interface OpenAIChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown>; strict: boolean };
}

/** A Responses API function tool (`tools[]` of `responses.create`). */
export interface OpenAIResponsesTool {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict: boolean;
}

/** A Chat Completions tool call, as `choices[0].message.tool_calls[]` holds it. */
export interface OpenAIChatToolCall {
  id: string;
  type?: string;
  function: { name: string; arguments: string };
}

/** The `tool` message that answers one tool call; `content` is the `ToolResult` as JSON. */
export interface OpenAIChatToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

/** A Responses API `function_call_output` item; `output` is the `ToolResult` as JSON. */
export interface OpenAIResponsesFunctionCallOutput {
  type: 'function_call_output';
  call_id: string;
  output: string;
}

type DefinitionsInput = { client: ToolGateClient; caller: string; strict?: StrictMode };

function functionDefinitions(input: DefinitionsInput) {
  const mode = input.strict ?? true;
  return input.client.toolsFor(input.caller).map((contract) => {
    const strict = sentStrict({ contract, mode });
    return {
      name: contract.name,
      description: contract.description,
      parameters: strict ? openAIStrictJsonSchema(contract) : inputJsonSchema(contract),
      strict,
    };
  });
}

/**
 * The caller's tools (only those its policy allows) for Chat Completions, `strict: true` by default:
 * an optional field is sent as required-or-`null`, and toolgate reads that `null` as absent.
 */
export function openAIChatTools(input: DefinitionsInput): OpenAIChatTool[] {
  return functionDefinitions(input).map((definition) => ({ type: 'function', function: definition }));
}

/** The caller's tools for the Responses API; the same schemas and strict mode as {@link openAIChatTools}. */
export function openAIResponsesTools(input: DefinitionsInput): OpenAIResponsesTool[] {
  return functionDefinitions(input).map((definition) => ({ type: 'function', ...definition }));
}

/**
 * Runs an assistant message's `tool_calls` through toolgate, in one session, concurrently; returns
 * one `tool` message per call, in order, ready to append to the conversation. Broken JSON arguments
 * are `INVALID_JSON`; nothing the model sent makes it throw. Pass the same `strict` as the definitions.
 */
export async function runOpenAIChatToolCalls(
  input: ProviderSession & {
    toolCalls: readonly OpenAIChatToolCall[] | null | undefined;
    strict?: StrictMode;
  },
): Promise<{ messages: OpenAIChatToolMessage[]; results: ToolResult[] }> {
  // Read defensively: whatever the endpoint sent (a custom tool call, a name that is not a string)
  // still becomes a proposal toolgate answers and audits, never an exception that loses the turn.
  const calls = (input.toolCalls ?? []).map((call) => chatToolCall(call as unknown));
  const results = await runOpenAICalls({ ...input, calls });
  return {
    messages: calls.map((call, index) => ({
      role: 'tool',
      tool_call_id: call.id,
      content: JSON.stringify(results[index]),
    })),
    results,
  };
}

/** Runs OpenAI tool calls (name and raw argument text) through the session, strict nulls read as absent. */
function runOpenAICalls(
  input: ProviderSession & { calls: readonly { name: string; arguments: string }[]; strict?: StrictMode },
): Promise<ToolResult[]> {
  return runModelToolCalls({
    ...input,
    calls: input.calls.map((call) => ({
      name: call.name,
      arguments: openAIArguments({
        client: input.client,
        name: call.name,
        arguments: call.arguments,
        strict: input.strict ?? true,
      }),
    })),
  });
}

/** A Chat Completions tool call of any shape (function or custom), as id, name and raw argument text. */
function chatToolCall(call: unknown): { id: string; name: string; arguments: string } {
  const record = isRecord(call) ? call : {};
  const body = isRecord(record.function) ? record.function : isRecord(record.custom) ? record.custom : {};
  const raw = body.arguments ?? body.input;
  return {
    id: typeof record.id === 'string' ? record.id : '',
    name: typeof body.name === 'string' ? body.name : '',
    arguments: typeof raw === 'string' ? raw : (JSON.stringify(raw ?? null) ?? 'null'),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Runs the `function_call` items of a Responses API output through toolgate (other items are
 * ignored); returns one `function_call_output` item per call, in order.
 */
export async function runOpenAIResponsesFunctionCalls(
  input: ProviderSession & { output: readonly unknown[]; strict?: StrictMode },
): Promise<{ items: OpenAIResponsesFunctionCallOutput[]; results: ToolResult[] }> {
  // Every function_call item is a proposal, whatever else it holds: one whose id, name or arguments are
  // not strings is still answered (an unknown tool, or INVALID_JSON) and audited, never dropped.
  const calls = input.output.filter(isFunctionCall).map((item) => ({
    call_id: typeof item.call_id === 'string' ? item.call_id : '',
    name: typeof item.name === 'string' ? item.name : '',
    arguments:
      typeof item.arguments === 'string'
        ? item.arguments
        : (JSON.stringify(item.arguments ?? null) ?? 'null'),
  }));
  const results = await runOpenAICalls({ ...input, calls });
  return {
    items: calls.map((call, index) => ({
      type: 'function_call_output',
      call_id: call.call_id,
      output: JSON.stringify(results[index]),
    })),
    results,
  };
}

function isFunctionCall(item: unknown): item is { call_id: unknown; name: unknown; arguments: unknown } {
  return isRecord(item) && item.type === 'function_call';
}
