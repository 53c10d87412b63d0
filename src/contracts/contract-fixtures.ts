// Recorded answers of a tool's backend, one fixture per tool and scenario (a success, an empty
// result, a business error, an unavailable backend), written by `toolgate contract record` and read
// by `toolgate contract test` and `check`. Pure: the format, what answer fits which scenario, and how
// two recordings differ; fixture-files.ts reads and writes them.
import { z } from 'zod';
import type { BackendResponse, RecordingScenario } from '../tools/define-tool-implementation';
import { recordingScenarios } from '../tools/define-tool-implementation';
import { compareText, layoutJson } from './contract-snapshot';

/** The fixture format's version; a file of another version is refused, never half read. */
export const contractFixtureVersion = 1;

/** The folder of fixtures next to the config file, unless `--fixtures` says otherwise. */
export const defaultFixturesDirectoryName = 'contract-fixtures';

/** One recorded answer: what was asked of which backend, when, and what came back, exactly. */
export interface ContractFixture {
  version: typeof contractFixtureVersion;
  tool: string;
  scenario: RecordingScenario;
  /** When the answer was recorded (ISO 8601); `toolgate contract check` warns once it is too old. */
  recordedAt: string;
  /** The backend: its base URL or a name, from the tool's recordings (or `--source`). */
  source: string;
  /** The tool's arguments, as the model would send them. */
  request: { args: Record<string, unknown> };
  /** The answer as it came: status (null when none arrived), body, and why none arrived. */
  response: BackendResponse;
}

/** A fixture's path inside the fixtures folder: `<tool>/<scenario>.json`. */
export function fixtureFileName(input: { tool: string; scenario: RecordingScenario }): string {
  return `${input.tool}/${input.scenario}.json`;
}

const fixtureSchema = z.strictObject({
  version: z.literal(contractFixtureVersion),
  tool: z.string().min(1),
  scenario: z.enum(recordingScenarios),
  recordedAt: z.iso.datetime({ offset: true }),
  source: z.string(),
  request: z.strictObject({ args: z.record(z.string(), z.unknown()) }),
  response: z.strictObject({
    status: z.int().min(100).max(599).nullable(),
    body: z.unknown(),
    error: z.string().optional(),
  }),
});

/**
 * Reads a fixture file's text. Never throws: a file that is not JSON, not a fixture or of another
 * version answers `ok: false` with what is wrong and where.
 */
export function parseContractFixture(
  text: string,
): { ok: true; fixture: ContractFixture } | { ok: false; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `not JSON (${(error as Error).message})` };
  }
  const version = (value as { version?: unknown } | null)?.version;
  if (typeof version === 'number' && version !== contractFixtureVersion) {
    return {
      ok: false,
      message: `version ${version}; this toolgate reads version ${contractFixtureVersion}`,
    };
  }
  const parsed = fixtureSchema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.length ? issue.path.join('.') : '(file)'}: ${issue.message}`)
      .join('; ');
    return { ok: false, message: `not a contract fixture (${problems})` };
  }
  const { response, ...rest } = parsed.data;
  return {
    ok: true,
    fixture: {
      ...rest,
      response: {
        status: response.status,
        body: response.body ?? null,
        ...(response.error !== undefined ? { error: response.error } : {}),
      },
    },
  };
}

/** A fixture as its file's text: two-space JSON laid out as the contract snapshot is, a newline at the end. */
export function serializeContractFixture(fixture: ContractFixture): string {
  const { response } = fixture;
  return layoutJson({
    version: fixture.version,
    tool: fixture.tool,
    scenario: fixture.scenario,
    recordedAt: fixture.recordedAt,
    source: fixture.source,
    request: { args: fixture.request.args },
    response: {
      status: response.status,
      body: response.body,
      ...(response.error !== undefined ? { error: response.error } : {}),
    },
  });
}

/**
 * Whether an answer can stand for a scenario, by its status alone (never by what the adapter makes of
 * it, which is what `contract test` checks): a success or empty result is a 2xx, a business error a
 * 4xx, an unavailable backend no answer or a 5xx. Otherwise, why not.
 */
export function answerFits(input: {
  scenario: RecordingScenario;
  response: BackendResponse;
}): { ok: true } | { ok: false; message: string } {
  const { scenario, response } = input;
  const { status } = response;
  const expected: Record<RecordingScenario, { fits: boolean; what: string }> = {
    success: { fits: status !== null && status >= 200 && status < 300, what: 'a success (2xx)' },
    empty: { fits: status !== null && status >= 200 && status < 300, what: 'a success (2xx)' },
    'business-error': {
      fits: status !== null && status >= 400 && status < 500,
      what: 'a business error (4xx)',
    },
    unavailable: { fits: status === null || status >= 500, what: 'no answer or a 5xx' },
  };
  const { fits, what } = expected[scenario];
  if (fits) return { ok: true };
  return { ok: false, message: `the backend answered ${describeAnswer(response)}, not ${what}` };
}

/** An answer in a few words: `no answer (ECONNREFUSED)`, `401 (CREDENTIAL_MISSING: ...)`. */
export function describeAnswer(response: BackendResponse): string {
  if (response.status === null) return `no answer (${response.error ?? 'unknown reason'})`;
  const body = response.body as { code?: unknown; message?: unknown } | null;
  if (typeof body === 'object' && body !== null && typeof body.code === 'string') {
    const message = typeof body.message === 'string' ? `: ${truncate(body.message, 120)}` : '';
    return `${response.status} (${body.code}${message})`;
  }
  return String(response.status);
}

function truncate(text: string, length: number): string {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`;
}

