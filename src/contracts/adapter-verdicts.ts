// `toolgate contract test` on one fixture: the tool's output adapter runs on the recorded answer, then
// the output schema on what it made of it, and the scenario says what it had to make: a success or
// an empty result must adapt and parse; a business error must become one of the tool's domain codes;
// an unavailable backend must become a transient error (retried, then UPSTREAM_UNAVAILABLE). A field
// the schema requires and the adapter could not find is named by its path, with the field of the
// answer it most likely went to. Runs the adapter (user code, pure by contract); no other I/O.
import type { z } from 'zod';
import { declaresDomainCode } from '../tools/define-tool';
import type { ImplementedTool, RecordingScenario } from '../tools/define-tool-implementation';
import { toolErrorKind } from '../tools/tool-errors';
import type { ContractFixture } from './contract-fixtures';
import { describeAnswer, jsonType } from './contract-fixtures';
import { compareText } from './contract-snapshot';

/** What an adapter made of a recorded answer. */
export type AdapterOutcome =
  | { kind: 'output'; output: unknown }
  | { kind: 'rejection'; code: string; message: string }
  | { kind: 'transient'; message: string }
  | { kind: 'error'; message: string }
  | { kind: 'no-adapter' };

/** One reason a fixture fails: where (`output.remaining_refundable_cents`), when it is a field, and what. */
export interface FixtureProblem {
  path?: string;
  message: string;
}

/** The verdict on one fixture. */
export interface FixtureTestResult {
  tool: string;
  scenario: RecordingScenario;
  /** False when any problem was found. */
  ok: boolean;
  outcome: AdapterOutcome;
  problems: FixtureProblem[];
  /** What does not fail the test but is worth knowing (arguments the input schema now refuses). */
  notes: string[];
}

/**
 * Runs `tool`'s output adapter on a fixture's answer and judges what it made of it by the fixture's
 * scenario (see the top of this file). Never throws: an adapter that throws is an outcome.
 */
export function testContractFixture(input: {
  tool: ImplementedTool;
  fixture: ContractFixture;
}): FixtureTestResult {
  const { tool, fixture } = input;
  const { contract } = tool;
  const result = (outcome: AdapterOutcome, problems: FixtureProblem[], notes: string[] = []) => ({
    tool: fixture.tool,
    scenario: fixture.scenario,
    ok: problems.length === 0,
    outcome,
    problems,
    notes,
  });
  const adapter = tool.implementation.output;
  if (!adapter) {
    return result({ kind: 'no-adapter' }, [
      {
        message:
          'the implementation declares no output adapter: declare output: { request, adapt } so its recorded answers can be tested',
      },
    ]);
  }
  const notes: string[] = [];
  const parsedArgs = contract.input.safeParse(fixture.request.args);
  if (!parsedArgs.success) {
    notes.push(
      `recorded with arguments the input schema now refuses (${parsedArgs.error.issues
        .map((issue) => `${issue.path.join('.') || '(arguments)'}: ${issue.message}`)
        .join('; ')}); re-record it`,
    );
  }
  const args: unknown = parsedArgs.success ? parsedArgs.data : fixture.request.args;
  const tracked = trackReads(structuredClone(fixture.response.body));
  let outcome = adapt({ adapter, fixture, args, body: tracked.value });
  // What the adapter read, before the schema reads the output (a field passed on as it came is the answer's).
  let reads = new Set(tracked.reads);
  // An adapter that cannot work on the read-tracking copy (it clones the body, say) gets the plain one.
  if (outcome.kind === 'error') {
    reads = new Set();
    outcome = adapt({ adapter, fixture, args, body: structuredClone(fixture.response.body) });
  }
  const answer = describeAnswer(fixture.response);
  const problems: FixtureProblem[] = [];
  const expectedCode = tool.implementation.recordings?.scenarios['business-error']?.code;
  switch (fixture.scenario) {
    case 'success':
    case 'empty':
      if (outcome.kind === 'output') {
        problems.push(
          ...outputProblems({
            schema: contract.output,
            output: outcome.output,
            body: fixture.response.body,
            reads,
          }),
        );
      } else problems.push({ message: `${unexpected(outcome)} for a success, ${answer}` });
      break;
    case 'business-error':
      if (outcome.kind !== 'rejection') {
        problems.push({
          message:
            `${unexpected(outcome)} for a business error, ${answer}: ` +
            "throw toolRejection({ code, message }) with one of the tool's domain codes, so the model reads what to fix",
        });
      } else if (!declaresDomainCode(contract, outcome.code)) {
        const declared = Object.keys(contract.domainCodes);
        problems.push({
          message:
            `answers ${outcome.code}, which is not one of the tool's domain codes ` +
            `(${declared.length ? declared.join(', ') : 'none declared'}): the model would get INTERNAL_ERROR`,
        });
      } else if (expectedCode !== undefined && outcome.code !== expectedCode) {
        problems.push({ message: `answers ${outcome.code}; the recordings expect ${expectedCode}` });
      }
      break;
    case 'unavailable':
      if (outcome.kind !== 'transient') {
        problems.push({
          message:
            `${unexpected(outcome)} for an unavailable backend, ${answer}: throw transientToolError({ message }), ` +
            'so the call is retried and then answered UPSTREAM_UNAVAILABLE',
        });
      }
      break;
  }
  return result(outcome, problems, notes);
}

