// The Chat Completions wire format of one assistant answer: a `chat.completion` object, or the
// `chat.completion.chunk` sequence a streaming endpoint sends for it (role, content pieces, tool-call
// deltas with index, id, name and argument pieces, a finish reason, usage when asked).
import { randomBytes } from 'node:crypto';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';

/** One assistant answer, with the ids its tool calls carry on the wire. */
export interface AssistantAnswer {
  content: string | null;
  toolCalls: readonly { id: string; name: string; arguments: string }[];
}

/** Token counts; estimated (four characters a token), as the scripted model has no tokenizer. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** A fresh id in OpenAI's style, e.g. `chatcmpl-...` or `call_...`. */
export function wireId(prefix: 'chatcmpl-' | 'call_'): string {
  return `${prefix}${randomBytes(12).toString('hex')}`;
}

/** Rough token counts of a request body and an answer. */
export function estimateUsage(input: { requestCharacters: number; answer: AssistantAnswer }): Usage {
  const answerCharacters =
    (input.answer.content?.length ?? 0) +
    input.answer.toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  const prompt = Math.ceil(input.requestCharacters / 4);
  const completion = Math.ceil(answerCharacters / 4);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function finishReason(answer: AssistantAnswer): 'tool_calls' | 'stop' {
  return answer.toolCalls.length > 0 ? 'tool_calls' : 'stop';
}

/** The non-streaming response: one `chat.completion`. */
export function chatCompletion(input: {
  id: string;
  model: string;
  created: number;
  answer: AssistantAnswer;
  usage: Usage;
}): ChatCompletion {
  const { answer } = input;
  return {
    id: input.id,
    object: 'chat.completion',
    created: input.created,
    model: input.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: answer.content,
          refusal: null,
          ...(answer.toolCalls.length > 0
            ? {
                tool_calls: answer.toolCalls.map((call) => ({
                  id: call.id,
                  type: 'function' as const,
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: finishReason(answer),
      },
    ],
    usage: input.usage,
  };
}

/** Splits text into about `count` pieces (never inside a character), as a model's tokens arrive. */
export function pieces(text: string, count: number): string[] {
  const characters = Array.from(text);
  if (characters.length === 0) return [];
  const size = Math.max(1, Math.ceil(characters.length / count));
  const result: string[] = [];
  for (let start = 0; start < characters.length; start += size) {
    result.push(characters.slice(start, start + size).join(''));
  }
  return result;
}

/**
 * The streaming response's chunks, in order: the role, the content in pieces, each tool call's first
 * delta (index, id, type, name, empty arguments) then its arguments in pieces, a last chunk with the
 * finish reason, and, when `includeUsage`, a usage chunk with no choices. `data: [DONE]` follows them.
 */
export function chatCompletionChunks(input: {
  id: string;
  model: string;
  created: number;
  answer: AssistantAnswer;
  usage: Usage;
  includeUsage: boolean;
}): ChatCompletionChunk[] {
  const { answer } = input;
  const chunk = (
    delta: ChatCompletionChunk.Choice.Delta,
    finish: ChatCompletionChunk.Choice['finish_reason'] = null,
  ): ChatCompletionChunk => ({
    id: input.id,
    object: 'chat.completion.chunk',
    created: input.created,
    model: input.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  const chunks: ChatCompletionChunk[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of pieces(answer.content ?? '', 6)) chunks.push(chunk({ content: piece }));
  answer.toolCalls.forEach((call, index) => {
    chunks.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    );
    for (const piece of pieces(call.arguments, 3)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, finishReason(answer)));
  if (input.includeUsage) {
    chunks.push({
      id: input.id,
      object: 'chat.completion.chunk',
      created: input.created,
      model: input.model,
      choices: [],
      usage: input.usage,
    });
  }
  return chunks;
}
