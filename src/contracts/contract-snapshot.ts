// The contract snapshot: what each tool promises the model, normalised so that a committed file can
// be compared with the tools of today (contract-diff.ts). Pure: no I/O, no Temporal; the CLI reads
// and writes the file.
import { z } from 'zod';
import { inputJsonSchema } from '../providers/json-schema';
import type { JsonSchema } from '../providers/json-schema';
import { canonicalJson, digestOf } from '../shared/canonical-json';
import type { AnyToolContract, EffectKind } from '../tools/define-tool';
import { ToolDefinitionError } from '../tools/define-tool';
import type { RiskLevel } from '../tools/risk-levels';
import { riskLevels } from '../tools/risk-levels';
import { markUnrepresentable, zodTypeKeyword } from '../tools/unrepresentable-types';

/** The snapshot format's version; a file of another version is refused, never half read. */
export const contractSnapshotVersion = 1;

/**
 * The path of a schema's root in a field map; every other path is relative to it (`items[].sku`). A
 * field whose name is not a plain name, this one included, is written quoted (`["$"]`, `["a b"]`).
 */
export const rootPath = '$';

/**
 * One field of a normalised schema: what a value there must be. Bounds and keywords are JSON Schema's
 * own; descriptions, titles and examples are left out of everything but `description`.
 */
export interface FieldContract {
  /** The JSON types a value may have (`integer`, or `["string", "null"]`); absent when any value passes. */
  type?: string | string[];
  /** Whether the enclosing object requires the field (always true for the root). */
  required: boolean;
  /** The only values accepted (a `const` is an enum of one), sorted. */
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  uniqueItems?: boolean;
  /** For an object: false when it refuses unknown fields; a schema for the values is the field `path{}`. */
  additionalProperties?: boolean;
  /** What the tool uses when the field is left out. */
  default?: unknown;
  /**
   * The branches of a union, each normalised, sorted (on the input side with their descriptions, which
   * only the discovery contract reads). A union of objects told apart by a property is not a list of
   * branches: it has `discriminator`, and each branch is a field of its own.
   */
  anyOf?: unknown[];
  /** The branches of a union of which exactly one must match, as `anyOf`. */
  oneOf?: unknown[];
  /**
   * For a union of objects told apart by one property: that property. Each branch is the field
   * `path(property="value")`, its fields below it (`target(kind="order").amount`).
   */
  discriminator?: string;
  /**
   * A zod type JSON Schema cannot express (`date`, `bigint`, `transform` for a transform's result...):
   * its name, never `{}` (any value), so a change from or to it shows.
   */
  unrepresentable?: string;
  /** Keywords no rule above reads (`propertyNames`, `allOf`, `$ref`...), compared as a whole. */
  other?: Record<string, unknown>;
  /** What the model reads about the field: part of the discovery contract, not of the invocation one. */
  description?: string;
}

/** A schema as fields by path: the root at `$`, then `order_id`, `address.city`, `items[]`, `items[].sku`. */
export type FieldMap = Record<string, FieldContract>;

/** One example of a tool's arguments and the risk level its risk function gave them. */
export interface ExampleObservation {
  arguments: Record<string, unknown>;
  risk: RiskLevel;
  /**
   * What the tool's amount function gave them (in its smallest unit), counted by the policy's amount
   * limits; absent when the tool declares no amount.
   */
  amount?: number;
}

/** Everything the snapshot records about one tool. */
export interface ToolSnapshot {
  name: string;
  effect: EffectKind;
  description: string;
  /**
   * SHA-256 of canonical JSON: `invocation` of the input fields without descriptions, `discovery` of
   * the tool's and the parameters' descriptions, `output` of the output fields. Key order never counts.
   */
  fingerprints: { invocation: string; discovery: string; output: string };
  /** Each declared domain code with what it means, by code. */
  domainCodes: Record<string, string>;
  /** The fields that make a call's identity, sorted; absent when every argument does. */
  idempotencyFields?: string[];
  /** The parameters the host fills from the context (never in the model's schema), field to source. */
  boundParameters?: Record<string, string>;
  /** The output the taint rule counts as untrusted text: all of it (`true`) or these fields, sorted. */
  untrustedOutput?: true | string[];
  input: FieldMap;
  output: FieldMap;
  /** The risk (and amount) function on the tool's examples, in the order the tool declares them. */
  examples: ExampleObservation[];
}

