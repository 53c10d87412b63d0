// The selection suite: each case's conversation sent once to the model with the caller's tools, its
// first decision judged, the metrics measured against the thresholds. Cases run concurrently, up to a
// limit; a case that gets no decision is an error, reported apart and counted in no metric.
import type { OpenAIChatTool } from '../providers/openai';
import type { ChatEndpoint } from './first-decision';
import { requestFirstDecision } from './first-decision';
import type {
  HistoryMessage,
  SelectionCase,
  SelectionCaseFile,
  SelectionSet,
  SelectionThresholds,
} from './selection-cases';
import { casesOfSet, checkCasesAgainstTools, defaultSelectionThresholds } from './selection-cases';
import type { SelectionCaseResult, SelectionMetrics, ThresholdMiss } from './selection-metrics';
import { judgeDecision, missedThresholds, selectionMetrics } from './selection-metrics';
import { ConfigurationError } from '../policy/load-policy';

/** Cases in flight at once unless told otherwise: enough to finish a critical set in well under a minute. */
export const defaultSelectionConcurrency = 4;
/** How long one request may take before it is an error. */
export const defaultSelectionTimeoutMs = 60_000;
/** More attempts a transient failure (connection, timeout, 429, 5xx) gets. */
export const defaultSelectionRetries = 2;

/** What {@link runSelectionSuite} needs; everything but the case file, the tools, the endpoint and the model has a default. */
export interface SelectionSuiteInput {
  file: SelectionCaseFile;
  /** `critical` (the default): the cases tagged critical; `full`: every case. */
  set?: SelectionSet;
  /** What the model is offered, as the agent offers it: `openAIChatTools` or {@link selectionToolDefinitions}. */
  tools: readonly OpenAIChatTool[];
  /** Who the tools are for, for messages. */
  caller?: string;
  endpoint: ChatEndpoint;
  model: string;
  /** Override the case file's thresholds, which override the defaults (0.95, 0.90, 0.02). */
  thresholds?: Partial<SelectionThresholds>;
  /** Cases in flight at once: a whole number, at least 1 (default 4). */
  concurrency?: number;
  /** How long one request may take: more than 0 (default 60 s). */
  timeoutMs?: number;
  /** More attempts a transient failure gets: a whole number, 0 or more (default 2). */
  retries?: number;
  /** Sent as `max_tokens` when given: a first decision needs few. */
  maxTokens?: number;
  /** Aborting it stops the run: cases not yet answered become errors. */
  signal?: AbortSignal;
  /** Called as each case finishes, in the order they finish. */
  onProgress?: (progress: { done: number; total: number; result: SelectionCaseResult }) => void;
}

/** A run's report: what ran, the metrics, the thresholds missed, and every case's result in file order. */
export interface SelectionReport {
  /** True when every threshold is met and every case got a decision. */
  ok: boolean;
  set: SelectionSet;
  model: string;
  caller?: string;
  startedAt: string;
  finishedAt: string;
  counts: { cases: number; positive: number; negative: number; errors: number };
  metrics: SelectionMetrics;
  thresholds: SelectionThresholds;
  missed: ThresholdMiss[];
  /** Every case, in file order. */
  results: SelectionCaseResult[];
}

/**
 * Runs the set's cases against the model: one Chat Completions request per case (`tool_choice:
 * auto`), no tool run, no second request. Checks the cases against the tools and the limits before
 * sending anything (a `ConfigurationError` when a case expects a tool that is not offered, or a limit
 * is not a number it can use); never throws for what the endpoint does: a failed request is that
 * case's error. Every case of the set gets a result.
 */
