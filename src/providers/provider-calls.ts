// What every provider format shares: the caller's tools, and a turn's tool calls run through one
// session, each as its own governed call, concurrently, answered in the order the model sent them.
import type { ToolGateClient } from '../client';
import type { CallContext } from '../calls/call-context';
import type { ToolResult } from '../shared/tool-result';
import type { AnyToolContract } from '../tools/define-tool';
import { absentOptionalNulls, openAIStrictJsonSchema } from './json-schema';

/** Where a provider's tool calls go: one toolgate session, as the caller the harness (never the model) names. */
export interface ProviderSession {
  client: ToolGateClient;
  /** The conversation: budgets, loop guard and circuit breaker count across its calls. */
  session: string;
  caller: string;
  /** On whose behalf the conversation acts (the logged-in end user...), set by the harness: every call carries it. */
  context?: CallContext;
}

/** One tool call as the model produced it, whatever the format. */
export interface ModelToolCall {
  name: string;
  /** The raw JSON text (OpenAI) or the object (Anthropic, the AI SDK), untouched. */
  arguments: string | Record<string, unknown>;
}

/**
 * How OpenAI definitions are built: `true` (the default) sends every tool with `strict: true` and
 * refuses at start-up a tool strict mode cannot express; `'where-possible'` sends those tools
 * non-strict instead; `false` sends every tool non-strict.
 */
export type StrictMode = boolean | 'where-possible';

/**
 * Runs a turn's tool calls in the session, concurrently, each a governed call of its own; the
 * results come back in the calls' order. Never throws for anything the model sent.
 */
export function runModelToolCalls(
  input: ProviderSession & { calls: readonly ModelToolCall[] },
): Promise<ToolResult[]> {
  const { client, session, caller, context } = input;
  return Promise.all(
    input.calls.map((call) =>
      client.call({
        session,
        caller,
        tool: call.name,
        arguments: call.arguments,
        ...(context !== undefined ? { context } : {}),
      }),
    ),
  );
}

/** True when `tool` is sent to OpenAI in strict mode under `mode` (a tool strict mode cannot express is not). */
export function sentStrict(input: { contract: AnyToolContract; mode: StrictMode }): boolean {
  if (input.mode === false) return false;
  try {
    openAIStrictJsonSchema(input.contract);
    return true;
  } catch (error) {
    if (input.mode === true) throw error;
    return false;
  }
}

/**
 * An OpenAI tool call's arguments as toolgate receives them: the model's raw text, except that for a
 * tool sent in strict mode a `null` in a field that was optional is read as absent (strict mode
 * cannot leave a field out); only then is the parsed object passed on instead of the text. Anything
 * that does not parse as a JSON object is passed on as the raw text, so toolgate answers
 * `INVALID_JSON` and audits it. Never throws.
 */
export function openAIArguments(input: {
  client: ToolGateClient;
  name: string;
  arguments: string;
  strict: StrictMode;
}): string | Record<string, unknown> {
  const contract = input.client.tool(input.name);
  if (!contract || !sentStrict({ contract, mode: input.strict === true ? 'where-possible' : input.strict })) {
    return input.arguments;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(input.arguments);
  } catch {
    return input.arguments;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return input.arguments;
  const stripped = absentOptionalNulls({ contract, value: parsed });
  // Nothing read as absent: the model's own text goes on, so the audit keeps exactly what it sent.
  return stripped.changed ? (stripped.value as Record<string, unknown>) : input.arguments;
}

/**
 * A tool call's arguments as an object-taking format (Anthropic, the AI SDK) hands them over: an
 * object as it is, anything else as its JSON text, so toolgate answers `INVALID_JSON` (a string that
 * holds JSON is not the object it spells).
 */
export function objectArguments(value: unknown): string | Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : (JSON.stringify(value ?? null) ?? 'null');
}

/** A tool result is an error for formats that flag one, except APPROVAL_PENDING: nothing to fix, it waits. */
export function isErrorResult(result: ToolResult): boolean {
  return !result.ok && result.code !== 'APPROVAL_PENDING';
}
