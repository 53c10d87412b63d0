// The JSON Schemas the model sees, generated from the one zod schema that validates: plain (Anthropic,
// MCP, the AI SDK, OpenAI non-strict) and OpenAI strict. Pure: no I/O, no Temporal.
import { z } from 'zod';
import type { AnyToolContract } from '../tools/define-tool';
import { modelInputSchema, ToolDefinitionError } from '../tools/define-tool';

/** A JSON Schema object, as providers take it. */
export type JsonSchema = Record<string, unknown>;

const plainCache = new WeakMap<AnyToolContract, JsonSchema>();

/**
 * The tool's input schema as JSON Schema (draft 2020-12, without `$schema`): what a model must send,
 * so optional and defaulted fields are optional, and bound parameters (filled by the host) absent. Refinements (`.refine`) run in toolgate's validation
 * but no JSON Schema can say them: write them in the field's description.
 */
export function inputJsonSchema(contract: AnyToolContract): JsonSchema {
  let schema = plainCache.get(contract);
  if (!schema) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(modelInputSchema(contract), {
      io: 'input',
    }) as JsonSchema;
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

/**
 * Where a strict schema turned "optional" into "required or null": the fields whose `null` means
 * absent, and the same for nested objects and array items. Built with the schema, from the schema.
 */
interface NullPlan {
  absentWhenNull: ReadonlySet<string>;
  properties: ReadonlyMap<string, NullPlan>;
  items?: NullPlan;
}

const strictCache = new WeakMap<AnyToolContract, { schema: JsonSchema; plan: NullPlan | undefined }>();

function strictOf(contract: AnyToolContract): { schema: JsonSchema; plan: NullPlan | undefined } {
  let strict = strictCache.get(contract);
  if (!strict) {
    strict = strictNode({ node: inputJsonSchema(contract), path: '', tool: contract.name });
    strictCache.set(contract, strict);
  }
  return strict;
}

/**
 * The tool's input schema for OpenAI's strict mode (`strict: true`): every object closed and every
 * property listed as required, an optional property made a union with `null` (toolgate reads that
 * `null` as absent: {@link absentOptionalNulls}). A schema strict mode cannot express throws a
 * `ToolDefinitionError` naming the tool, the field and the keyword.
 */
export function openAIStrictJsonSchema(contract: AnyToolContract): JsonSchema {
  return structuredClone(strictOf(contract).schema);
}

function strictNode(input: { node: JsonSchema; path: string; tool: string }): {
  schema: JsonSchema;
  plan: NullPlan | undefined;
} {
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
  // A recursive schema could hide an optional field whose null nobody reads back as absent.
  if (node.$ref !== undefined || node.$defs !== undefined || node.definitions !== undefined) {
    fail('is recursive (a $ref)');
  }
  const { default: _default, ...out } = node;
  let plan: NullPlan | undefined;
  if (out.properties !== undefined || out.type === 'object') {
    if (out.additionalProperties !== false)
      fail('is an open object or a record (strict objects list their fields)');
    const properties = (out.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((out.required ?? []) as string[]);
    const strictProperties: Record<string, JsonSchema> = {};
    const absentWhenNull = new Set<string>();
    const childPlans = new Map<string, NullPlan>();
    for (const [key, property] of Object.entries(properties)) {
      const child = strictNode({ node: property, path: path ? `${path}.${key}` : key, tool });
      if (child.plan) childPlans.set(key, child.plan);
      if (required.has(key)) {
        strictProperties[key] = child.schema;
      } else {
        strictProperties[key] = orNull(child.schema);
        // Only where the field did not take null already: there null is a value, not "absent".
        if (!acceptsNull(property)) absentWhenNull.add(key);
      }
    }
    out.properties = strictProperties;
    out.required = Object.keys(properties);
    plan = { absentWhenNull, properties: childPlans };
  }
  if (out.items !== undefined) {
    if (Array.isArray(out.items) || typeof out.items !== 'object') fail('is a tuple');
    const items = strictNode({ node: out.items as JsonSchema, path: `${path}[]`, tool });
    out.items = items.schema;
    if (items.plan) plan = { absentWhenNull: new Set(), properties: new Map(), ...plan, items: items.plan };
  }
  if (Array.isArray(out.anyOf)) {
    if (!path) fail('is a union at the top level');
    out.anyOf = (out.anyOf as JsonSchema[]).map((branch) => {
      const strictBranch = strictNode({ node: branch, path, tool });
      // Which branch a value took is not known when nulls are read back: no optional fields in unions.
      if (strictBranch.plan && hasAbsentNulls(strictBranch.plan)) {
        fail('is a union with an optional field inside (make the field required, or nullable)');
      }
      return strictBranch.schema;
    });
  }
  return { schema: out, plan };
}

function hasAbsentNulls(plan: NullPlan): boolean {
  return (
    plan.absentWhenNull.size > 0 ||
    [...plan.properties.values()].some(hasAbsentNulls) ||
    (plan.items !== undefined && hasAbsentNulls(plan.items))
  );
}

/** True when a (plain) schema accepts `null` itself: then a null there is a value. */
function acceptsNull(schema: JsonSchema): boolean {
  const { type, anyOf, enum: values, const: constant } = schema;
  if (type === 'null' || (Array.isArray(type) && type.includes('null'))) return true;
  if (Array.isArray(values) && values.includes(null)) return true;
  if (constant === null) return true;
  return Array.isArray(anyOf) && anyOf.some((branch) => acceptsNull(branch as JsonSchema));
}

/** The same schema that also accepts `null`, the way strict mode says "optional". */
function orNull(schema: JsonSchema): JsonSchema {
  if (acceptsNull(schema)) return schema;
  const { type } = schema;
  const hasType = typeof type === 'string' || Array.isArray(type);
  if (hasType && schema.anyOf === undefined && schema.const === undefined) {
    const types: unknown[] = Array.isArray(type) ? type : [type];
    const widened: JsonSchema = { ...schema, type: [...types, 'null'] };
    const values: unknown = schema.enum;
    if (Array.isArray(values)) widened.enum = [...(values as unknown[]), null];
    return widened;
  }
  const { description, ...rest } = schema;
  return {
    anyOf: [rest, { type: 'null' }],
    ...(description !== undefined ? { description } : {}),
  };
}

/**
 * Reads a `null` as "absent" in exactly the fields the strict schema made "required or null" out of
 * an optional field that did not take `null` itself: what a model in OpenAI's strict mode sends for a
 * field it leaves out. Decided from the schema the model was shown, never by running the tool's zod
 * schema on model data; a `null` anywhere else is left alone (a required field sent as `null` stays
 * `INVALID_ARGUMENTS`). Returns `{ value, changed }`; a value that is not an object is returned as it
 * is. Throws a `ToolDefinitionError` for a tool strict mode cannot express (it has no strict schema).
 */
export function absentOptionalNulls(input: { contract: AnyToolContract; value: unknown }): {
  value: unknown;
  changed: boolean;
} {
  const { plan } = strictOf(input.contract);
  let changed = false;
  const strip = (value: unknown, node: NullPlan | undefined): unknown => {
    if (!node || typeof value !== 'object' || value === null) return value;
    if (Array.isArray(value)) return node.items ? value.map((item) => strip(item, node.items)) : value;
    const kept: [string, unknown][] = [];
    for (const [key, fieldValue] of Object.entries(value as Record<string, unknown>)) {
      if (fieldValue === null && node.absentWhenNull.has(key)) {
        changed = true;
        continue;
      }
      kept.push([key, strip(fieldValue, node.properties.get(key))]);
    }
    // fromEntries defines own properties, so a "__proto__" key stays data and reaches validation.
    return Object.fromEntries(kept);
  };
  const value = strip(input.value, plan);
  return { value: changed ? value : input.value, changed };
}