/** A committed record of the tools' contracts, compared by `toolgate contract check`. */
export interface ContractSnapshot {
  version: typeof contractSnapshotVersion;
  /** When the snapshot was taken (ISO 8601). */
  createdAt: string;
  /** The model of the last full selection-eval run and when it ran; kept when the snapshot is retaken. */
  selection: { model?: string; at?: string };
  /** Sorted by name. */
  tools: ToolSnapshot[];
}

/**
 * Takes a snapshot of the tools' contracts: per tool, the normalised input and output schemas, the
 * fingerprints, the effect, the domain codes, the idempotency fields and the risk level (and the
 * amount, when the tool declares one) of each of its examples. Pure and deterministic but for
 * `createdAt` (passed in, else now). A risk or amount function that throws on an example throws a
 * `ToolDefinitionError` naming the tool and the example.
 */
export function snapshotContracts(input: {
  tools: readonly AnyToolContract[];
  createdAt?: string;
  selection?: { model?: string; at?: string };
}): ContractSnapshot {
  const tools = input.tools.map(snapshotTool).sort((a, b) => compareText(a.name, b.name));
  return {
    version: contractSnapshotVersion,
    createdAt: input.createdAt ?? new Date().toISOString(),
    selection: { ...input.selection },
    tools,
  };
}

function snapshotTool(contract: AnyToolContract): ToolSnapshot {
  let input: FieldMap;
  let output: FieldMap;
  try {
    input = fieldsOf({ schema: inputJsonSchema(contract), describe: true });
    output = fieldsOf({
      schema: z.toJSONSchema(contract.output, { io: 'output', unrepresentable: markUnrepresentable }),
      describe: false,
    });
  } catch (error) {
    if ((error as Error).name === 'ToolDefinitionError') throw error;
    throw new ToolDefinitionError(
      `tool "${contract.name}": its schemas cannot be written as JSON Schema (${(error as Error).message})`,
    );
  }
  const invocation = Object.fromEntries(
    Object.entries(input).map(([path, field]) => [path, withoutDescriptions(field)]),
  );
  // A field's own description, and those inside its union's branches (or other keywords) when it has any.
  const parameterDescriptions = Object.fromEntries(
    Object.entries(input).flatMap(([path, field]): [string, unknown][] => {
      const inside = descriptionsInside(field);
      if (Object.keys(inside).length) return [[path, { description: field.description, inside }]];
      return field.description === undefined ? [] : [[path, field.description]];
    }),
  );
  return {
    name: contract.name,
    effect: contract.effect,
    description: contract.description,
    fingerprints: {
      invocation: digestOf(invocation),
      discovery: digestOf({ description: contract.description, parameters: parameterDescriptions }),
      output: digestOf(output),
    },
    domainCodes: Object.fromEntries(
      Object.keys(contract.domainCodes)
        .sort(compareText)
        .map((code) => [code, contract.domainCodes[code] as string]),
    ),
    ...(contract.idempotencyFields
      ? { idempotencyFields: [...contract.idempotencyFields].sort(compareText) }
      : {}),
    ...(contract.boundParameters && Object.keys(contract.boundParameters).length > 0
      ? {
          boundParameters: Object.fromEntries(
            Object.keys(contract.boundParameters)
              .sort(compareText)
              .map((field) => [field, contract.boundParameters![field] as string]),
          ),
        }
      : {}),
    ...(contract.untrustedOutput === true
      ? { untrustedOutput: true as const }
      : contract.untrustedOutput && contract.untrustedOutput.length > 0
        ? { untrustedOutput: [...contract.untrustedOutput].sort(compareText) }
        : {}),
    input,
    output,
    examples: (contract.examples ?? []).map((example, index) => observe({ contract, example, index })),
  };
}

