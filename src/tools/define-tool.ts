import { z } from 'zod';
import type { CallContext, ContextSource } from '../calls/call-context';
import { isContextSource } from '../calls/call-context';
import { codePattern, isBuiltInCode } from '../shared/codes';
import type { RiskLevel } from './risk-levels';
import { riskLevels } from './risk-levels';

/** A tool's input schema: a strict zod object, so unknown fields are errors. */
export type ToolInputSchema = z.ZodObject;

/** Whether a tool only reads or changes the world; fixed for the tool. */
export type EffectKind = 'read' | 'write';

/** How the executor retries a tool's side effect; every attempt carries the same idempotency key. */
export interface ExecutionRetry {
  /** Attempts in all, the first included. */
  maximumAttempts: number;
  /** Wait before the first retry, in milliseconds. */
  initialIntervalMs: number;
  /** Longest wait between two attempts, in milliseconds. */
  maximumIntervalMs: number;
  backoffCoefficient: number;
  /** How long one attempt may take, in milliseconds. */
  attemptTimeoutMs: number;
}

/** Bounded retries with backoff: four attempts over about two seconds, then the backend is asked by key. */
export const defaultExecutionRetry: ExecutionRetry = {
  maximumAttempts: 4,
  initialIntervalMs: 200,
  maximumIntervalMs: 5_000,
  backoffCoefficient: 2,
  attemptTimeoutMs: 10_000,
};

/** What a risk function sees: the validated arguments only (the caller's policy applies its own limits). */
export interface RiskInput<Args> {
  args: Args;
}

/** The pure half of a tool: what the model sees and what the workflow validates and classifies. */
export interface ToolContract<
  Input extends ToolInputSchema = ToolInputSchema,
  Output extends z.ZodType = z.ZodType,
> {
  readonly name: string;
  readonly description: string;
  readonly input: Input;
  readonly output: Output;
  readonly effect: EffectKind;
  /** For a write: a pure function of the validated arguments. Reads are always `read`. */
  readonly risk: (input: RiskInput<z.output<Input>>) => RiskLevel;
  /** The domain codes the tool's checks and executor may answer with, each with what it means. */
  readonly domainCodes: Readonly<Record<string, string>>;
  /** Fields that identify the effect; others (e.g. a free-text reason) do not change the call id. */
  readonly idempotencyFields?: readonly string[];
  /**
   * Input fields the host fills from the call's context (`customer_id: 'onBehalfOf'`), never the
   * model: absent from every schema the model sees, refused when the model sends them
   * (`BOUND_PARAMETER_SENT`), part of the call id and of what an approval signs.
   */
  readonly boundParameters?: Readonly<Record<string, ContextSource>>;
  /**
   * Outputs that are text from outside (a customer note, an email, a page): `true` for the whole
   * output, or the names of top-level output fields. Once one reached a session, its caller's policy
   * (`untrustedText`) decides what the session's writes need.
   */
  readonly untrustedOutput?: true | readonly string[];
  /** A short line a person reads in the Temporal UI, e.g. `refund 2590 BRL on ORD-1001`. */
  readonly summarize: (args: z.output<Input>) => string;
  /** Overrides the executor's retry for this tool. */
  readonly retry?: Partial<ExecutionRetry>;
  /** What a write's credential may touch, e.g. `order:ORD-1001` (default: the tool's name). */
  readonly resource: (args: z.output<Input>) => string;
  /**
   * For a write, when declared: the amount this call moves, in the tool's smallest unit (e.g. cents),
   * counted by the policy's amount limits across sessions. Absent when the tool declares none.
   */
  readonly amount?: (args: z.output<Input>) => number;
  /**
   * For a write, when declared: route keys of the validated arguments and context (`{ owner: 'team-br' }`)
   * that the policy's approval chains route groups by (`{route.owner}`). Pure.
   */
  readonly approvalRoute?: (args: z.output<Input>, context: CallContext) => Record<string, string>;
  /**
   * Arguments as a model would send them, each checked against the input schema at definition time:
   * the contract snapshot records the risk level the tool gives each one, so a lowered level shows.
   */
  readonly examples?: readonly z.input<Input>[];
}

/** A tool contract whose argument types have been erased, as the registry and the workflow hold it. */
export type AnyToolContract = ToolContract<ToolInputSchema, z.ZodType>;

