// What the scripted model reads in a request: the conversation as the agent loop sent it, with each
// tool message's content parsed as the ToolResult toolgate answered. Nothing else reaches the model.
import type { ToolResult } from 'toolgate';
import { isToolResult, parseFinalResultNotice } from '../final-result-notice';
import type { ChatRequest } from './chat-request';
import { textOf } from './chat-request';

/** One tool call of the model and the answer the loop sent for it. */
export interface ToolExchange {
  toolCallId: string;
  tool: string;
  /** The arguments as the model wrote them (JSON text). */
  arguments: string;
  /** The tool message's content parsed as a ToolResult; undefined when it is not one. */
  result: ToolResult | undefined;
  /** The tool message's content as sent. */
  content: string;
}

/** A `[toolgate] call <id> is final: ...` message the loop added after waiting for an approval. */
export interface FinalResultNotice {
  callId: string;
  result: ToolResult;
}

/** The conversation a request carries, as the scripted model reads it. */
export interface Conversation {
  /** How many times the model has answered already: the index of the turn this request asks for. */
  turn: number;
  /** The names of the tools the request offered. */
  offeredTools: readonly string[];
  /** What the user wrote (user messages that are not notices), oldest first. */
  userTexts: readonly string[];
  /** The tool results sent since the model's last answer, in the order of its calls. */
  latestResults: readonly ToolExchange[];
  /** The final-result notices sent since the model's last answer. */
  latestNotices: readonly FinalResultNotice[];
  /** Every tool call and its answer, oldest first. */
  exchanges: readonly ToolExchange[];
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Reads a checked request's messages into the view a script plays against. */
export function readConversation(request: ChatRequest): Conversation {
  const calls = new Map<string, { tool: string; arguments: string }>();
  const exchanges: ToolExchange[] = [];
  const userTexts: string[] = [];
  let turn = 0;
  let latestResults: ToolExchange[] = [];
  let latestNotices: FinalResultNotice[] = [];
  for (const message of request.messages) {
    switch (message.role) {
      case 'assistant':
        turn += 1;
        latestResults = [];
        latestNotices = [];
        for (const call of message.tool_calls ?? []) {
          calls.set(call.id, { tool: call.function.name, arguments: call.function.arguments });
        }
        break;
      case 'tool': {
        const call = calls.get(message.tool_call_id);
        const text = textOf(message.content);
        const parsed = parseJson(text);
        const exchange: ToolExchange = {
          toolCallId: message.tool_call_id,
          tool: call?.tool ?? '(unknown)',
          arguments: call?.arguments ?? '',
          result: isToolResult(parsed) ? parsed : undefined,
          content: text,
        };
        exchanges.push(exchange);
        latestResults.push(exchange);
        break;
      }
      case 'user': {
        const text = textOf(message.content);
        const notice = parseFinalResultNotice(text);
        if (notice) latestNotices.push(notice);
        else userTexts.push(text);
        break;
      }
      case 'system':
      case 'developer':
        break;
    }
  }
  return {
    turn,
    offeredTools: (request.tools ?? []).map((tool) => tool.function.name),
    userTexts,
    latestResults,
    latestNotices,
    exchanges,
  };
}
