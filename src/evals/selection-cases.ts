// The selection suite's case file: labelled conversations, each with the tool the model should pick
// first (or none: a negative case) and the arguments that must be right. JSON, checked here, so a
// mistake in the file fails before a single request is paid for, naming the case and the field.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { ConfigurationError } from '../policy/load-policy';
import type { ArgumentMatcher, ArgumentPredicate, ArgumentPredicates } from './argument-matchers';
import { builtInPredicates } from './argument-matchers';
import { loadPredicatesModule } from './load-predicates';

/** A chat message of a case's history, as Chat Completions takes it (arguments and contents as JSON text). */
export type HistoryMessage =
  | { role: 'system' | 'developer' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/** One labelled case, checked. */
export interface SelectionCase {
  id: string;
  /** The user's message the model answers; it comes after the history. */
  userMessage: string;
  history: HistoryMessage[];
  /** The tool the model should call first, or null: it should call none (a negative case). */
  expectedTool: string | null;
  /** The arguments that must be right, by name; the others are not compared. */
  criticalArguments: Record<string, ArgumentMatcher>;
  /** `critical` puts the case in the critical set, the one every change runs. */
  tags: string[];
  /** Why the case exists, for the person who reads a failure. */
  note?: string;
}

/** The metrics' thresholds: the accuracies are minimums, the spurious-call rate a maximum. */
export interface SelectionThresholds {
  minToolAccuracy: number;
  minArgumentAccuracy: number;
  maxSpuriousCallRate: number;
}

/** The thresholds a case file or a flag does not override. */
export const defaultSelectionThresholds: Readonly<SelectionThresholds> = {
  minToolAccuracy: 0.95,
  minArgumentAccuracy: 0.9,
  maxSpuriousCallRate: 0.02,
};

/** A checked case file. */
export interface SelectionCaseFile {
  /** Where it was read from (or what the caller named it), for messages. */
  source: string;
  /** The caller whose tools the model is offered, unless the command names another. */
  caller?: string;
  /** The system prompt sent before each case's history, as the agent sends it. */
  system?: string;
  thresholds: Partial<SelectionThresholds>;
  cases: SelectionCase[];
}

/** Which cases run: those tagged `critical` (every change) or all of them (on demand, on a model change). */
export type SelectionSet = 'critical' | 'full';

/** The tag that puts a case in the critical set. */
export const criticalTag = 'critical';

const jsonObjectOrText = z.union([z.string(), z.record(z.string(), z.unknown())]);

const toolCallSchema = z.strictObject({
  id: z.string().min(1),
  type: z.literal('function').optional(),
  function: z.strictObject({
    name: z.string().min(1),
    // The wire format wants JSON text; a case file may write the object.
    arguments: jsonObjectOrText,
  }),
});

const historyMessageSchema = z.discriminatedUnion('role', [
  z.strictObject({ role: z.enum(['system', 'developer', 'user']), content: z.string() }),
  z
    .strictObject({
      role: z.literal('assistant'),
      content: z.string().nullable().optional(),
      tool_calls: z.array(toolCallSchema).min(1).optional(),
    })
    .refine((message) => typeof message.content === 'string' || message.tool_calls !== undefined, {
      message: 'an assistant message needs a content or tool_calls',
    }),
  z.strictObject({ role: z.literal('tool'), tool_call_id: z.string().min(1), content: jsonObjectOrText }),
]);

const ratio = z.number().min(0).max(1);

const caseSchema = z.strictObject({
  id: z.string().min(1),
  userMessage: z.string().min(1),
  history: z.array(historyMessageSchema).optional(),
  expectedTool: z.string().min(1).nullable(),
  // Every value JSON can hold; what it means (exact, pattern, predicate) is read below.
  criticalArguments: z.record(z.string(), z.unknown()).optional(),
  tags: z.array(z.string().min(1)).optional(),
  note: z.string().optional(),
});

const caseFileSchema = z.strictObject({
  $schema: z.string().optional(),
  description: z.string().optional(),
  caller: z.string().min(1).optional(),
  system: z.string().min(1).optional(),
  /** A module exporting more predicates, relative to the case file. */
  predicates: z.string().min(1).optional(),
  thresholds: z
    .strictObject({
      minToolAccuracy: ratio.optional(),
      minArgumentAccuracy: ratio.optional(),
      maxSpuriousCallRate: ratio.optional(),
    })
    .optional(),
  cases: z.array(caseSchema).min(1),
});

type RawCase = z.output<typeof caseSchema>;

/** A problem in the file: where (a path into the JSON) and what. */
type Problem = { path: readonly PropertyKey[]; message: string };

/**
 * Reads and checks a case file. A file that does not parse or fit throws a `ConfigurationError`
 * naming the file, every problem's case (index and id) and field, and what to write instead.
 * Predicates come from the built-in set, the module the file names, and `predicates`.
 */
export function loadSelectionCases(input: {
  path: string;
  predicates?: ArgumentPredicates;
}): SelectionCaseFile {
  const source = resolve(input.path);
  let text: string;
  try {
    text = readFileSync(source, 'utf8');
  } catch (error) {
    throw new ConfigurationError(
      `case file ${source}: cannot be read (${(error as Error).message}); pass --cases <file>`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigurationError(`case file ${source}: not valid JSON (${(error as Error).message})`);
  }
  return parseSelectionCases({ source, value, predicates: input.predicates, baseDirectory: dirname(source) });
}

/**
 * Checks a parsed case file (see {@link loadSelectionCases}). `baseDirectory` resolves the file's
 * predicates module; without it a file that names one is refused.
 */
export function parseSelectionCases(input: {
  source: string;
  value: unknown;
  predicates?: ArgumentPredicates;
  baseDirectory?: string;
}): SelectionCaseFile {
  const { source, value } = input;
  const parsed = caseFileSchema.safeParse(value);
  if (!parsed.success) {
    fail({
      source,
      value,
      problems: parsed.error.issues.map((issue) => ({ path: issue.path, message: issue.message })),
    });
  }
  const file = parsed.data;
  const predicates = predicatesFor({
    source,
    file,
    extra: input.predicates,
    baseDirectory: input.baseDirectory,
  });
  const problems: Problem[] = [];
  const seen = new Map<string, number>();
  const cases = file.cases.map((raw, index) => {
    const earlier = seen.get(raw.id);
    if (earlier !== undefined) {
      problems.push({ path: ['cases', index, 'id'], message: `the id is also the id of cases[${earlier}]` });
    }
    seen.set(raw.id, index);
    return checkedCase({ raw, path: ['cases', index], predicates, problems });
  });
  if (problems.length) fail({ source, value, problems });
  return {
    source,
    ...(file.caller !== undefined ? { caller: file.caller } : {}),
    ...(file.system !== undefined ? { system: file.system } : {}),
    thresholds: file.thresholds ?? {},
    cases,
  };
}

/**
 * The cases of a set, in file order. A critical set with no case tagged `critical` is a
 * `ConfigurationError`: an empty run would pass and prove nothing.
 */
export function casesOfSet(input: { file: SelectionCaseFile; set: SelectionSet }): SelectionCase[] {
  const { file, set } = input;
  if (set === 'full') return file.cases;
  const critical = file.cases.filter((entry) => entry.tags.includes(criticalTag));
  if (!critical.length) {
    throw new ConfigurationError(
      `case file ${file.source}: no case is tagged "${criticalTag}", so the critical set is empty; ` +
        `tag the cases every change must pass (20 to 40 is a good size), or run the full set (--set full)`,
    );
  }
  return critical;
}

/**
 * Checks the cases against the tools the model will be offered: every expected tool is among them,
 * and every critical argument is one of its parameters. Throws a `ConfigurationError` otherwise.
 */
export function checkCasesAgainstTools(input: {
  file: SelectionCaseFile;
  cases: readonly SelectionCase[];
  tools: readonly { function: { name: string; parameters: Record<string, unknown> } }[];
  /** Who the tools are for, for the message. */
  offeredTo?: string;
}): void {
  const { file, tools } = input;
  const byName = new Map(tools.map((tool) => [tool.function.name, tool.function]));
  const offered = [...byName.keys()].join(', ') || '(none)';
  const problems: string[] = [];
  for (const entry of input.cases) {
    const where = `cases[${file.cases.indexOf(entry)}] (id "${entry.id}")`;
    if (entry.expectedTool === null) continue;
    const tool = byName.get(entry.expectedTool);
    if (!tool) {
      problems.push(
        `${where}.expectedTool: "${entry.expectedTool}" is not offered${input.offeredTo ? ` to ${input.offeredTo}` : ''}; ` +
          `the tools are: ${offered}`,
      );
      continue;
    }
    const properties = tool.parameters.properties;
    if (typeof properties !== 'object' || properties === null) continue;
    const parameters = Object.keys(properties);
    for (const argument of Object.keys(entry.criticalArguments)) {
      if (!parameters.includes(argument)) {
        problems.push(
          `${where}.criticalArguments.${argument}: ${entry.expectedTool} has no such parameter; ` +
            `its parameters are: ${parameters.join(', ')}`,
        );
      }
    }
  }
  if (problems.length) throw new ConfigurationError(`case file ${file.source}: ${problems.join('; ')}`);
}

function predicatesFor(input: {
  source: string;
  file: z.output<typeof caseFileSchema>;
  extra: ArgumentPredicates | undefined;
  baseDirectory: string | undefined;
}): ReadonlyMap<string, ArgumentPredicate> {
  const { source, file } = input;
  const predicates = new Map(Object.entries(builtInPredicates));
  const add = (from: string, added: ArgumentPredicates) => {
    for (const [name, predicate] of Object.entries(added)) {
      if (predicates.has(name)) {
        throw new ConfigurationError(
          `${from}: the predicate ${name} is already defined (built in: ${Object.keys(builtInPredicates).join(', ')}); give yours another name`,
        );
      }
      predicates.set(
        name,
        typeof predicate === 'function' ? { description: `passes ${name}`, test: predicate } : predicate,
      );
    }
  };
  if (file.predicates !== undefined) {
    if (input.baseDirectory === undefined) {
      throw new ConfigurationError(
        `case file ${source}: predicates names a module, and only a case file read from disk can load one`,
      );
    }
    const path = isAbsolute(file.predicates)
      ? file.predicates
      : resolve(input.baseDirectory, file.predicates);
    add(`predicates module ${path}`, loadPredicatesModule({ path, namedBy: `case file ${source}` }));
  }
  if (input.extra) add('predicates', input.extra);
  return predicates;
}

function checkedCase(input: {
  raw: RawCase;
  path: readonly PropertyKey[];
  predicates: ReadonlyMap<string, ArgumentPredicate>;
  problems: Problem[];
}): SelectionCase {
  const { raw, path, problems } = input;
  const criticalArguments: Record<string, ArgumentMatcher> = {};
  const argumentEntries = Object.entries(raw.criticalArguments ?? {});
  if (raw.expectedTool === null && argumentEntries.length) {
    problems.push({
      path: [...path, 'criticalArguments'],
      message: 'a negative case (expectedTool null) has no arguments to check; remove them',
    });
  }
  for (const [name, value] of argumentEntries) {
    const matcher = matcherOf({ value, predicates: input.predicates });
    if (matcher.ok) criticalArguments[name] = matcher.matcher;
    else problems.push({ path: [...path, 'criticalArguments', name], message: matcher.message });
  }
  const history = (raw.history ?? []).map(wireMessage);
  checkToolCallPairs({ history, path: [...path, 'history'], problems });
  return {
    id: raw.id,
    userMessage: raw.userMessage,
    history,
    expectedTool: raw.expectedTool,
    criticalArguments,
    tags: raw.tags ?? [],
    ...(raw.note !== undefined ? { note: raw.note } : {}),
  };
}

/** A critical argument as the file writes it: a plain value (exact), or `{equals}`, `{pattern, flags?}`, `{predicate}`. */
function matcherOf(input: {
  value: unknown;
  predicates: ReadonlyMap<string, ArgumentPredicate>;
}): { ok: true; matcher: ArgumentMatcher } | { ok: false; message: string } {
  const { value } = input;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: true, matcher: { kind: 'equals', value } };
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort().join(',');
  const forms =
    'write a value to match exactly, {"equals": <any JSON>}, {"pattern": "<regex>", "flags"?: "i"} or {"predicate": "<name>"}';
  if (keys === 'equals') return { ok: true, matcher: { kind: 'equals', value: record.equals } };
  if (keys === 'pattern' || keys === 'flags,pattern') {
    if (
      typeof record.pattern !== 'string' ||
      (record.flags !== undefined && typeof record.flags !== 'string')
    ) {
      return { ok: false, message: `pattern and flags are strings; ${forms}` };
    }
    try {
      return { ok: true, matcher: { kind: 'pattern', pattern: new RegExp(record.pattern, record.flags) } };
    } catch (error) {
      return { ok: false, message: `not a valid regular expression: ${(error as Error).message}` };
    }
  }
  if (keys === 'predicate') {
    const name = record.predicate;
    const predicate = typeof name === 'string' ? input.predicates.get(name) : undefined;
    if (typeof name !== 'string' || !predicate) {
      return {
        ok: false,
        message:
          `unknown predicate ${JSON.stringify(name)}; known: ${[...input.predicates.keys()].join(', ')} ` +
          '(a case file adds its own with "predicates": "<module>")',
      };
    }
    return { ok: true, matcher: { kind: 'predicate', name, predicate } };
  }
  return { ok: false, message: `an object here must be one matcher; ${forms}` };
}

type RawHistoryMessage = z.output<typeof historyMessageSchema>;

function wireMessage(message: RawHistoryMessage): HistoryMessage {
  const text = (value: string | Record<string, unknown>) =>
    typeof value === 'string' ? value : JSON.stringify(value);
  switch (message.role) {
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content ?? null,
        ...(message.tool_calls
          ? {
              tool_calls: message.tool_calls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.function.name, arguments: text(call.function.arguments) },
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.tool_call_id, content: text(message.content) };
    default:
      return { role: message.role, content: message.content };
  }
}

/** Every tool message answers a call of the assistant message before it, and every call is answered before anything else. */
function checkToolCallPairs(input: {
  history: readonly HistoryMessage[];
  path: readonly PropertyKey[];
  problems: Problem[];
}): void {
  const { history, path, problems } = input;
  let unanswered = new Set<string>();
  for (const [index, message] of history.entries()) {
    if (message.role === 'tool') {
      if (!unanswered.delete(message.tool_call_id)) {
        problems.push({
          path: [...path, index, 'tool_call_id'],
          message: `answers no tool call of the assistant message before it ("${message.tool_call_id}")`,
        });
      }
      continue;
    }
    if (unanswered.size) {
      problems.push({
        path: [...path, index],
        message: `the tool calls ${[...unanswered].join(', ')} before it have no tool message answering them`,
      });
    }
    unanswered = new Set(
      message.role === 'assistant' ? (message.tool_calls ?? []).map((call) => call.id) : [],
    );
  }
  // The user's message comes next: a call left unanswered would be a request no endpoint accepts.
  if (unanswered.size) {
    problems.push({
      path,
      message: `ends with the tool calls ${[...unanswered].join(', ')} unanswered; add a tool message for each`,
    });
  }
}

function fail(input: { source: string; value: unknown; problems: readonly Problem[] }): never {
  const shown = input.problems.slice(0, 10).map((problem) => {
    const where = pathText({ path: problem.path, value: input.value });
    return `${where || '(top level)'}: ${problem.message}`;
  });
  const more =
    input.problems.length > shown.length ? `; and ${input.problems.length - shown.length} more` : '';
  throw new ConfigurationError(`case file ${input.source}: ${shown.join('; ')}${more}`);
}

/** `cases[3] (id "refund-usd").criticalArguments.amount_cents`: the case's index and, when it has one, its id. */
function pathText(input: { path: readonly PropertyKey[]; value: unknown }): string {
  let text = '';
  let node: unknown = input.value;
  for (const key of input.path) {
    node =
      typeof node === 'object' && node !== null ? (node as Record<PropertyKey, unknown>)[key] : undefined;
    if (typeof key === 'number') {
      text += `[${key}]`;
      const id = typeof node === 'object' && node !== null ? (node as { id?: unknown }).id : undefined;
      if (text === `cases[${key}]` && typeof id === 'string') text += ` (id "${id}")`;
    } else {
      text += text ? `.${String(key)}` : String(key);
    }
  }
  return text;
}