/** Everything a tool author declares for the contract. */
export interface ToolContractDefinition<Input extends ToolInputSchema, Output extends z.ZodType> {
  name: string;
  description: string;
  input: Input;
  output: Output;
  effect: EffectKind;
  risk?: (input: RiskInput<z.output<Input>>) => RiskLevel;
  domainCodes?: Record<string, string>;
  idempotencyFields?: readonly (keyof z.output<Input> & string)[];
  /**
   * Input fields filled from the call's context, never by the model, e.g. `{ customer_id: 'onBehalfOf' }`
   * (or `'tenant'`, `'channel'`, `'claims.<name>'`): each a text field of the input. Hidden from the
   * model's schemas; a model that sends one is refused with `BOUND_PARAMETER_SENT`. A required field
   * whose context lacks the value is `CONTEXT_REQUIRED`; an optional one stays absent.
   */
  boundParameters?: Partial<Record<keyof z.output<Input> & string, ContextSource>>;
  /**
   * Outputs that are text from outside, never instructions: `true` (the whole output) or top-level
   * output field names (`['note']`). The policy's `untrustedText` decides what follows in a session
   * that read one.
   */
  untrustedOutput?: true | readonly string[];
  summarize?: (args: z.output<Input>) => string;
  retry?: Partial<ExecutionRetry>;
  resource?: (args: z.output<Input>) => string;
  /**
   * A write only: the amount this call moves, in the tool's smallest unit (e.g. cents), counted by the
   * policy's amount limits across sessions (e.g. `(args) => args.amount_cents`). A whole number, 0 or
   * more; checked on each of the `examples` at definition time.
   */
  amount?: (args: z.output<Input>) => number;
  /**
   * A write only: route keys for the policy's approval chains, a pure function of the validated
   * arguments and the call's context, e.g. `(args) => ({ owner: ownerOf(args.order_id) })` routes a
   * step `group: "owners-{route.owner}"`. Values are group-name text (letters, digits, ".", "_", "-").
   */
  approvalRoute?: (args: z.output<Input>, context: CallContext) => Record<string, string>;
  /** Arguments as a model would send them (e.g. a small and a large refund); each must pass the input schema. */
  examples?: readonly z.input<Input>[];
}

/**
 * True when a tool may refuse with `code`: one of its own declared domain codes (never an inherited
 * name such as `constructor`), or IDEMPOTENCY_CONFLICT, which any backend honouring keys may answer.
 * Any other code is the tool's bug and never reaches the model. Pure and sandbox-safe.
 */
export function declaresDomainCode(contract: Pick<AnyToolContract, 'domainCodes'>, code: string): boolean {
  return code === 'IDEMPOTENCY_CONFLICT' || Object.hasOwn(contract.domainCodes, code);
}

/** A tool definition broke a rule; the message names the tool, the rule and the fix. */
export class ToolDefinitionError extends Error {
  override readonly name = 'ToolDefinitionError';
}

const toolNamePattern = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

/**
 * Defines a tool's contract and checks it at once: a definition that breaks a rule throws at
 * start-up with what to fix, never at the first call.
 */