function observe(input: { contract: AnyToolContract; example: unknown; index: number }): ExampleObservation {
  const { contract, example, index } = input;
  try {
    const args = contract.input.parse(example);
    return {
      arguments: JSON.parse(canonicalJson(example)) as Record<string, unknown>,
      risk: contract.risk({ args }),
      ...(contract.amount ? { amount: contract.amount(args) } : {}),
    };
  } catch (error) {
    throw new ToolDefinitionError(
      `tool "${contract.name}": examples[${index}] could not be classified (${(error as Error).message}); ` +
        `fix the example or the risk${contract.amount ? ' or amount' : ''} function`,
    );
  }
}

/** Keywords read into a field's own entries; everything else but annotations goes to `other`. */
const boundKeywords = [
  'minimum',
  'exclusiveMinimum',
  'maximum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
] as const;
const annotationKeywords = new Set(['$schema', 'description', 'title', 'examples', 'deprecated', '$comment']);
const structureKeywords = new Set([
  'type',
  'properties',
  'required',
  'items',
  'prefixItems',
  'additionalProperties',
  'enum',
  'const',
  'pattern',
  'format',
  'uniqueItems',
  'default',
  'anyOf',
  'oneOf',
  zodTypeKeyword,
  ...boundKeywords,
]);

/** Flattens a JSON Schema into fields by path, the root at `$`. */
function fieldsOf(input: { schema: JsonSchema; describe: boolean }): FieldMap {
  const fields: FieldMap = {};
  const visit = (schema: JsonSchema, path: string, required: boolean): void => {
    const node = withNullFolded(schema);
    const union = discriminatedUnionOf(node);
    if (union) {
      // An object of one of several shapes: each branch is a field of its own, so a change inside one
      // is reported at its path, and a branch added or removed is one change, not a new union.
      const { anyOf: _anyOf, oneOf: _oneOf, ...rest } = node;
      const { additionalProperties: _open, ...field } = fieldOf({
        node: { ...rest, type: 'object' },
        required,
        describe: input.describe,
      });
      fields[path] = { ...field, discriminator: union.property };
      for (const branch of union.branches) visit(branch.schema, joinPath(path, branch.segment), true);
      return;
    }
    fields[path] = fieldOf({ node, required, describe: input.describe });
    const properties = isSchema(node.properties) ? node.properties : {};
    const requiredNames = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
    // Sorted, so the order of the schema's keys never shows: each field, then the fields inside it.
    for (const key of Object.keys(properties).sort(compareText)) {
      const property = properties[key];
      if (!isSchema(property)) continue;
      visit(property, joinPath(path, keySegment(key)), requiredNames.has(key));
    }
    if (Array.isArray(node.prefixItems)) {
      node.prefixItems.forEach((item, index) => {
        if (isSchema(item)) visit(item, joinPath(path, `[${index}]`), true);
      });
    }
    if (isSchema(node.items)) visit(node.items, joinPath(path, '[]'), true);
    if (isSchema(node.additionalProperties)) visit(node.additionalProperties, joinPath(path, '{}'), false);
  };
  visit(input.schema, rootPath, true);
  return fields;
}

/** A property's path segment: its name when plain (and not the root's `$`), else quoted (`["a b"]`). */
function keySegment(key: string): string {
  return key !== rootPath && /^[A-Za-z_$][\w$-]*$/.test(key) ? key : `[${JSON.stringify(key)}]`;
}

/**
 * A union whose branches are all objects that require one property with one value each, every value
 * its own (what `z.discriminatedUnion` writes, or a `z.union` of tagged objects): the property, and each
 * branch with its path segment `(property="value")`, sorted. The first such property in name order.
 */
