// The JSON Schemas the model sees, generated from the one zod schema that validates: plain (Anthropic,
// MCP, the AI SDK, OpenAI non-strict) and OpenAI strict. Pure: no I/O, no Temporal.
import { z } from 'zod';
import type { AnyToolContract } from '../tools/define-tool';
import { ToolDefinitionError } from '../tools/define-tool';

/** A JSON Schema object, as providers take it. */
export type JsonSchema = Record<string, unknown>;

const plainCache = new WeakMap<AnyToolContract, JsonSchema>();

/**
 * The tool's input schema as JSON Schema (draft 2020-12, without `$schema`): what a model must send,
 * so optional and defaulted fields are optional. Refinements (`.refine`) run in toolgate's validation
 * but no JSON Schema can say them: write them in the field's description.
 */
export function inputJsonSchema(contract: AnyToolContract): JsonSchema {
  let schema = plainCache.get(contract);
  if (!schema) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(contract.input, { io: 'input' }) as JsonSchema;
    schema = rest;
    plainCache.set(contract, schema);
  }
  return structuredClone(schema);
}

/** What OpenAI's strict mode accepts, per keyword (its "supported schemas" list). */
const strictKeywords = new Set([
  'type',
  'description',
  'title',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  '$ref',
  '$defs',
  'definitions',
  'pattern',
  'format',
  'multipleOf',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
]);
const strictFormats = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
]);

const strictCache = new WeakMap<AnyToolContract, JsonSchema>();

/**
 * The tool's input schema for OpenAI's strict mode (`strict: true`): every object closed and every
 * property listed as required, an optional property made a union with `null` (toolgate reads that
 * `null` as absent: {@link absentOptionalNulls}). A schema strict mode cannot express throws a
 * `ToolDefinitionError` naming the tool, the field and the keyword.
 */
export function openAIStrictJsonSchema(contract: AnyToolContract): JsonSchema {
  let schema = strictCache.get(contract);
  if (!schema) {
    schema = strictNode({ node: inputJsonSchema(contract), path: '', tool: contract.name });
    strictCache.set(contract, schema);
  }
  return structuredClone(schema);
}

function strictNode(input: { node: JsonSchema; path: string; tool: string }): JsonSchema {
  const { node, path, tool } = input;
  const fail = (problem: string): never => {
    throw new ToolDefinitionError(
      `tool "${tool}": ${path ? `input field "${path}"` : 'the input'} ${problem}; OpenAI's strict mode cannot express it ` +
        `(change the schema, or build the definitions with strict: 'where-possible' to send this tool non-strict)`,
    );
  };
  for (const keyword of Object.keys(node)) {
    if (keyword === 'default') continue; // dropped below: strict mode has no defaults, toolgate applies them
    if (!strictKeywords.has(keyword)) fail(`uses "${keyword}"`);
  }
  if (typeof node.format === 'string' && !strictFormats.has(node.format))
    fail(`uses format "${node.format}"`);
  const { default: _default, ...out } = node;
  if (out.properties !== undefined || out.type === 'object') {
    if (out.additionalProperties !== false)
      fail('is an open object or a record (strict objects list their fields)');
    const properties = (out.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((out.required ?? []) as string[]);
    const strictProperties: Record<string, JsonSchema> = {};
    for (const [key, property] of Object.entries(properties)) {
      const child = strictNode({ node: property, path: path ? `${path}.${key}` : key, tool });
      strictProperties[key] = required.has(key) ? child : orNull(child);
    }
    out.properties = strictProperties;
    out.required = Object.keys(properties);
  }
  if (out.items !== undefined) {
    if (Array.isArray(out.items) || typeof out.items !== 'object') fail('is a tuple');
    out.items = strictNode({ node: out.items as JsonSchema, path: `${path}[]`, tool });
  }
  if (Array.isArray(out.anyOf)) {
    if (!path) fail('is a union at the top level');
    out.anyOf = (out.anyOf as JsonSchema[]).map((branch) => strictNode({ node: branch, path, tool }));
  }
  if (out.$defs !== undefined) {
    out.$defs = Object.fromEntries(
      Object.entries(out.$defs as Record<string, JsonSchema>).map(([name, definition]) => [
        name,
        strictNode({ node: definition, path: `$defs.${name}`, tool }),
      ]),
    );
  }
  return out;
}

/** The same schema that also accepts `null`, the way strict mode says "optional". */
function orNull(schema: JsonSchema): JsonSchema {
  const { type } = schema;
  const hasType = typeof type === 'string' || Array.isArray(type);
  if (hasType && schema.anyOf === undefined && schema.$ref === undefined && schema.const === undefined) {
    const types: unknown[] = Array.isArray(type) ? type : [type];
    const widened: JsonSchema = { ...schema, type: types.includes('null') ? types : [...types, 'null'] };
    const values: unknown = schema.enum;
    if (Array.isArray(values) && !values.includes(null)) widened.enum = [...(values as unknown[]), null];
    return widened;
  }
  const { description, ...rest } = schema;
  return {
    anyOf: [rest, { type: 'null' }],
    ...(description !== undefined ? { description } : {}),
  };
}

/**
 * Reads a `null` as "absent" in exactly the fields that were optional in the zod schema and do not
 * accept `null` themselves: what a model in OpenAI's strict mode sends for a field it leaves out. A
 * `null` anywhere else is left alone, so a required field sent as `null` stays `INVALID_ARGUMENTS`.
 * Returns a new value; anything that is not an object is returned as it is.
 */
export function absentOptionalNulls(input: { contract: AnyToolContract; value: unknown }): unknown {
  return withoutOptionalNulls({ schema: input.contract.input, value: input.value });
}

function withoutOptionalNulls(input: { schema: z.ZodType; value: unknown }): unknown {
  const { value } = input;
  const schema = unwrapToObject(input.schema);
  if (schema instanceof z.ZodObject) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const kept: [string, unknown][] = [];
    for (const [key, fieldValue] of Object.entries(value as Record<string, unknown>)) {
      const field = Object.hasOwn(schema.shape, key) ? (schema.shape[key] as z.ZodType) : undefined;
      if (
        fieldValue === null &&
        field &&
        field.safeParse(undefined).success &&
        !field.safeParse(null).success
      ) {
        continue;
      }
      kept.push([key, field ? withoutOptionalNulls({ schema: field, value: fieldValue }) : fieldValue]);
    }
    // fromEntries defines own properties, so a "__proto__" key stays data and reaches validation.
    return Object.fromEntries(kept);
  }
  if (schema instanceof z.ZodArray && Array.isArray(value)) {
    return value.map((item) => withoutOptionalNulls({ schema: schema.element as z.ZodType, value: item }));
  }
  return value;
}

/** Strips the wrappers (optional, nullable, default, a refinement's pipe) down to an object or array schema. */
function unwrapToObject(schema: z.ZodType): z.ZodType {
  let current: z.ZodType = schema;
  for (let depth = 0; depth < 16; depth += 1) {
    const def = current._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
    if ((def.type === 'optional' || def.type === 'nullable' || def.type === 'default') && def.innerType) {
      current = def.innerType;
    } else if (def.type === 'pipe' && def.in) {
      current = def.in;
    } else return current;
  }
  return current;
}