export function defineToolContract<Input extends ToolInputSchema, Output extends z.ZodType>(
  definition: ToolContractDefinition<Input, Output>,
): ToolContract<Input, Output> {
  const fail = (problem: string): never => {
    throw new ToolDefinitionError(`tool "${String(definition.name)}": ${problem}`);
  };
  if (typeof definition.name !== 'string' || !toolNamePattern.test(definition.name)) {
    fail(
      'the name must be 1-64 letters, digits, "_" or "-", starting with a letter (providers refuse others)',
    );
  }
  if (typeof definition.description !== 'string' || definition.description.trim().length < 10) {
    fail('write a description for the model: what the tool does, when to call it, what it never does');
  }
  if (!(definition.input instanceof z.ZodObject))
    fail('input must be a zod object schema (z.strictObject({...}))');
  if (definition.input._zod.def.catchall?._zod.def.type !== 'never') {
    fail('input must reject unknown fields: use z.strictObject({...}) or .strict()');
  }
  checkFields({ shape: definition.input.shape, path: '', fail });
  if (!(definition.output instanceof z.ZodType)) fail('output must be a zod schema');
  if (definition.effect !== 'read' && definition.effect !== 'write') fail('effect must be "read" or "write"');
  if (definition.effect === 'write' && typeof definition.risk !== 'function') {
    fail('a write tool needs a risk function: ({ args }) => "reversible" | "irreversible" | "critical"');
  }
  if (definition.effect === 'read' && definition.risk !== undefined) {
    fail('a read tool has no risk function: reads are always "read"');
  }
  const domainCodes = definition.domainCodes ?? {};
  for (const code of Object.keys(domainCodes)) {
    if (!codePattern.test(code)) fail(`domain code "${code}" must be SCREAMING_SNAKE_CASE`);
    if (isBuiltInCode(code)) fail(`domain code "${code}" is one of toolgate's own codes; pick a domain name`);
  }
  for (const field of definition.idempotencyFields ?? []) {
    if (!(field in definition.input.shape)) {
      fail(`idempotencyFields names "${field}", which is not an input field`);
    }
  }
  const boundParameters = checkBoundParameters({ definition, fail });
  const untrustedOutput = definition.untrustedOutput;
  if (untrustedOutput !== undefined && untrustedOutput !== true) {
    if (!Array.isArray(untrustedOutput) || untrustedOutput.length === 0) {
      fail("untrustedOutput must be true (the whole output) or a list of output field names, e.g. ['note']");
    }
    const shape = definition.output instanceof z.ZodObject ? (definition.output.shape as object) : undefined;
    for (const field of untrustedOutput as readonly unknown[]) {
      if (typeof field !== 'string' || (shape !== undefined && !Object.hasOwn(shape, field))) {
        fail(`untrustedOutput names ${JSON.stringify(field)}, which is not an output field`);
      }
    }
  }
  const examples = checkExamples({ definition, fail });
  checkAmount({ definition, fail });
  const risk = definition.risk;
  const name = definition.name;
  const wrappedRisk = (riskInput: RiskInput<z.output<Input>>): RiskLevel => {
    if (definition.effect === 'read' || !risk) return 'read';
    const level = risk(riskInput);
    // A write classified as `read` would skip every gate; treat it as the least write level instead.
    if (!riskLevels.includes(level) || level === 'read') return 'reversible';
    return level;
  };
  const contract = Object.freeze({
    name,
    description: definition.description,
    input: definition.input,
    output: definition.output,
    effect: definition.effect,
    risk: wrappedRisk,
    domainCodes: Object.freeze({ ...domainCodes }),
    ...(definition.idempotencyFields ? { idempotencyFields: [...definition.idempotencyFields] } : {}),
    ...(boundParameters ? { boundParameters } : {}),
    ...(untrustedOutput === true
      ? { untrustedOutput: true as const }
      : untrustedOutput
        ? { untrustedOutput: Object.freeze([...untrustedOutput]) }
        : {}),
    summarize: definition.summarize ?? ((): string => name),
    resource: definition.resource ?? ((): string => name),
    ...(definition.amount ? { amount: definition.amount } : {}),
    ...(definition.approvalRoute ? { approvalRoute: definition.approvalRoute } : {}),
    ...(definition.retry ? { retry: { ...definition.retry } } : {}),
    ...(examples ? { examples } : {}),
  });
  if (risk) {
    // A contract defined from another's `risk` (`risk: base.risk`) binds the author's function, not the wrapper.
    const authored = authoredBehindWrapper.get(risk) ?? risk;
    authoredRiskFunctions.set(contract, authored);
    authoredBehindWrapper.set(wrappedRisk, authored);
  }
  return contract;
}

// The author's risk function behind each contract's wrapper (which maps a write's "read" to
// "reversible"): its source is part of what an approval binds (src/tools/contract-digest.ts).
const authoredRiskFunctions = new WeakMap<object, (input: never) => unknown>();
const authoredBehindWrapper = new WeakMap<object, (input: never) => unknown>();

/** The source text of the risk function the tool's author wrote, or `undefined` for a read or a contract not made by `defineToolContract`. */
export function authoredRiskSourceOf(contract: object): string | undefined {
  return authoredRiskFunctions.get(contract)?.toString();
}

/**
 * The bound parameters' rules: each names an input field whose schema takes text (a string or an
 * enum of strings) and a context source; frozen, or undefined when none is declared.
 */
function checkBoundParameters<Input extends ToolInputSchema>(input: {
  definition: { input: Input; boundParameters?: Partial<Record<string, ContextSource>> };
  fail: (problem: string) => never;
}): Readonly<Record<string, ContextSource>> | undefined {
  const { definition, fail } = input;
  const declared = definition.boundParameters;
  if (declared === undefined) return undefined;
  if (declared === null || typeof declared !== 'object' || Array.isArray(declared)) {
    fail(
      "boundParameters must be an object of input field to context source, e.g. { customer_id: 'onBehalfOf' }",
    );
  }
  const bound: Record<string, ContextSource> = {};
  for (const [field, source] of Object.entries(declared) as [string, unknown][]) {
    if (!Object.hasOwn(definition.input.shape, field)) {
      fail(`boundParameters names "${field}", which is not an input field`);
    }
    if (!isContextSource(source)) {
      fail(
        `boundParameters.${field} is ${JSON.stringify(source)}; a context source is "onBehalfOf", "tenant", "channel" or "claims.<name>"`,
      );
    }
    const type = unwrap(definition.input.shape[field] as z.ZodType)._zod.def.type;
    if (type !== 'string' && type !== 'enum') {
      fail(
        `boundParameters.${field}: the field must take text (z.string() or z.enum), since a context holds text`,
      );
    }
    bound[field] = source as ContextSource;
  }
  return Object.keys(bound).length > 0 ? Object.freeze(bound) : undefined;
}

const modelInputs = new WeakMap<object, ToolInputSchema>();

