// Assembles a streamed Chat Completion from its chunks: the content pieces joined, each tool call
// rebuilt from its deltas by index (id and type from the first, name and argument pieces appended).
// Arguments stay the raw text the model produced: broken JSON reaches toolgate, which answers
// INVALID_JSON, instead of failing the loop in a client-side parser.
import type { ChatCompletionChunk, ChatCompletionMessage } from 'openai/resources/chat/completions';

type FinishReason = NonNullable<ChatCompletionChunk.Choice['finish_reason']>;

/** Collects a stream's chunks (choice 0) into the assistant message they spell out. */
export class ChatStreamAccumulator {
  private content = '';
  private sawContent = false;
  private readonly toolCalls = new Map<number, { id: string; name: string; arguments: string }>();
  private finish: FinishReason | null = null;

  /** Adds one chunk; chunks without a first choice (the usage chunk) change nothing. */
  add(chunk: ChatCompletionChunk): void {
    const choice = chunk.choices.find((candidate) => candidate.index === 0);
    if (!choice) return;
    const { delta } = choice;
    if (typeof delta.content === 'string') {
      this.content += delta.content;
      this.sawContent ||= delta.content.length > 0;
    }
    for (const part of delta.tool_calls ?? []) {
      const call = this.toolCalls.get(part.index) ?? { id: '', name: '', arguments: '' };
      if (part.id) call.id = part.id;
      if (part.function?.name) call.name += part.function.name;
      if (part.function?.arguments) call.arguments += part.function.arguments;
      this.toolCalls.set(part.index, call);
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
  }

  /** The finish reason of the last chunk that had one, or null while the stream is not done. */
  finishReason(): FinishReason | null {
    return this.finish;
  }

  /** The assistant message so far, tool calls in index order. */
  message(): ChatCompletionMessage {
    const calls = [...this.toolCalls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({
        id: call.id,
        type: 'function' as const,
        function: { name: call.name, arguments: call.arguments },
      }));
    return {
      role: 'assistant',
      content: this.sawContent ? this.content : null,
      refusal: null,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    };
  }
}