function discriminatedUnionOf(
  node: JsonSchema,
): { property: string; branches: { segment: string; schema: JsonSchema }[] } | undefined {
  const list = Array.isArray(node.oneOf) ? node.oneOf : Array.isArray(node.anyOf) ? node.anyOf : undefined;
  if (!list || list.length < 2 || isSchema(node.properties)) return undefined;
  const branches = list.filter(isSchema);
  if (branches.length !== list.length || !branches.every((branch) => isSchema(branch.properties))) {
    return undefined;
  }
  const names = Object.keys(branches[0]!.properties as JsonSchema).sort(compareText);
  for (const property of names) {
    const values = branches.map((branch) => {
      const required = Array.isArray(branch.required) && (branch.required as unknown[]).includes(property);
      const schema = (branch.properties as JsonSchema)[property];
      if (!required || !isSchema(schema)) return undefined;
      if ('const' in schema) return { value: schema.const };
      return Array.isArray(schema.enum) && schema.enum.length === 1
        ? { value: (schema.enum as unknown[])[0] }
        : undefined;
    });
    if (values.some((value) => value === undefined)) continue;
    const segments = values.map((value) => `(${keySegment(property)}=${canonicalJson(value!.value)})`);
    if (new Set(segments).size !== segments.length) continue;
    return {
      property,
      branches: branches
        .map((schema, index) => ({ segment: segments[index]!, schema }))
        .sort((a, b) => compareText(a.segment, b.segment)),
    };
  }
  return undefined;
}

function fieldOf(input: { node: JsonSchema; required: boolean; describe: boolean }): FieldContract {
  const { node } = input;
  const types = typesOf(node);
  const field: FieldContract = {
    ...(types.length ? { type: types.length === 1 ? types[0] : types } : {}),
    required: input.required,
  };
  const values = Array.isArray(node.enum)
    ? (node.enum as unknown[])
    : 'const' in node
      ? [node.const]
      : undefined;
  if (values) field.enum = sortedValues(values);
  if (typeof node.pattern === 'string') field.pattern = node.pattern;
  if (typeof node.format === 'string') field.format = node.format;
  for (const keyword of boundKeywords) {
    const value = node[keyword];
    if (typeof value !== 'number') continue;
    // z.int() states JavaScript's safe-integer range; it says nothing a reader needs, so it is left out.
    if (types.includes('integer') && Math.abs(value) === Number.MAX_SAFE_INTEGER) continue;
    field[keyword] = value;
  }
  if (typeof node.uniqueItems === 'boolean') field.uniqueItems = node.uniqueItems;
  if (types.includes('object') || isSchema(node.properties)) {
    field.additionalProperties = node.additionalProperties !== false;
  }
  if ('default' in node) field.default = node.default;
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const branches = node[keyword];
    if (Array.isArray(branches)) field[keyword] = sortedBranches({ branches, describe: input.describe });
  }
  if (typeof node[zodTypeKeyword] === 'string') field.unrepresentable = node[zodTypeKeyword];
  const other = Object.keys(node)
    .filter(
      (keyword) =>
        (!structureKeywords.has(keyword) && !annotationKeywords.has(keyword)) ||
        // `items: false` closes a tuple: no rule reads it, so it is compared as a whole.
        (keyword === 'items' && !isSchema(node.items)),
    )
    .sort(compareText);
  if (other.length)
    field.other = Object.fromEntries(
      other.map((keyword) => [keyword, withoutAnnotations(node[keyword], input.describe)]),
    );
  if (input.describe && typeof node.description === 'string') field.description = node.description;
  return field;
}

/**
 * A nullable field as one node: `anyOf [X, {type: null}]` (what a constrained `.nullable()` becomes)
 * is X with `null` among its types, as an unconstrained one already is (`type: ["string", "null"]`).
 */
