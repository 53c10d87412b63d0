// A Chat Completions request as the scripted model server accepts it: checked the way the real
// endpoint checks it, so an agent loop that sends a broken conversation fails here as it would there.
import { z } from 'zod';

/** A request the server refuses, answered as OpenAI does: `{error: {message, type, param, code}}`. */
export class ChatRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type: string = 'invalid_request_error',
  ) {
    super(message);
  }

  /** The error body OpenAI's clients parse. */
  body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

const textPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const content = z.union([z.string(), z.array(textPart), z.null()]).optional();

const toolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function').optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content }),
  z.looseObject({ role: z.literal('developer'), content }),
  z.looseObject({ role: z.literal('user'), content }),
  z.looseObject({ role: z.literal('assistant'), content, tool_calls: z.array(toolCall).optional() }),
  z.looseObject({ role: z.literal('tool'), tool_call_id: z.string(), content }),
]);

const requestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  tools: z
    .array(
      z.looseObject({
        type: z.literal('function'),
        function: z.looseObject({ name: z.string().min(1), description: z.string().optional() }),
      }),
    )
    .optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  // One choice per request: a script plays one conversation.
  n: z.literal(1).nullable().optional(),
});

/** A checked request: every tool message answers a tool call of the assistant message before it. */
export type ChatRequest = z.infer<typeof requestSchema>;

/** One message of a checked request. */
export type ChatRequestMessage = ChatRequest['messages'][number];

/** The text of a message's content: a string, or its text parts joined. */
export function textOf(value: ChatRequestMessage['content']): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return value.map((part) => part.text ?? '').join('');
}

/**
 * Checks a parsed JSON body. Throws `ChatRequestError` (400) naming the field, as the real endpoint
 * does, for a wrong shape and for tool calls and tool messages that do not pair up.
 */
export function parseChatRequest(body: unknown): ChatRequest {
  const parsed = requestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const param = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : null;
    throw new ChatRequestError(
      400,
      `Invalid request${param ? ` at '${param}'` : ''}: ${issue?.message ?? 'unexpected body'}.`,
      param,
      'invalid_value',
    );
  }
  checkToolCallPairs(parsed.data.messages);
  return parsed.data;
}

function checkToolCallPairs(messages: readonly ChatRequestMessage[]): void {
  let unanswered = new Set<string>();
  messages.forEach((entry, index) => {
    if (entry.role === 'tool') {
      if (!unanswered.delete(entry.tool_call_id)) {
        throw new ChatRequestError(
          400,
          `Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'; ` +
            `messages.[${index}].tool_call_id '${entry.tool_call_id}' answers none.`,
          `messages.[${index}].tool_call_id`,
        );
      }
      return;
    }
    if (unanswered.size > 0) {
      throw new ChatRequestError(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
          `The following tool_call_ids did not have response messages: ${[...unanswered].join(', ')}`,
        `messages.[${index}].role`,
      );
    }
    if (entry.role === 'assistant') unanswered = new Set((entry.tool_calls ?? []).map((call) => call.id));
  });
  // Unanswered calls at the very end: the model would be asked to go on before its calls ran.
  if (unanswered.size > 0) {
    throw new ChatRequestError(
      400,
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
        `The following tool_call_ids did not have response messages: ${[...unanswered].join(', ')}`,
      'messages',
    );
  }
}
