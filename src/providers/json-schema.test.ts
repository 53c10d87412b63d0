import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineToolContract, ToolDefinitionError } from '../tools/define-tool';
import { absentOptionalNulls, inputJsonSchema, openAIStrictJsonSchema } from './json-schema';
import { openAIArguments, sentStrict } from './provider-calls';
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
      note: null,
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
