// A script of turns for the scripted model: each turn reads the conversation it is sent (the tool
// results as toolgate answered them) and decides the model's next answer from them. A turn states
// what it expects to have seen; when the conversation is elsewhere, the model says SCRIPT DIVERGED.
import type { ToolResult } from 'toolgate';
import type { Conversation, FinalResultNotice, ToolExchange } from './conversation';

/** One tool call the scripted model makes. */
export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** The model's answer in one turn: tool calls (one or several at once) or a text for the user. */
export type ModelReply =
  | {
      kind: 'tool-calls';
      calls: readonly ScriptedToolCall[];
      /**
       * `true` when the script calls its tools even if the request did not offer them, as a real
       * model can (then toolgate answers TOOL_NOT_ALLOWED); otherwise an unoffered tool diverges.
       */
      evenIfNotOffered?: boolean;
    }
  | { kind: 'text'; text: string };

/** One turn: what it is for (named in a divergence) and how it answers the conversation. */
export interface ScriptTurn {
  purpose: string;
  /** Throws `ScriptDivergence` (through the `expect...` helpers) when the conversation is not what it expects. */
  play(conversation: Conversation): ModelReply;
}

/** A named script: the turns the model plays, in order, and the user message it was written for. */
export interface ModelScript {
  name: string;
  summary: string;
  /** The opening user message the script's story starts from (the model reads whatever is actually sent). */
  userMessage: string;
  /** The customer logged in to the chat the story happens in, when it is one customer's (`npm run agent`'s default). */
  customer?: string;
  turns: readonly ScriptTurn[];
}

/** The model's answer to one request: its reply, and whether the conversation left the script. */
export type PlayedTurn = { reply: ModelReply; diverged: boolean };

/** Thrown by a turn whose expectation the conversation does not meet. */
export class ScriptDivergence extends Error {
  constructor(
    readonly expected: string,
    readonly got: string,
  ) {
    super(`expected ${expected}; got ${got}`);
  }
}

/** Leaves the script: the model answers SCRIPT DIVERGED with what it expected and what it got. */
export function diverge(expected: string, got: string): never {
  throw new ScriptDivergence(expected, got);
}

/** The prefix of every answer the scripted model gives when the conversation left its script. */
export const scriptDivergedPrefix = 'SCRIPT DIVERGED:';

/**
 * Plays the turn the conversation is at (its count of assistant messages). The model keeps no state
 * between requests: the same conversation gets the same answer, whoever sends it.
 */
export function playScript(script: ModelScript, conversation: Conversation): PlayedTurn {
  const turn = script.turns[conversation.turn];
  const divergence = (purpose: string, expected: string, got: string): PlayedTurn => ({
    reply: {
      kind: 'text',
      text: `${scriptDivergedPrefix} script ${script.name}, turn ${conversation.turn + 1} (${purpose}): expected ${expected}; got ${got}.`,
    },
    diverged: true,
  });
  if (!turn) {
    return divergence(
      'after the last turn',
      `at most ${script.turns.length} model turns`,
      `a request for turn ${conversation.turn + 1}`,
    );
  }
  let reply: ModelReply;
  try {
    reply = turn.play(conversation);
  } catch (error) {
    if (error instanceof ScriptDivergence) return divergence(turn.purpose, error.expected, error.got);
    throw error;
  }
  if (reply.kind === 'tool-calls' && !reply.evenIfNotOffered) {
    const missing = reply.calls.find((call) => !conversation.offeredTools.includes(call.name));
    if (missing) {
      return divergence(
        turn.purpose,
        `the tool ${missing.name} among the tools sent`,
        `tools [${conversation.offeredTools.join(', ')}]`,
      );
    }
  }
  return { reply, diverged: false };
}

/** A tool exchange whose content is a ToolResult. */
export type ResultExchange = ToolExchange & { result: ToolResult };

function describeExchange(exchange: ToolExchange): string {
  if (!exchange.result) return `${exchange.tool} -> (not a ToolResult: ${exchange.content.slice(0, 120)})`;
  return `${exchange.tool} -> ${exchange.result.code}: ${exchange.result.message}`;
}

/**
 * The tool results since the model's last answer, checked against `expected` (in order: the tool,
 * and the accepted codes, any code when left out). Diverges when they differ.
 */
export function expectResults(
  conversation: Conversation,
  expected: readonly { tool: string; code?: string | readonly string[] }[],
): ResultExchange[] {
  const described = expected
    .map(({ tool, code }) => `${tool} -> ${code === undefined ? 'any code' : [code].flat().join(' or ')}`)
    .join(', ');
  const got = conversation.latestResults;
  const gotText =
    got.length > 0 ? got.map(describeExchange).join(', ') : 'no tool results since the last turn';
  if (got.length !== expected.length) diverge(`${expected.length} tool result(s): ${described}`, gotText);
  return got.map((exchange, index) => {
    const wanted = expected[index]!;
    const codes = wanted.code === undefined ? undefined : [wanted.code].flat();
    if (
      !exchange.result ||
      exchange.tool !== wanted.tool ||
      (codes && !codes.includes(exchange.result.code))
    ) {
      diverge(described, gotText);
    }
    return exchange as ResultExchange;
  });
}

/** The one final-result notice the loop sent since the model's last answer; diverges when there is none. */
export function expectFinalNotice(conversation: Conversation): FinalResultNotice {
  const [notice, ...more] = conversation.latestNotices;
  if (!notice || more.length > 0) {
    diverge(
      'one "[toolgate] call <id> is final: ..." message',
      `${conversation.latestNotices.length} such messages and ${conversation.latestResults.length} tool result(s)`,
    );
  }
  return notice;
}

/** The user's latest words; diverges when the user wrote nothing. */
export function latestUserText(conversation: Conversation): string {
  const text = conversation.userTexts.at(-1);
  if (text === undefined) diverge('a user message', 'none');
  return text;
}

/** A ToolResult's data field, when it is a number. */
export function numberField(result: ToolResult, field: string): number | undefined {
  const value = result.data?.[field];
  return typeof value === 'number' ? value : undefined;
}

/** A ToolResult's data field, when it is a string. */
export function stringField(result: ToolResult, field: string): string | undefined {
  const value = result.data?.[field];
  return typeof value === 'string' ? value : undefined;
}
