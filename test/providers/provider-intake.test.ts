// Tool calls in each provider's format reach the governed workflow: parallel calls of one turn
// become calls of one session, broken JSON is INVALID_JSON, strict mode's nulls are read as absent,
// and each result goes back in that format's tool-result shape with its error flag.
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import {
  anthropicTools,
  openAIChatTools,
  runAnthropicToolUses,
  runOpenAIChatToolCalls,
  runOpenAIResponsesFunctionCalls,
} from 'toolgate';
import { aiSdkTools } from 'toolgate/ai-sdk';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;
useHarness((started) => (harness = started));
const { appliedRefunds, decide } = approvalHelpers(() => harness);

const refund = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };
const parsed = (content: string) => JSON.parse(content) as ToolResult;

describe('OpenAI Chat Completions', () => {
  it("runs a turn's parallel tool calls as calls of one session and answers each by its id", async () => {
    const session = harness.newSession();
    const { messages, results } = await runOpenAIChatToolCalls({
      client: harness.client,
      session,
      caller: 'test-refunder',
      toolCalls: [
        {
          id: 'call_a',
          type: 'function',
          function: { name: 'get_order', arguments: '{"order_id":"ORD-1001"}' },
        },
        {
          id: 'call_b',
          type: 'function',
          function: { name: 'get_order', arguments: '{"order_id":"ORD-1002"}' },
        },
        {
          id: 'call_c',
          type: 'function',
          function: { name: 'get_order', arguments: '{"order_id": "ORD-1003"' },
        },
      ],
    });
    expect(messages.map((message) => message.tool_call_id)).toEqual(['call_a', 'call_b', 'call_c']);
    expect(messages.every((message) => message.role === 'tool')).toBe(true);
    expect(parsed(messages[0]!.content)).toMatchObject({
      ok: true,
      code: 'OK',
      data: { order_id: 'ORD-1001' },
    });
    expect(parsed(messages[1]!.content)).toMatchObject({
      ok: true,
      code: 'OK',
      data: { order_id: 'ORD-1002' },
    });
    expect(parsed(messages[2]!.content)).toMatchObject({ ok: false, code: 'INVALID_JSON', effect: 'none' });
    expect(results.map((result) => result.code)).toEqual(['OK', 'OK', 'INVALID_JSON']);
    // All three were admitted by the one session (the broken one too: it is audited like any other).
    expect((await harness.client.sessionStats(session)).steps).toBe(3);
  });

  it("reads strict mode's null as absent in an optional field only; a null in a required field is INVALID_ARGUMENTS", async () => {
    const echo = openAIChatTools({ client: harness.client, caller: 'test-refunder' }).find(
      (tool) => tool.function.name === 'echo_shape',
    )!;
    expect(echo.function.strict).toBe(true);
    expect(echo.function.parameters).toMatchObject({ required: ['broken', 'label'] });
    const { results } = await runOpenAIChatToolCalls({
      client: harness.client,
      session: harness.newSession(),
      caller: 'test-refunder',
      toolCalls: [
        { id: 'absent', function: { name: 'echo_shape', arguments: '{"broken":false,"label":null}' } },
        { id: 'given', function: { name: 'echo_shape', arguments: '{"broken":false,"label":"x"}' } },
        { id: 'required', function: { name: 'echo_shape', arguments: '{"broken":null,"label":null}' } },
      ],
    });
    expect(results[0]).toMatchObject({ ok: true, data: { value: 7 } });
    expect(results[0]!.data).not.toHaveProperty('label');
    expect(results[1]).toMatchObject({ ok: true, data: { value: 7, label: 'x' } });
    expect(results[2]).toMatchObject({ ok: false, code: 'INVALID_ARGUMENTS' });
    expect(results[2]!.message).toContain('broken');
  });

  it('sends only the tools the caller may call, and a call to another one is TOOL_NOT_ALLOWED', async () => {
    const names = openAIChatTools({ client: harness.client, caller: 'readonly-bot' }).map(
      (tool) => tool.function.name,
    );
    expect(names).toEqual(['get_order']);
    const { results } = await runOpenAIChatToolCalls({
      client: harness.client,
      session: harness.newSession(),
      caller: 'readonly-bot',
      toolCalls: [{ id: 'x', function: { name: 'refund_order', arguments: JSON.stringify(refund) } }],
    });
    expect(results[0]).toMatchObject({ ok: false, code: 'TOOL_NOT_ALLOWED', effect: 'none' });
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('OpenAI Responses', () => {
  it('answers each function_call item with a function_call_output of the same call_id', async () => {
    const { items, results } = await runOpenAIResponsesFunctionCalls({
      client: harness.client,
      session: harness.newSession(),
      caller: 'support-bot',
      output: [
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { type: 'function_call', call_id: 'fc_1', name: 'get_order', arguments: '{"order_id":"ORD-9999"}' },
        { type: 'function_call', call_id: 'fc_2', name: 'refund_order', arguments: JSON.stringify(refund) },
      ],
    });
    expect(items.map((item) => [item.type, item.call_id])).toEqual([
      ['function_call_output', 'fc_1'],
      ['function_call_output', 'fc_2'],
    ]);
    expect(results.map((result) => result.code)).toEqual(['ORDER_NOT_FOUND', 'APPROVAL_PENDING']);
    expect(parsed(items[1]!.output)).toMatchObject({
      code: 'APPROVAL_PENDING',
      data: { preview: expect.anything() as unknown },
    });
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('tool calls whose name or id is not a string', () => {
  /** The audit records of a session, oldest first: every proposal leaves one. */
  const recorded = (session: string) => harness.audit.recordsOfSession(session);

  it('answers and audits every Responses function_call item, whatever its call_id, name or arguments', async () => {
    const session = harness.newSession();
    const { items, results } = await runOpenAIResponsesFunctionCalls({
      client: harness.client,
      session,
      caller: 'support-bot',
      output: [
        { type: 'function_call', call_id: 7, name: 'get_order', arguments: '{"order_id":"ORD-1001"}' },
        { type: 'function_call', call_id: 'fc_2', name: ['get_order'], arguments: '{}' },
        { type: 'function_call', call_id: 'fc_3', name: 'get_order', arguments: { order_id: 'ORD-1002' } },
      ],
    });
    expect(items.map((item) => item.call_id)).toEqual(['', 'fc_2', 'fc_3']);
    expect(results.map((result) => result.code)).toEqual(['OK', 'UNKNOWN_TOOL', 'OK']);
    await expect.poll(async () => (await recorded(session)).length).toBe(3);
  });

  it('answers and audits every Anthropic tool_use block, whatever its id or name', async () => {
    const session = harness.newSession();
    const { message, results } = await runAnthropicToolUses({
      client: harness.client,
      session,
      caller: 'support-bot',
      content: [
        { type: 'tool_use', id: null, name: 'get_order', input: { order_id: 'ORD-1001' } },
        { type: 'tool_use', id: 'toolu_2', name: 42, input: {} },
      ],
    });
    expect(message.content.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ['', false],
      ['toolu_2', true],
    ]);
    expect(results.map((result) => result.code)).toEqual(['OK', 'UNKNOWN_TOOL']);
    await expect.poll(async () => (await recorded(session)).length).toBe(2);
  });
});

describe('Anthropic Messages', () => {
  it('answers tool_use blocks with tool_result blocks, is_error set except for OK and APPROVAL_PENDING', async () => {
    const tools = anthropicTools({ client: harness.client, caller: 'support-bot' });
    expect(tools.map((tool) => tool.name)).toEqual(['get_order', 'refund_order']);
    expect(tools[1]!.input_schema).toMatchObject({ type: 'object', additionalProperties: false });
    const { message, results } = await runAnthropicToolUses({
      client: harness.client,
      session: harness.newSession(),
      caller: 'support-bot',
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_order', input: { order_id: 'ORD-1001' } },
        { type: 'tool_use', id: 'toolu_2', name: 'refund_order', input: { ...refund, amount_cents: 25.9 } },
        { type: 'tool_use', id: 'toolu_3', name: 'refund_order', input: refund },
      ],
    });
    expect(message.role).toBe('user');
    expect(message.content.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ['toolu_1', false],
      ['toolu_2', true],
      ['toolu_3', false],
    ]);
    expect(results.map((result) => result.code)).toEqual(['OK', 'INVALID_ARGUMENTS', 'APPROVAL_PENDING']);
    expect(parsed(message.content[1]!.content).message).toContain('cents');
    // Approved, the pending refund is applied once.
    await decide(results[2]!.callId, 'alice');
    expect(await harness.client.result(results[2]!.callId)).toMatchObject({ ok: true, effect: 'applied' });
    expect(await appliedRefunds()).toBe(1);
  });
});

describe('Vercel AI SDK', () => {
  it("runs the model's tool calls through toolgate inside generateText, errors marked as error-json", async () => {
    const session = harness.newSession();
    const tools = aiSdkTools({ client: harness.client, session, caller: 'support-bot' });
    expect(Object.keys(tools)).toEqual(['get_order', 'refund_order']);
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 1, text: 1, reasoning: 0 },
    };
    // A scripted stand-in for the LLM behind the AI SDK's own model interface: one turn of two tool
    // calls, then a text answer that repeats what the tool results said.
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        const toolMessages = options.prompt.filter((message) => message.role === 'tool');
        if (toolMessages.length === 0) {
          return {
            content: [
              {
                type: 'tool-call',
                toolCallId: 't1',
                toolName: 'get_order',
                input: '{"order_id":"ORD-1002"}',
              },
              {
                type: 'tool-call',
                toolCallId: 't2',
                toolName: 'refund_order',
                input: JSON.stringify({ ...refund, amount_cents: 25.9 }),
              },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
          };
        }
        const outputs = toolMessages.flatMap((message) =>
          message.content.flatMap((part) => (part.type === 'tool-result' ? [part.output] : [])),
        );
        return {
          content: [{ type: 'text', text: JSON.stringify(outputs) }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      },
    });
    const answer = await generateText({
      model,
      tools,
      prompt: 'refund 25.9 on ORD-1002',
      stopWhen: stepCountIs(3),
    });
    const outputs = JSON.parse(answer.text) as { type: string; value: ToolResult }[];
    expect(outputs.map((output) => [output.type, output.value.code])).toEqual([
      ['json', 'OK'],
      ['error-json', 'INVALID_ARGUMENTS'],
    ]);
    expect((await harness.client.sessionStats(session)).steps).toBe(2);
    expect(await appliedRefunds()).toBe(0);
  });
});