export async function runSelectionSuite(input: SelectionSuiteInput): Promise<SelectionReport> {
  const set = input.set ?? 'critical';
  const cases = casesOfSet({ file: input.file, set });
  checkCasesAgainstTools({
    file: input.file,
    cases,
    tools: input.tools,
    ...(input.caller !== undefined ? { offeredTo: input.caller } : {}),
  });
  const thresholds: SelectionThresholds = {
    ...defaultSelectionThresholds,
    ...input.file.thresholds,
    ...definedOnly(input.thresholds ?? {}),
  };
  const concurrency = checkedLimit({ name: 'concurrency', value: input.concurrency, least: 1, whole: true });
  const budget = {
    timeoutMs: checkedLimit({ name: 'timeoutMs', value: input.timeoutMs, least: 1, whole: false }),
    retries: checkedLimit({ name: 'retries', value: input.retries, least: 0, whole: true }),
    ...(input.signal ? { signal: input.signal } : {}),
  };
  const startedAt = new Date().toISOString();
  let done = 0;
  const results = await mapWithLimit(cases, concurrency, async (testCase) => {
    const result = await runCase({ input, testCase, budget });
    done += 1;
    input.onProgress?.({ done, total: cases.length, result });
    return result;
  });
  // A case without a result would count in no metric and pass unseen: never report on fewer cases.
  const missing = cases.filter((_testCase, index) => results[index] === undefined);
  if (missing.length) {
    throw new Error(`selection suite: no result for ${missing.map((testCase) => testCase.id).join(', ')}`);
  }
  const metrics = selectionMetrics(results);
  const missed = missedThresholds({ metrics, thresholds });
  const errors = results.filter((result) => result.verdict === 'error').length;
  return {
    ok: errors === 0 && missed.length === 0,
    set,
    model: input.model,
    ...(input.caller !== undefined ? { caller: input.caller } : {}),
    startedAt,
    finishedAt: new Date().toISOString(),
    counts: {
      cases: cases.length,
      positive: cases.filter((entry) => entry.expectedTool !== null).length,
      negative: cases.filter((entry) => entry.expectedTool === null).length,
      errors,
    },
    metrics,
    thresholds,
    missed,
    results,
  };
}

/** The messages a case sends: the system prompt, its history, the user's message. */
export function caseMessages(input: { system?: string; testCase: SelectionCase }): HistoryMessage[] {
  return [
    ...(input.system !== undefined ? [{ role: 'system' as const, content: input.system }] : []),
    ...input.testCase.history,
    { role: 'user', content: input.testCase.userMessage },
  ];
}

async function runCase(context: {
  input: SelectionSuiteInput;
  testCase: SelectionCase;
  budget: { timeoutMs: number; retries: number; signal?: AbortSignal };
}): Promise<SelectionCaseResult> {
  const { input, testCase } = context;
  const started = performance.now();
  const base = { id: testCase.id, tags: testCase.tags, expected: testCase.expectedTool };
  const outcome = await requestFirstDecision({
    endpoint: input.endpoint,
    model: input.model,
    messages: caseMessages({
      ...(input.file.system !== undefined ? { system: input.file.system } : {}),
      testCase,
    }),
    tools: input.tools,
    ...(input.maxTokens !== undefined ? { maxTokens: input.maxTokens } : {}),
    budget: context.budget,
  });
  const durationMs = Math.round(performance.now() - started);
  if (!outcome.ok) return { ...base, verdict: 'error', error: outcome.error, durationMs };
  return { ...base, ...judgeDecision({ testCase, decision: outcome.decision }), durationMs };
}

/** Maps with at most `limit` calls of `map` in flight; results in the items' order. `map` must not throw. */
async function mapWithLimit<T, R>(
  items: readonly T[],
  limit: number,
  map: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await map(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

const limitDefaults = {
  concurrency: defaultSelectionConcurrency,
  timeoutMs: defaultSelectionTimeoutMs,
  retries: defaultSelectionRetries,
} as const;

/** A limit as given, or its default; one that is not a number the run can use is refused, not guessed at. */
function checkedLimit(input: {
  name: keyof typeof limitDefaults;
  value: number | undefined;
  least: number;
  whole: boolean;
}): number {
  const { name, value, least, whole } = input;
  if (value === undefined) return limitDefaults[name];
  if (!Number.isFinite(value) || value < least || (whole && !Number.isInteger(value))) {
    throw new ConfigurationError(
      `runSelectionSuite: ${name} must be ${whole ? 'a whole number' : 'a number'} of at least ${least} ` +
        `(got ${String(value)}); leave it out for the default, ${limitDefaults[name]}`,
    );
  }
  return value;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}