function withNullFolded(node: JsonSchema): JsonSchema {
  if (!Array.isArray(node.anyOf) || node.anyOf.length !== 2) return node;
  const branches = node.anyOf as unknown[];
  const nullIndex = branches.findIndex(
    (branch) => isSchema(branch) && branch.type === 'null' && Object.keys(branch).length === 1,
  );
  const other = branches[1 - nullIndex];
  if (nullIndex < 0 || !isSchema(other) || typeof other.type !== 'string' || other.anyOf !== undefined)
    return node;
  const { anyOf: _anyOf, ...rest } = node;
  const { const: constant, ...inner } = other;
  const values = Array.isArray(other.enum)
    ? [...(other.enum as unknown[]), null]
    : 'const' in other
      ? [constant, null]
      : undefined;
  return { ...inner, ...rest, type: [other.type, 'null'], ...(values ? { enum: values } : {}) };
}

/** The node's types, sorted. */
function typesOf(node: JsonSchema): string[] {
  const { type } = node;
  const types = typeof type === 'string' ? [type] : Array.isArray(type) ? (type as string[]) : [];
  return [...new Set(types)].sort(compareText);
}

/**
 * A schema value without titles or examples (and without descriptions unless `keepDescriptions`), its
 * `required` lists sorted: for unions and `other`.
 */
function withoutAnnotations(value: unknown, keepDescriptions = false): unknown {
  const clean = (inner: unknown): unknown => withoutAnnotations(inner, keepDescriptions);
  if (Array.isArray(value)) return value.map(clean);
  if (!isSchema(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort(compareText)) {
    if (annotationKeywords.has(key) && !(keepDescriptions && key === 'description')) continue;
    const inner = value[key];
    out[key] =
      key === 'required' && Array.isArray(inner)
        ? [...(inner as string[])].sort(compareText)
        : key === 'properties' && isSchema(inner)
          ? Object.fromEntries(Object.entries(inner).map(([name, schema]) => [name, clean(schema)]))
          : clean(inner);
  }
  return out;
}

/** A union's branches, normalised, in the order of their form without descriptions (a set). */
function sortedBranches(input: { branches: readonly unknown[]; describe: boolean }): unknown[] {
  return input.branches
    .map((branch) => withoutAnnotations(branch, input.describe))
    .map((branch) => ({ branch, key: canonicalJson(withoutAnnotations(branch)) }))
    .sort((a, b) => compareText(a.key, b.key))
    .map(({ branch }) => branch);
}

/**
 * A field as the invocation contract reads it: without its description, nor the descriptions inside
 * its union's branches or other keywords.
 */
export function withoutDescriptions(field: FieldContract): Omit<FieldContract, 'description'> {
  const { description: _description, ...rest } = field;
  const stripped: Omit<FieldContract, 'description'> = { ...rest };
  if (rest.anyOf) stripped.anyOf = withoutAnnotations(rest.anyOf) as unknown[];
  if (rest.oneOf) stripped.oneOf = withoutAnnotations(rest.oneOf) as unknown[];
  if (rest.other) stripped.other = withoutAnnotations(rest.other) as Record<string, unknown>;
  return stripped;
}

/**
 * The descriptions inside a field's union branches and other keywords, by the part that holds them:
 * the key is the keyword and the part's form without descriptions (so the same branch matches across
 * versions), the value the descriptions by where they sit (`anyOf[0]`, `anyOf[1].amount`). Empty for
 * the output side, whose descriptions are never recorded.
 */
export function describedParts(field: FieldContract): Map<string, Record<string, string>> {
  const parts = new Map<string, Record<string, string>>();
  const add = (key: string, value: unknown, at: string): void => {
    const found: Record<string, string> = {};
    collectDescriptions({ value, at, found });
    if (Object.keys(found).length) parts.set(`${key} ${canonicalJson(withoutAnnotations(value))}`, found);
  };
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    field[keyword]?.forEach((branch, index) => add(keyword, branch, `${keyword}[${index}]`));
  }
  for (const [keyword, value] of Object.entries(field.other ?? {})) add(`other.${keyword}`, value, keyword);
  return parts;
}

