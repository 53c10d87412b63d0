// A real agent loop on OpenAI's Chat Completions: the model sees only the caller's tools; each turn's
// tool calls go through toolgate (concurrently, in one session) and their ToolResults go back to the
// model, until it answers in text. Works with any OpenAI-compatible endpoint.
import type OpenAI from 'openai';
import type {
  ChatCompletionMessage,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { CallContext, ToolGateClient, ToolResult } from 'toolgate';
import { openAIChatTools, runOpenAIChatToolCalls } from 'toolgate';
import { ChatStreamAccumulator } from './chat-stream-accumulator';
import { finalResultNotice } from './final-result-notice';

/** What happens in the loop, as it happens; `turn` counts the model's answers from 1. */
export type AgentEvent =
  | { type: 'assistant-text'; turn: number; text: string }
  | { type: 'tool-call'; turn: number; toolCallId: string; tool: string; arguments: string }
  | { type: 'tool-result'; turn: number; toolCallId: string; result: ToolResult }
  /** The loop is about to wait for a call's approval to be decided (or to expire). */
  | { type: 'approval-wait'; callId: string; pending: ToolResult }
  /** A call that waited for approval is final; the loop tells the model next. */
  | { type: 'final-result'; callId: string; result: ToolResult };

/** One conversation's loop: the model, the toolgate client and the session its calls run in. */
export interface AgentLoopInput {
  openai: OpenAI;
  model: string;
  client: ToolGateClient;
  /** The toolgate session: budgets and loop guards count across the whole conversation. */
  session: string;
  /** The agent's principal (the bot); the model is offered this caller's tools only. */
  caller: string;
  /**
   * On whose behalf the conversation acts: the customer logged in to the chat, the channel. The
   * harness sets it from its own login, never from the model; every tool call carries it.
   */
  context?: CallContext;
  /** The conversation so far (a system message, the user's message...); not changed. */
  messages: readonly ChatCompletionMessageParam[];
  /** Ask for server-sent events and assemble the answer from its chunks (default false). */
  stream?: boolean;
  /** The most model answers the loop asks for (default 12). */
  maxTurns?: number;
  /**
   * After the model's text answer, wait for each call still APPROVAL_PENDING to be final, tell the
   * model (`[toolgate] call <id> is final: <ToolResult JSON>`) and go on (default false).
   */
  awaitApprovals?: boolean;
  /** Called in order, awaited, for each event. */
  onEvent?: (event: AgentEvent) => void | Promise<void>;
}

/** How a loop ended and everything it saw. */
export interface AgentLoopResult {
  /** The whole transcript: the input messages, then every assistant, tool and notice message. */
  messages: ChatCompletionMessageParam[];
  /** Every tool call's ToolResult, in the order the model made the calls. */
  results: ToolResult[];
  /** The final results of the calls the loop waited for (`awaitApprovals`), in the order they came. */
  finalResults: ToolResult[];
  /** The calls still APPROVAL_PENDING when the loop ended. */
  pending: ToolResult[];
  /** The model's last text answer when it answered; undefined when the turns ran out first. */
  answer: string | undefined;
  /** The model answers the loop asked for. */
  turns: number;
  stop: 'answered' | 'max-turns';
}

function isFunctionCall(call: ChatCompletionMessageToolCall): call is ChatCompletionMessageFunctionToolCall {
  return call.type === 'function';
}

/** One model answer, from a JSON response or assembled from a stream. */
async function nextAssistantMessage(input: {
  openai: OpenAI;
  model: string;
  messages: ChatCompletionMessageParam[];
  tools: ChatCompletionTool[];
  stream: boolean;
}): Promise<ChatCompletionMessage> {
  const request = {
    model: input.model,
    messages: input.messages,
    ...(input.tools.length > 0 ? { tools: input.tools } : {}),
  };
  if (!input.stream) {
    const completion = await input.openai.chat.completions.create({ ...request, stream: false });
    const choice = completion.choices[0];
    if (!choice) throw new Error(`the model ${input.model} answered with no choices`);
    return choice.message;
  }
  // Our own accumulator rather than the SDK's stream helper: it parses strict tools' arguments and
  // throws on broken JSON, which toolgate must see (and answer INVALID_JSON) instead.
  const chunks = await input.openai.chat.completions.create({ ...request, stream: true });
  const accumulator = new ChatStreamAccumulator();
  for await (const chunk of chunks) accumulator.add(chunk);
  return accumulator.message();
}

/**
 * Runs the conversation until the model answers in text (after waiting for approvals, with
 * `awaitApprovals`) or `maxTurns` answers were asked for. Tool calls never make it throw: each gets
 * a ToolResult, also for broken arguments and tools the caller may not use; a failing model
 * endpoint does. Every call goes through toolgate, so a call sent twice is applied at most once.
 */
export async function runAgentLoop(input: AgentLoopInput): Promise<AgentLoopResult> {
  const { openai, model, client, session, caller, context } = input;
  const maxTurns = input.maxTurns ?? 12;
  const tools: ChatCompletionTool[] = openAIChatTools({ client, caller });
  const messages: ChatCompletionMessageParam[] = [...input.messages];
  const results: ToolResult[] = [];
  const finalResults: ToolResult[] = [];
  // Calls answered APPROVAL_PENDING and not since seen final, by call id.
  const pending = new Map<string, ToolResult>();
  const emit = async (event: AgentEvent): Promise<void> => {
    await input.onEvent?.(event);
  };
  const ended = (stop: AgentLoopResult['stop'], turns: number, answer: string | undefined) => ({
    messages,
    results,
    finalResults,
    pending: [...pending.values()],
    answer,
    turns,
    stop,
  });

  for (let turn = 1; turn <= maxTurns; turn += 1) {
    const message = await nextAssistantMessage({
      openai,
      model,
      messages,
      tools,
      stream: input.stream ?? false,
    });
    const toolCalls = (message.tool_calls ?? []).filter(isFunctionCall);
    messages.push({
      role: 'assistant',
      content: message.content,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    });
    if (message.content) await emit({ type: 'assistant-text', turn, text: message.content });

    if (toolCalls.length > 0) {
      for (const call of toolCalls) {
        await emit({
          type: 'tool-call',
          turn,
          toolCallId: call.id,
          tool: call.function.name,
          arguments: call.function.arguments,
        });
      }
      const ran = await runOpenAIChatToolCalls({
        client,
        session,
        caller,
        toolCalls,
        ...(context !== undefined ? { context } : {}),
      });
      messages.push(...ran.messages);
      for (const [index, result] of ran.results.entries()) {
        results.push(result);
        // A call proposed again may now be final (replayed, or decided meanwhile).
        if (result.code === 'APPROVAL_PENDING') pending.set(result.callId, result);
        else pending.delete(result.callId);
        await emit({ type: 'tool-result', turn, toolCallId: toolCalls[index]!.id, result });
      }
      continue;
    }

    if (input.awaitApprovals && pending.size > 0) {
      for (const [callId, waiting] of pending) {
        await emit({ type: 'approval-wait', callId, pending: waiting });
        const final = await client.result(callId, { wait: true });
        if (!final) throw new Error(`toolgate returned no final result for ${callId}`);
        finalResults.push(final);
        messages.push({ role: 'user', content: finalResultNotice(final) });
        await emit({ type: 'final-result', callId, result: final });
      }
      pending.clear();
      continue;
    }
    return ended('answered', turn, message.content ?? '');
  }
  return ended('max-turns', maxTurns, undefined);
}
