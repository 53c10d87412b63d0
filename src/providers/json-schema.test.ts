import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineToolContract, ToolDefinitionError } from '../tools/define-tool';
import { absentOptionalNulls, inputJsonSchema, openAIStrictJsonSchema } from './json-schema';
import { runOpenAIChatToolCalls } from './openai';
import { objectArguments, openAIArguments, sentStrict } from './provider-calls';
import type { ToolResult } from '../shared/tool-result';
import type { ToolGateClient } from '../client';

const tagged = defineToolContract({
  name: 'tag_order',
  description: 'Test tool: tags an order with labels.',
  input: z.strictObject({
    order_id: z.string().describe('the order'),
    labels: z.record(z.string(), z.string()).describe('labels by key'),
  }),
  output: z.strictObject({}),
  effect: 'read',
});

const named = defineToolContract({
  name: 'name_order',
  description: 'Test tool: names an order.',
  input: z.strictObject({
    order_id: z.string().describe('the order'),
    nickname: z.string().min(3).optional().describe('a nickname'),
  }),
  output: z.strictObject({}),
  effect: 'read',
});

const nullable = defineToolContract({
  name: 'note_order',
  description: 'Test tool: notes an order.',
  input: z.strictObject({
    note: z.string().nullable().optional().describe('a note, or null to clear it'),
    when: z.string().default('now').describe('when'),
  }),
  output: z.strictObject({}),
  effect: 'read',
});

describe('OpenAI strict schemas', () => {
  it('refuses at start-up a schema strict mode cannot express, naming the tool, the field and the keyword', () => {
    expect(() => openAIStrictJsonSchema(tagged)).toThrow(ToolDefinitionError);
    expect(() => openAIStrictJsonSchema(tagged)).toThrow(
      /tool "tag_order": input field "labels" uses "propertyNames"/,
    );
    expect(() => openAIStrictJsonSchema(named)).toThrow(
      /tool "name_order": input field "nickname" uses "minLength"/,
    );
  });

  it("'where-possible' sends such a tool non-strict, and then leaves its nulls alone", () => {
    expect(sentStrict({ contract: named, mode: 'where-possible' })).toBe(false);
    expect(() => sentStrict({ contract: named, mode: true })).toThrow(ToolDefinitionError);
    const client = { tool: () => named } as unknown as ToolGateClient;
    const text = '{"order_id":"A","nickname":null}';
    expect(openAIArguments({ client, name: 'name_order', arguments: text, strict: 'where-possible' })).toBe(
      text,
    );
  });

  it('keeps a null where zod accepts null, drops it where the field is only optional, and drops defaults', () => {
    const schema = openAIStrictJsonSchema(nullable) as {
      required: string[];
      properties: Record<string, object>;
    };
    expect(schema.required).toEqual(['note', 'when']);
    expect(schema.properties.when).toEqual({ description: 'when', type: ['string', 'null'] });
    expect(absentOptionalNulls({ contract: nullable, value: { note: null, when: null } })).toEqual({
      value: { note: null },
      changed: true,
    });
    // The plain schema keeps the default and leaves both fields optional.
    expect(inputJsonSchema(nullable)).not.toHaveProperty('required');
  });

  it('passes broken JSON and non-objects on as the raw text, so toolgate answers INVALID_JSON', () => {
    const client = { tool: () => nullable } as unknown as ToolGateClient;
    for (const text of ['{"note": "x"', '[1,2]', 'null', '"text"']) {
      expect(openAIArguments({ client, name: 'note_order', arguments: text, strict: true })).toBe(text);
    }
  });
});

const readTool = (name: string, input: z.ZodObject) =>
  defineToolContract({
    name,
    description: 'Test tool: reads something.',
    input: input as never,
    output: z.strictObject({}),
    effect: 'read',
  });

/** A client that records what would be proposed and answers OK, for the intake's own logic. */
function recordingClient(contracts: ReturnType<typeof readTool>[]) {
  const proposed: { tool: string; arguments: unknown }[] = [];
  const client = {
    tool: (name: string) => contracts.find((contract) => contract.name === name),
    toolsFor: () => contracts,
    call: async (input: { tool: string; arguments: unknown }): Promise<ToolResult> => {
      proposed.push({ tool: input.tool, arguments: input.arguments });
      return { ok: true, tool: input.tool, code: 'OK', message: 'ok', effect: 'none', callId: 'tc-x' };
    },
  } as unknown as ToolGateClient;
  return { client, proposed };
}