/** Every description inside a field's union branches and other keywords, by where it sits. */
function descriptionsInside(field: FieldContract): Record<string, string> {
  return Object.assign({}, ...describedParts(field).values()) as Record<string, string>;
}

function collectDescriptions(input: { value: unknown; at: string; found: Record<string, string> }): void {
  const { value, at, found } = input;
  if (Array.isArray(value)) {
    value.forEach((item, index) => collectDescriptions({ value: item, at: `${at}[${index}]`, found }));
    return;
  }
  if (!isSchema(value)) return;
  if (typeof value.description === 'string') found[at] = value.description;
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'description') continue;
    if (key === 'properties' && isSchema(inner)) {
      for (const [name, schema] of Object.entries(inner)) {
        collectDescriptions({ value: schema, at: `${at}.${name}`, found });
      }
    } else collectDescriptions({ value: inner, at: `${at}.${key}`, found });
  }
}

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Values in the order of their canonical JSON: a set, whatever order the schema listed them in. */
function sortedValues(values: readonly unknown[]): unknown[] {
  return values
    .map((value) => ({ value, key: canonicalJson(value) }))
    .sort((a, b) => compareText(a.key, b.key))
    .map(({ value }) => value);
}

/** Whether two JSON values are equal, whatever their key order; a property set to undefined is absent. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, index) => sameJson(item, b[index]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left).filter((key) => left[key] !== undefined);
  if (keys.length !== Object.keys(right).filter((key) => right[key] !== undefined).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && sameJson(left[key], right[key]));
}

/** Plain code-unit order: the same on every machine and locale. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A path's segments: `items[].sku` is `items`, `[]`, `sku`; `target(kind="order")` is `target`, `(kind="order")`. */
function pathSegments(path: string): string[] {
  return path === rootPath
    ? []
    : (path.match(/\((?:"(?:[^"\\]|\\.)*"|[^"()])*\)|\["(?:[^"\\]|\\.)*"\]|\[\d*\]|\{\}|[^.[{(]+/g) ?? []);
}

/** The path of the field that holds `path` (`$` for a top-level field). */
export function parentPath(path: string): string {
  return pathSegments(path).slice(0, -1).reduce(joinPath, rootPath);
}

/**
 * A field's path from its parent's and its own segment: `a` + `b` is `a.b`, `a` + `[]` is `a[]`, `a` +
 * `(kind="x")` is `a(kind="x")`.
 */