/**
 * The body of `next` with the values at `paths` (dot paths, `[]` for every item of a list) taken from
 * `previous` wherever both have a value there of the same JSON type: ids and timestamps that differ on
 * every recording stay as they were, so a re-recording's diff shows only what really changed. A
 * value whose type changed, or that appeared or went, is the new one. Pure: returns a copy.
 */
export function keepVolatileValues(input: {
  previous: unknown;
  next: unknown;
  paths: readonly string[];
}): unknown {
  const result: unknown = structuredClone(input.next);
  for (const path of input.paths) {
    const segments = path.split(/\.|(?=\[\])/).filter((segment) => segment !== '');
    carry({ previous: input.previous, next: result, segments });
  }
  return result;
}

function carry(input: { previous: unknown; next: unknown; segments: string[] }): void {
  const [segment, ...rest] = input.segments;
  const { previous, next } = input;
  if (segment === undefined || typeof previous !== 'object' || previous === null) return;
  if (typeof next !== 'object' || next === null) return;
  if (segment === '[]') {
    if (!Array.isArray(previous) || !Array.isArray(next)) return;
    const before = previous as unknown[];
    (next as unknown[]).forEach((item, index, after) => {
      if (rest.length === 0) {
        if (index < before.length && jsonType(before[index]) === jsonType(item)) {
          after[index] = structuredClone(before[index]);
        }
      } else carry({ previous: before[index], next: item, segments: rest });
    });
    return;
  }
  if (Array.isArray(next) || Array.isArray(previous)) return;
  const before = previous as Record<string, unknown>;
  const after = next as Record<string, unknown>;
  if (!Object.hasOwn(before, segment) || !Object.hasOwn(after, segment)) return;
  if (rest.length > 0) {
    carry({ previous: before[segment], next: after[segment], segments: rest });
  } else if (jsonType(before[segment]) === jsonType(after[segment])) {
    after[segment] = structuredClone(before[segment]);
  }
}

/** A value's JSON type: `string`, `number`, `boolean`, `null`, `array`, `object`. */
export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** One difference in shape between two recordings of a scenario: a path whose JSON type changed, appeared or went. */
export interface ShapeChange {
  /** `status`, or a path in the body: `body.remaining_cents`, `body.items[].sku`. */
  path: string;
  /** The JSON type (or the status) before, `absent` when there was none. */
  before: string;
  after: string;
}

/**
 * How the shape of `next` differs from `previous`: the status, and every path of the body whose JSON
 * type changed, appeared or went (values never count: they change on every recording). Sorted by path.
 */
export function shapeChanges(previous: BackendResponse, next: BackendResponse): ShapeChange[] {
  const changes: ShapeChange[] = [];
  if (previous.status !== next.status) {
    changes.push({ path: 'status', before: String(previous.status), after: String(next.status) });
  }
  const before = shapeOf(previous.body, 'body');
  const after = shapeOf(next.body, 'body');
  const paths = [...new Set([...before.keys(), ...after.keys()])].sort(compareText);
  for (const path of paths) {
    const was = before.get(path) ?? 'absent';
    const is = after.get(path) ?? 'absent';
    if (was !== is) changes.push({ path, before: was, after: is });
  }
  return changes;
}

/** Each path of a JSON value with its types (a list's items merged under `[]`). */
function shapeOf(value: unknown, root: string): Map<string, string> {
  const types = new Map<string, Set<string>>();
  const visit = (item: unknown, path: string): void => {
    const type = jsonType(item);
    types.set(path, (types.get(path) ?? new Set()).add(type));
    if (type === 'array') for (const element of item as unknown[]) visit(element, `${path}[]`);
    if (type === 'object') {
      for (const [key, child] of Object.entries(item as Record<string, unknown>)) {
        visit(child, `${path}.${key}`);
      }
    }
  };
  visit(value, root);
  return new Map([...types].map(([path, set]) => [path, [...set].sort(compareText).join(' | ')]));
}