/**
 * The input schema the model sees: the contract's, without its bound parameters (the host fills
 * them). The same schema object when the tool binds none.
 */
export function modelInputSchema(
  contract: Pick<AnyToolContract, 'input' | 'boundParameters'>,
): ToolInputSchema {
  const bound = contract.boundParameters;
  if (!bound) return contract.input;
  let schema = modelInputs.get(contract);
  if (!schema) {
    const mask: Record<string, true> = {};
    for (const field of Object.keys(bound)) mask[field] = true;
    schema = contract.input.omit(mask as never);
    modelInputs.set(contract, schema);
  }
  return schema;
}

/** The definition's examples, copied and frozen, once each has passed the input schema. */
function checkExamples<Input extends ToolInputSchema>(input: {
  definition: { input: Input; examples?: readonly z.input<Input>[] };
  fail: (problem: string) => never;
}): readonly z.input<Input>[] | undefined {
  const { definition, fail } = input;
  if (definition.examples === undefined) return undefined;
  if (!Array.isArray(definition.examples)) fail('examples must be an array of argument objects');
  const examples = (definition.examples as readonly unknown[]).map((example, index): unknown => {
    const parsed = definition.input.safeParse(example);
    if (!parsed.success) {
      const problems = parsed.error.issues
        .map((issue) => `${issue.path.length ? issue.path.join('.') : '(arguments)'}: ${issue.message}`)
        .join('; ');
      fail(`examples[${index}] does not pass the input schema (${problems}); fix the example or the schema`);
    }
    return structuredClone(example);
  });
  return Object.freeze(examples) as readonly z.input<Input>[];
}

/**
 * The amount function's rules: a function, on a write only, and on each example (already checked
 * against the input schema) a whole number of the smallest unit, 0 or more, that JavaScript counts
 * exactly (a safe integer), so the limits never add up a float or a negative refund.
 */
function checkAmount<Input extends ToolInputSchema>(input: {
  definition: {
    input: Input;
    effect: EffectKind;
    amount?: (args: z.output<Input>) => number;
    examples?: readonly z.input<Input>[];
  };
  fail: (problem: string) => never;
}): void {
  const { definition, fail } = input;
  const amount = definition.amount;
  if (amount === undefined) return;
  if (definition.effect === 'read') {
    fail('a read tool has no amount function: a read moves nothing; remove `amount`');
  }
  if (typeof amount !== 'function') {
    fail('amount must be a function of the validated arguments, e.g. (args) => args.amount_cents');
  }
  (definition.examples ?? []).forEach((example, index) => {
    const args = definition.input.parse(example);
    let value: unknown;
    try {
      value = amount(args);
    } catch (error) {
      fail(`amount threw on examples[${index}] (${(error as Error).message}); fix the amount function`);
    }
    const problem =
      typeof value !== 'number' || !Number.isFinite(value)
        ? 'is not a finite number'
        : !Number.isInteger(value)
          ? 'is not whole: amounts are whole numbers in the smallest unit (25.90 is 2590 cents)'
          : value < 0
            ? 'is negative: an amount is what the call moves, 0 or more'
            : !Number.isSafeInteger(value)
              ? 'is beyond the safe integers: limits could not add it up exactly'
              : undefined;
    if (problem) {
      fail(
        `amount gives examples[${index}] ${typeof value === 'number' ? String(value) : typeof value}, which ` +
          `${problem}; return the amount in the tool's smallest unit, e.g. (args) => args.amount_cents`,
      );
    }
  });
}

function checkFields(input: {
  shape: Record<string, z.ZodType>;
  path: string;
  fail: (problem: string) => never;
}): void {
  for (const [key, field] of Object.entries(input.shape)) {
    const path = input.path ? `${input.path}.${key}` : key;
    if (!field.description) {
      input.fail(`input field "${path}" needs .describe(...): the model reads it, and errors repeat it`);
    }
    const inner = unwrap(field);
    if ((inner._zod.def as { coerce?: boolean }).coerce) {
      input.fail(
        `input field "${path}" coerces its value; use a plain schema so "2590" is refused, not converted`,
      );
    }
    if (inner instanceof z.ZodObject) {
      if (inner._zod.def.catchall?._zod.def.type !== 'never') {
        input.fail(`input field "${path}" must reject unknown fields: use z.strictObject({...})`);
      }
      checkFields({ shape: inner.shape, path, fail: input.fail });
    }
  }
}

/** Strips optional/nullable/default wrappers to reach the schema that validates the value. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let current: z.ZodType = schema;
  for (;;) {
    const def = current._zod.def as { type: string; innerType?: z.ZodType };
    if ((def.type === 'optional' || def.type === 'nullable' || def.type === 'default') && def.innerType) {
      current = def.innerType;
    } else return current;
  }
}