export function joinPath(parent: string, segment: string): string {
  if (parent === rootPath) return segment;
  return /^[[({]/.test(segment) ? `${parent}${segment}` : `${parent}.${segment}`;
}

// --- The file ------------------------------------------------------------------------------------

/** Why a snapshot file could not be used; stable, for CI and messages. */
export const contractSnapshotErrorCodes = ['SNAPSHOT_NOT_FOUND', 'SNAPSHOT_INVALID'] as const;

/** A reason a snapshot file could not be used. */
export type ContractSnapshotErrorCode = (typeof contractSnapshotErrorCodes)[number];

const fieldSchema = z.object({
  type: z.union([z.string(), z.array(z.string())]).optional(),
  required: z.boolean(),
  enum: z.array(z.unknown()).optional(),
  pattern: z.string().optional(),
  format: z.string().optional(),
  ...Object.fromEntries(boundKeywords.map((keyword) => [keyword, z.number().optional()])),
  uniqueItems: z.boolean().optional(),
  additionalProperties: z.boolean().optional(),
  default: z.unknown().optional(),
  anyOf: z.array(z.unknown()).optional(),
  oneOf: z.array(z.unknown()).optional(),
  discriminator: z.string().optional(),
  unrepresentable: z.string().optional(),
  other: z.record(z.string(), z.unknown()).optional(),
  description: z.string().optional(),
});

const fieldMapSchema = z.record(z.string(), fieldSchema);

const snapshotSchema = z.object({
  version: z.literal(contractSnapshotVersion),
  createdAt: z.string(),
  selection: z.object({ model: z.string().optional(), at: z.string().optional() }),
  tools: z.array(
    z.object({
      name: z.string(),
      effect: z.enum(['read', 'write']),
      description: z.string(),
      fingerprints: z.object({ invocation: z.string(), discovery: z.string(), output: z.string() }),
      domainCodes: z.record(z.string(), z.string()),
      idempotencyFields: z.array(z.string()).optional(),
      boundParameters: z.record(z.string(), z.string()).optional(),
      untrustedOutput: z.union([z.literal(true), z.array(z.string())]).optional(),
      input: fieldMapSchema,
      output: fieldMapSchema,
      examples: z.array(
        z.object({
          arguments: z.record(z.string(), z.unknown()),
          risk: z.enum(riskLevels),
          amount: z.number().optional(),
        }),
      ),
    }),
  ),
});

/**
 * Reads a snapshot file's text. Never throws: a file that is not JSON, not a snapshot or of another
 * version is `SNAPSHOT_INVALID`, with what is wrong and where.
 */
export function parseContractSnapshot(
  text: string,
):
  { ok: true; snapshot: ContractSnapshot } | { ok: false; code: ContractSnapshotErrorCode; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, code: 'SNAPSHOT_INVALID', message: `not JSON (${(error as Error).message})` };
  }
  const version = isSchema(value) ? value.version : undefined;
  if (typeof version === 'number' && version !== contractSnapshotVersion) {
    return {
      ok: false,
      code: 'SNAPSHOT_INVALID',
      message: `version ${version}; this toolgate reads version ${contractSnapshotVersion}`,
    };
  }
  const parsed = snapshotSchema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.length ? issue.path.join('.') : '(file)'}: ${issue.message}`)
      .join('; ');
    return { ok: false, code: 'SNAPSHOT_INVALID', message: `not a contract snapshot (${problems})` };
  }
  const snapshot: ContractSnapshot = parsed.data;
  return { ok: true, snapshot };
}

/**
 * The snapshot as the file's text: two-space JSON, keys in a fixed order, short lists on one line,
 * laid out as Prettier lays out JSON at its default width, so a formatter leaves the file alone and a
 * review shows only what changed. Ends with a newline.
 */
export function serializeContractSnapshot(snapshot: ContractSnapshot): string {
  return layoutJson(snapshot);
}

/**
 * Any JSON value as `serializeContractSnapshot` lays out a snapshot: objects one key a line, short
 * lists of scalars on one line, keys in the value's own order; ends with a newline.
 */
export function layoutJson(value: unknown): string {
  return `${layout({ value, indent: '', prefix: '', suffix: '' })}\n`;
}

const printWidth = 80;

function layout(input: { value: unknown; indent: string; prefix: string; suffix: string }): string {
  const { value, indent } = input;
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const scalars = value.every((item) => item === null || typeof item !== 'object');
    if (scalars) {
      const flat = `[${value.map((item) => JSON.stringify(item)).join(', ')}]`;
      if (indent.length + input.prefix.length + flat.length + input.suffix.length <= printWidth) return flat;
    }
    const items = value.map(
      (item, index) =>
        `${inner}${layout({ value: item, indent: inner, prefix: '', suffix: index < value.length - 1 ? ',' : '' })}`,
    );
    return `[\n${items.join(',\n')}\n${indent}]`;
  }
  if (isSchema(value)) {
    const entries = Object.entries(value).filter(([, item]) => item !== undefined);
    if (entries.length === 0) return '{}';
    const lines = entries.map(([key, item], index) => {
      const prefix = `${JSON.stringify(key)}: `;
      const suffix = index < entries.length - 1 ? ',' : '';
      return `${inner}${prefix}${layout({ value: item, indent: inner, prefix, suffix })}`;
    });
    return `{\n${lines.join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}