function adapt(input: {
  adapter: NonNullable<ImplementedTool['implementation']['output']>;
  fixture: ContractFixture;
  args: unknown;
  body: unknown;
}): AdapterOutcome {
  try {
    const output = input.adapter.adapt({
      response: { ...input.fixture.response, body: input.body },
      args: input.args,
    });
    return { kind: 'output', output };
  } catch (error) {
    const kind = toolErrorKind(error);
    const message = error instanceof Error ? error.message : String(error);
    if (kind === 'rejection') return { kind, code: (error as { code: string }).code, message };
    if (kind === 'transient') return { kind, message };
    return { kind: 'error', message };
  }
}

/** What the adapter did instead, in a few words. */
function unexpected(outcome: AdapterOutcome): string {
  switch (outcome.kind) {
    case 'output':
      return 'the adapter made an output';
    case 'rejection':
      return `the adapter refused with ${outcome.code}`;
    case 'transient':
      return 'the adapter took it for an outage';
    case 'error':
      return `the adapter threw (${outcome.message}): the model would get INTERNAL_ERROR`;
    case 'no-adapter':
      return 'no adapter ran';
  }
}

/** The output schema's complaints about an output, each at its path and, for a missing field, where it went. */
function outputProblems(input: {
  schema: z.ZodType;
  output: unknown;
  body: unknown;
  reads: Set<string>;
}): FixtureProblem[] {
  const checked = input.schema.safeParse(input.output);
  if (checked.success) return [];
  const present = pathsOf(input.body);
  const problems: FixtureProblem[] = [];
  const missing = checked.error.issues.filter((issue) => {
    if (issue.code === 'unrecognized_keys') return false;
    const found = valueAt(input.output, issue.path as (string | number)[]);
    return !found.found || found.value === undefined;
  }).length;
  for (const issue of checked.error.issues) {
    const segments = issue.path.filter((segment): segment is string | number => typeof segment !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        problems.push({
          path: outputPath([...segments, key]),
          message: 'not in the output schema: the adapter passes on a field the tool does not declare',
        });
      }
      continue;
    }
    const path = outputPath(segments);
    const value = valueAt(input.output, segments);
    if (value.found === false || value.value === undefined) {
      const hint = whereItWent({ field: segments.at(-1), present, reads: input.reads, missing });
      problems.push({ path, message: `required, missing (${hint})` });
    } else if (issue.code === 'invalid_value') {
      problems.push({
        path,
        message: `${JSON.stringify(value.value)} is not one of ${issue.values.map((item) => JSON.stringify(item)).join(', ')}`,
      });
    } else if (issue.code === 'invalid_type') {
      problems.push({
        path,
        message: `expected ${issue.expected}, got ${jsonType(value.value)} ${truncatedJson(value.value)}`,
      });
    } else {
      problems.push({ path, message: `${issue.message} (got ${truncatedJson(value.value)})` });
    }
  }
  return problems;
}

/** `output`, `output.items[0].sku`: a path in the tool's output as the schema reports it. */
function outputPath(segments: readonly (string | number)[]): string {
  return segments.reduce<string>(
    (path, segment) => (typeof segment === 'number' ? `${path}[${segment}]` : `${path}.${segment}`),
    'output',
  );
}

