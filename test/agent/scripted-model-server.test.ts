import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { ToolResult } from 'toolgate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatStreamAccumulator } from '../../examples/agent/chat-stream-accumulator';
import type { ScriptedModelServer } from '../../examples/agent/scripted-model/scripted-model-server';
import { startScriptedModelServer } from '../../examples/agent/scripted-model/scripted-model-server';
import { caught } from '../support/caught';

// The scripted model alone, over loopback with the official client: no Temporal, no toolgate.

let server: ScriptedModelServer;
let openai: OpenAI;

beforeAll(async () => {
  server = await startScriptedModelServer();
  openai = new OpenAI({ baseURL: server.baseURL, apiKey: 'scripted', maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
});

const tool = (name: string): ChatCompletionTool => ({
  type: 'function',
  function: { name, description: name, parameters: { type: 'object', properties: {} }, strict: false },
});
const ordersTools = [tool('get_order'), tool('refund_order')];

const user = (content: string): ChatCompletionMessageParam => ({ role: 'user', content });

/** The conversation after the model asked for `call` and toolgate answered `result`. */
function answered(call: { name: string; arguments: object }, result: Partial<ToolResult>) {
  const id = 'call_test';
  return [
    {
      role: 'assistant' as const,
      content: null,
      tool_calls: [
        {
          id,
          type: 'function' as const,
          function: { name: call.name, arguments: JSON.stringify(call.arguments) },
        },
      ],
    },
    {
      role: 'tool' as const,
      tool_call_id: id,
      content: JSON.stringify({
        ok: false,
        tool: call.name,
        effect: 'none',
        callId: 'tc-test',
        message: '',
        ...result,
      }),
    },
  ];
}

async function streamed(
  request: { model: string; messages: ChatCompletionMessageParam[]; tools?: ChatCompletionTool[] },
  streamOptions?: { include_usage: boolean },
): Promise<{ message: ChatCompletionMessage; chunks: ChatCompletionChunk[] }> {
  const stream = await openai.chat.completions.create({
    ...request,
    stream: true,
    ...(streamOptions ? { stream_options: streamOptions } : {}),
  });
  const accumulator = new ChatStreamAccumulator();
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    accumulator.add(chunk);
  }
  expect(accumulator.finishReason()).not.toBeNull();
  return { message: accumulator.message(), chunks };
}

const withoutIds = (message: ChatCompletionMessage) =>
  (message.tool_calls ?? []).map((call) => (call.type === 'function' ? call.function : call));

describe('the scripted model server', () => {
  it('lists its scripts as models', async () => {
    const models = [];
    for await (const model of openai.models.list()) models.push(model.id);
    expect(models).toEqual(['refund-story', 'self-correct', 'parallel-reads', 'injection', 'burst']);
    expect((await openai.models.retrieve('injection')).id).toBe('injection');
  });

  it('streams tool-call deltas that reassemble to the tool calls it answers without streaming', async () => {
    const request = {
      model: 'parallel-reads',
      messages: [user('Compare ORD-1001 and ORD-1002, please.')],
      tools: ordersTools,
    };
    const whole = await openai.chat.completions.create(request);
    const { message, chunks } = await streamed(request, { include_usage: true });
    const sdkStream = await openai.chat.completions.stream(request).finalChatCompletion();

    const expected = [
      { name: 'get_order', arguments: '{"order_id":"ORD-1001"}' },
      { name: 'get_order', arguments: '{"order_id":"ORD-1002"}' },
    ];
    expect(whole.choices[0]?.finish_reason).toBe('tool_calls');
    expect(withoutIds(whole.choices[0]!.message)).toEqual(expected);
    expect(withoutIds(message)).toEqual(expected);
    expect(withoutIds(sdkStream.choices[0]!.message)).toEqual(expected);
    expect(message.content).toBeNull();
    const ids = message.tool_calls?.map((call) => call.id) ?? [];
    expect(new Set(ids).size).toBe(2);
    for (const id of ids) expect(id).toMatch(/^call_/);

    // Really in pieces: each call's arguments came in more than one delta, the ids once each.
    const deltas = chunks.flatMap((chunk) =>
      chunk.choices.flatMap((choice) => choice.delta.tool_calls ?? []),
    );
    for (const index of [0, 1]) {
      const ofCall = deltas.filter((delta) => delta.index === index);
      expect(ofCall.filter((delta) => delta.id !== undefined)).toHaveLength(1);
      expect(ofCall.filter((delta) => delta.function?.arguments).length).toBeGreaterThan(1);
    }
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { total_tokens: expect.any(Number) as unknown },
    });
  });

  it('streams a text answer that reassembles to the text it answers without streaming', async () => {
    const request = {
      model: 'self-correct',
      messages: [
        user('Please refund R$ 25,90 on order ORD-1001, it arrived damaged.'),
        ...answered(
          { name: 'refund_order', arguments: { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL' } },
          { code: 'APPROVAL_PENDING', data: { expiresAt: '2030-01-01T00:00:00.000Z' } },
        ),
      ],
      tools: ordersTools,
    };
    // Turn 2 of self-correct expects INVALID_ARGUMENTS; any text answer will do here.
    const whole = await openai.chat.completions.create(request);
    const { message, chunks } = await streamed(request);
    expect(whole.choices[0]?.finish_reason).toBe('stop');
    expect(message.content).toBe(whole.choices[0]?.message.content);
    expect(chunks.filter((chunk) => chunk.choices[0]?.delta.content).length).toBeGreaterThan(1);
  });

  it('says SCRIPT DIVERGED, naming what it expected, when a result is not the one its turn expects', async () => {
    const completion = await openai.chat.completions.create({
      model: 'self-correct',
      messages: [
        user('Please refund R$ 25,90 on order ORD-1001, it arrived damaged.'),
        ...answered(
          { name: 'refund_order', arguments: { order_id: 'ORD-1001', amount_cents: 25.9 } },
          { code: 'APPROVAL_PENDING' },
        ),
      ],
      tools: ordersTools,
    });
    const text = completion.choices[0]?.message.content ?? '';
    expect(text).toMatch(/^SCRIPT DIVERGED: script self-correct, turn 2/);
    expect(text).toContain('refund_order -> INVALID_ARGUMENTS');
    expect(text).toContain('refund_order -> APPROVAL_PENDING');
    expect(server.requests.at(-1)).toMatchObject({ model: 'self-correct', turn: 1, diverged: true });
  });

  it('says SCRIPT DIVERGED when its turn needs a tool the request did not offer', async () => {
    const completion = await openai.chat.completions.create({
      model: 'refund-story',
      messages: [
        user('I want a refund of R$ 25,90 on order ORD-1001, it arrived damaged'),
        ...answered(
          { name: 'get_order', arguments: { order_id: 'ORD-1001' } },
          {
            ok: true,
            code: 'OK',
            data: { order_id: 'ORD-1001', currency: 'BRL', total_cents: 12000, refundable_cents: 12000 },
          },
        ),
      ],
      tools: [tool('get_order')],
    });
    expect(completion.choices[0]?.message.content).toMatch(
      /^SCRIPT DIVERGED: .*expected the tool refund_order among the tools sent; got tools \[get_order\]/,
    );
  });

  it('answers the same conversation the same way, whoever sends it', async () => {
    const request = { model: 'injection', messages: [user('What about ORD-1003?')], tools: ordersTools };
    const [first, second] = await Promise.all([
      openai.chat.completions.create(request),
      openai.chat.completions.create(request),
    ]);
    expect(withoutIds(first.choices[0]!.message)).toEqual([
      { name: 'get_order', arguments: '{"order_id":"ORD-1003"}' },
    ]);
    expect(withoutIds(second.choices[0]!.message)).toEqual(withoutIds(first.choices[0]!.message));
  });

  it('refuses a malformed request with an OpenAI-style 400 naming the field', async () => {
    const noMessages = await caught(() =>
      openai.chat.completions.create({ model: 'injection', messages: [] }),
    );
    expect(noMessages).toBeInstanceOf(OpenAI.BadRequestError);
    expect(noMessages).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'messages' });

    const unanswered = await caught(() =>
      openai.chat.completions.create({
        model: 'injection',
        messages: [user('hi'), answered({ name: 'get_order', arguments: {} }, {})[0]!, user('and?')],
      }),
    );
    expect(unanswered).toMatchObject({ status: 400, param: 'messages.[2].role' });
    expect((unanswered as Error).message).toContain('call_test');

    const response = await fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "injection", "messages": [',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: {
        message: expect.stringContaining('could not parse the JSON body') as unknown,
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    });
  });

  it('answers 404 model_not_found for a model it has no script for', async () => {
    const error = await caught(() =>
      openai.chat.completions.create({ model: 'gpt-imaginary', messages: [user('hi')] }),
    );
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({ status: 404, code: 'model_not_found' });
    expect((error as Error).message).toContain('refund-story');
  });
});