describe('reading strict nulls back from the schema the model was shown', () => {
  it('never reads a null as absent in a required field, whatever zod would do with undefined', () => {
    const tool = readTool(
      'tag_order',
      z.strictObject({
        tag: z.preprocess((value) => (value === undefined ? 'none' : value), z.string()).describe('the tag'),
      }),
    );
    expect(absentOptionalNulls({ contract: tool, value: { tag: null } })).toEqual({
      value: { tag: null },
      changed: false,
    });
  });

  it('refuses a union with an optional field inside, and a recursive schema, in strict mode', () => {
    const union = readTool(
      'route_order',
      z.strictObject({
        target: z
          .union([
            z.strictObject({ kind: z.literal('store'), note: z.string().optional().describe('a note') }),
            z.strictObject({ kind: z.literal('home') }),
          ])
          .describe('where'),
      }),
    );
    expect(() => openAIStrictJsonSchema(union)).toThrow(
      /input field "target" is a union with an optional field/,
    );
    type Node = { name: string; child?: Node };
    const node: z.ZodType<Node> = z.lazy(() =>
      z.strictObject({ name: z.string().describe('n'), child: node.optional().describe('c') }),
    );
    const tree = readTool('tree_tool', z.strictObject({ root: node.describe('the tree') }));
    expect(() => openAIStrictJsonSchema(tree)).toThrow(/is recursive/);
    expect(sentStrict({ contract: tree, mode: 'where-possible' })).toBe(false);
  });

  it("never runs the tool's own transforms on model data: a throwing one cannot cost the turn its calls", async () => {
    const trimmed = readTool(
      'trim_tool',
      z.strictObject({
        id: z.string().describe('id'),
        label: z
          .string()
          .optional()
          .transform((value) => value!.trim())
          .describe('label'),
      }),
    );
    const other = readTool('other_tool', z.strictObject({ id: z.string().describe('id') }));
    const { client, proposed } = recordingClient([trimmed, other]);
    const { results } = await runOpenAIChatToolCalls({
      client,
      session: 's',
      caller: 'c',
      toolCalls: [
        { id: '1', function: { name: 'other_tool', arguments: '{"id":"x"}' } },
        { id: '2', function: { name: 'trim_tool', arguments: '{"id":"x","label":null}' } },
      ],
    });
    expect(results).toHaveLength(2);
    expect(proposed).toEqual([
      { tool: 'other_tool', arguments: '{"id":"x"}' },
      { tool: 'trim_tool', arguments: { id: 'x' } },
    ]);
  });

  it('answers every tool call of a turn, a custom one or one without a name included, through toolgate', async () => {
    const tool = readTool('get_thing', z.strictObject({ id: z.string().describe('id') }));
    const { client, proposed } = recordingClient([tool]);
    const { messages } = await runOpenAIChatToolCalls({
      client,
      session: 's',
      caller: 'c',
      toolCalls: [
        { id: 'ok', function: { name: 'get_thing', arguments: '{"id":"1"}' } },
        { id: 'bad', function: { name: null as unknown as string, arguments: '{}' } },
        { id: 'custom', type: 'custom', custom: { name: 'get_thing', input: 'id=1' } } as never,
      ],
    });
    expect(messages.map((message) => message.tool_call_id)).toEqual(['ok', 'bad', 'custom']);
    expect(proposed).toEqual([
      { tool: 'get_thing', arguments: '{"id":"1"}' },
      { tool: '', arguments: '{}' },
      { tool: 'get_thing', arguments: 'id=1' },
    ]);
  });

  it("passes an object-taking format's non-object input on as JSON text, so a double-encoded call is INVALID_JSON", () => {
    const encoded = JSON.stringify({ order_id: 'ORD-1001' });
    expect(objectArguments(encoded)).toBe(JSON.stringify(encoded));
    expect(objectArguments(['a'])).toBe('["a"]');
    expect(objectArguments(undefined)).toBe('null');
    expect(objectArguments({ a: 1 })).toEqual({ a: 1 });
  });
});