function valueAt(
  value: unknown,
  segments: readonly (string | number)[],
): { found: boolean; value?: unknown } {
  let current = value;
  for (const segment of segments) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, segment)) {
      return { found: false };
    }
    current = (current as Record<string | number, unknown>)[segment];
  }
  return { found: true, value: current };
}

function truncatedJson(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= 60 ? text : `${text.slice(0, 59)}…`;
}

/**
 * Where a missing field most likely went: a field of the answer the adapter never read whose name is
 * most like it, or like the field the adapter looked for in its place (the same name elsewhere: it
 * moved; most words in common: it was renamed), else the field the adapter read that the answer lacks.
 */
function whereItWent(input: {
  field: string | number | undefined;
  present: Set<string>;
  reads: Set<string>;
  /** How many output fields are missing: with one, the one field the adapter could not find is its. */
  missing: number;
}): string {
  const { present, reads } = input;
  const field = String(input.field ?? '');
  const absent = [...reads].filter((path) => !present.has(path));
  // The field the adapter read in this one's place: the most alike by name, else the only one.
  const paired =
    absent
      .map((path) => ({ path, score: similarity(field, leafOf(path)) }))
      .filter((candidate) => candidate.score > 0)
      .sort((a, b) => b.score - a.score || compareText(a.path, b.path))[0]?.path ??
    (absent.length === 1 && input.missing === 1 ? absent[0] : undefined);
  const names = [field, ...(paired !== undefined ? [leafOf(paired)] : [])].filter((name) => name !== '');
  const unread = [...present].filter((path) => !reads.has(path) && path !== '');
  const candidates = unread
    .map((path) => ({ path, score: Math.max(0, ...names.map((name) => similarity(name, leafOf(path)))) }))
    .filter((candidate) => candidate.score >= 0.5)
    .sort((a, b) => b.score - a.score || compareText(a.path, b.path));
  const best = candidates.filter((candidate) => candidate.score === candidates[0]?.score).slice(0, 3);
  if (best.length > 0) return `the response has ${best.map((candidate) => candidate.path).join(', or ')}`;
  if (paired !== undefined) return `the adapter reads ${paired}; the response has no such field`;
  return 'the response has no field like it';
}

/** A path's last name: `fulfillment.status` is `status`, `items[].sku` is `sku`. */
function leafOf(path: string): string {
  return path.replace(/\[\]$/, '').split('.').at(-1) ?? path;
}

/** Words in common over the longer name's words: 1 for the same name, 0 for none in common. */
function similarity(a: string, b: string): number {
  if (a === b) return 1;
  const words = (name: string): Set<string> =>
    new Set(
      name
        .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
        .toLowerCase()
        .split(/[^a-z0-9]+/)
        .filter((word) => word !== ''),
    );
  const left = words(a);
  const right = words(b);
  if (left.size === 0 || right.size === 0) return 0;
  const shared = [...left].filter((word) => right.has(word)).length;
  return shared / Math.max(left.size, right.size);
}

/** Every path of a JSON value but the root: `order_id`, `fulfillment.status`, `items[]`, `items[].sku`. */
function pathsOf(value: unknown): Set<string> {
  const paths = new Set<string>();
  const visit = (item: unknown, path: string): void => {
    if (path !== '') paths.add(path);
    if (Array.isArray(item)) for (const element of item) visit(element, `${path}[]`);
    else if (typeof item === 'object' && item !== null) {
      for (const [key, child] of Object.entries(item)) visit(child, path === '' ? key : `${path}.${key}`);
    }
  };
  visit(value, '');
  return paths;
}

/**
 * A copy of a JSON value that notes each path read from it (items of a list under `[]`), so a missing
 * field can be told from the fields the adapter never looked at.
 */
function trackReads(value: unknown): { value: unknown; reads: Set<string> } {
  const reads = new Set<string>();
  const wrap = (item: unknown, path: string): unknown => {
    if (typeof item !== 'object' || item === null) return item;
    const isList = Array.isArray(item);
    return new Proxy(item, {
      get(target, key, receiver) {
        const child: unknown = Reflect.get(target, key, receiver);
        if (typeof key === 'symbol' || (isList && !/^\d+$/.test(key))) return child;
        const childPath = isList ? `${path}[]` : path === '' ? key : `${path}.${key}`;
        reads.add(childPath);
        return wrap(child, childPath);
      },
    });
  };
  return { value: wrap(value, ''), reads };
}
