// `toolgate eval`: the selection suite against the configured model. It runs no tool and needs no
// Temporal: one Chat Completions request per case, the first decision judged, the metrics checked
// against their thresholds. Exit 0 passed, 1 a threshold missed, 2 a case got no decision (or bad usage).
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import type { LoadedConfig } from '../config';
import type { ChatEndpoint } from '../evals/first-decision';
import { firstListedModel } from '../evals/first-decision';
import type { SelectionCaseFile, SelectionSet } from '../evals/selection-cases';
import { loadSelectionCases } from '../evals/selection-cases';
import type { SelectionCaseResult, SelectionMetrics } from '../evals/selection-metrics';
import { recordSelectionInSnapshot, selectionRecordOf } from '../evals/selection-record';
import type { SelectionReport } from '../evals/selection-suite';
import {
  defaultSelectionConcurrency,
  defaultSelectionRetries,
  defaultSelectionTimeoutMs,
  runSelectionSuite,
} from '../evals/selection-suite';
import { callerContracts, policyCallers, selectionToolDefinitions } from '../evals/selection-tools';
import type { CliContext, CliOutput, GlobalOptions } from './cli-context';
import { commandAction, configOf } from './cli-context';
// The snapshot `toolgate contract snapshot` writes: a passing full run is recorded in it.
import { defaultSnapshotFileName, snapshotPath } from './contract-commands';

type EvalOptions = GlobalOptions & {
  cases?: string;
  set: SelectionSet;
  concurrency: number;
  caller?: string;
  timeout: number;
  retries: number;
  maxTokens?: number;
  minToolAccuracy?: number;
  minArgumentAccuracy?: number;
  maxSpuriousRate?: number;
  snapshot?: string;
};

/** The case file `toolgate eval` reads without --cases, next to the config. */
const defaultCasesFile = 'selection-cases.json';

const environmentHelp = `
Environment (the same as the agent example's):
  LLM_BASE_URL   the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (required)
  LLM_MODEL      the model on it (default: the first it lists)
  LLM_API_KEY    its API key, if it wants one

Exit codes: 0 every threshold met; 1 a threshold missed; 2 a case got no decision (timeout, HTTP
error: the run is incomplete), or bad usage, config or case file.`;

/** Adds `eval`: the selection suite (first decisions only) against the model at LLM_BASE_URL. */
export function addEvalCommand(program: Command, context: CliContext): void {
  program
    .command('eval')
    .description(
      "ask the model for its first decision on each labelled case, with the caller's tools, and check " +
        'tool accuracy, argument accuracy and the spurious-call rate against thresholds (no tool runs)',
    )
    .option('--cases <file>', `the case file (default: ${defaultCasesFile} next to the config)`)
    .addOption(
      new Option('--set <set>', 'critical: the cases tagged critical; full: every case')
        .choices(['critical', 'full'])
        .default('critical'),
    )
    .option('--caller <name>', "whose tools the model is offered (default: the case file's caller)")
    .option('--concurrency <n>', 'cases in flight at once', parseWholeNumber(1), defaultSelectionConcurrency)
    .option('--timeout <ms>', 'how long one request may take', parseWholeNumber(1), defaultSelectionTimeoutMs)
    .option(
      '--retries <n>',
      'more attempts after a connection failure, a timeout, a 429 or a 5xx',
      parseWholeNumber(0),
      defaultSelectionRetries,
    )
    .option('--max-tokens <n>', 'sent as max_tokens (default: not sent)', parseWholeNumber(1))
    .option('--min-tool-accuracy <x>', 'threshold, 0 to 1 (default: the case file, else 0.95)', parseRatio)
    .option(
      '--min-argument-accuracy <x>',
      'threshold, 0 to 1 (default: the case file, else 0.90)',
      parseRatio,
    )
    .option('--max-spurious-rate <x>', 'threshold, 0 to 1 (default: the case file, else 0.02)', parseRatio)
    .option(
      '--snapshot <file>',
      `the contract snapshot a passing full run is recorded in, if it exists (default: contracts.snapshotPath in the config, else ${defaultSnapshotFileName} next to it)`,
    )
    .addHelpText('after', environmentHelp)
    .action(
      commandAction(context, (_options: unknown, command: Command) =>
        evalCommand({ options: command.optsWithGlobals<EvalOptions>(), context }),
      ),
    );
}

async function evalCommand(input: { options: EvalOptions; context: CliContext }): Promise<number> {
  const { options, context } = input;
  const { output } = context;
  const baseURL = process.env.LLM_BASE_URL;
  if (!baseURL) {
    output.error(
      'toolgate eval: set LLM_BASE_URL to an OpenAI-compatible endpoint (e.g. http://127.0.0.1:8080/v1); ' +
        'LLM_MODEL names the model (default: the first it lists), LLM_API_KEY its key if it wants one',
    );
    return 2;
  }
  const config = configOf(options);
  const file = loadSelectionCases({
    path: options.cases ?? resolve(dirname(config.source), defaultCasesFile),
  });
  const caller = callerOf({ options, file, config });
  if (!caller.ok) {
    output.error(caller.message);
    return 2;
  }
  const tools = selectionToolDefinitions({
    contracts: callerContracts({ tools: config.tools, policyPath: config.policyPath, caller: caller.name }),
  });
  const endpoint: ChatEndpoint = {
    baseURL,
    ...(process.env.LLM_API_KEY ? { apiKey: process.env.LLM_API_KEY } : {}),
  };
  const budget = {
    timeoutMs: options.timeout,
    retries: options.retries,
    ...(context.signal ? { signal: context.signal } : {}),
  };
  let model = process.env.LLM_MODEL;
  if (!model) {
    const listed = await firstListedModel({ endpoint, budget });
    if (!listed.ok) {
      output.error(
        `toolgate eval: no LLM_MODEL, and the endpoint's models cannot be listed: ${listed.error}`,
      );
      return 2;
    }
    model = listed.model;
  }

  const thresholds = {
    ...(options.minToolAccuracy !== undefined ? { minToolAccuracy: options.minToolAccuracy } : {}),
    ...(options.minArgumentAccuracy !== undefined
      ? { minArgumentAccuracy: options.minArgumentAccuracy }
      : {}),
    ...(options.maxSpuriousRate !== undefined ? { maxSpuriousCallRate: options.maxSpuriousRate } : {}),
  };
  const width = String(file.cases.length).length;
  output.error(
    `toolgate eval: the ${options.set} set of ${file.source}, model ${model} at ${baseURL}, ` +
      `tools of ${caller.name} (${tools.map((tool) => tool.function.name).join(', ') || 'none'}), ` +
      `${options.concurrency} at a time`,
  );
  const report = await runSelectionSuite({
    file,
    set: options.set,
    tools,
    caller: caller.name,
    endpoint,
    model,
    thresholds,
    concurrency: options.concurrency,
    timeoutMs: options.timeout,
    retries: options.retries,
    ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
    ...(context.signal ? { signal: context.signal } : {}),
    onProgress: ({ done, total, result }) =>
      output.error(
        `  [${String(done).padStart(width)}/${total}] ${result.verdict.padEnd(15)} ${result.id} (${result.durationMs} ms)`,
      ),
  });

  const record = selectionRecordOf(report);
  const snapshotFile = snapshotPath({ config, given: options.snapshot });
  let recordedIn: string | null = null;
  if (record) {
    const written = recordSelectionInSnapshot({ path: snapshotFile, record });
    if (written.ok) {
      recordedIn = snapshotFile;
      output.error(`recorded in ${snapshotFile}: the full set passed with ${record.model} at ${record.at}`);
    } else {
      output.error(written.message);
    }
  }

  if (options.json) {
    output.out(
      JSON.stringify({
        ...report,
        failures: report.results.filter((result) => isFailure(result)),
        errors: report.results.filter((result) => result.verdict === 'error'),
        selection: record ?? null,
        recordedIn,
      }),
    );
  } else {
    printReport({ report, output });
  }
  if (report.counts.errors) return 2;
  return report.missed.length ? 1 : 0;
}

/** The caller: the flag, else the case file's, else the policy's only one. */
function callerOf(input: {
  options: EvalOptions;
  file: SelectionCaseFile;
  config: LoadedConfig;
}): { ok: true; name: string } | { ok: false; message: string } {
  const named = input.options.caller ?? input.file.caller;
  if (named !== undefined) return { ok: true, name: named };
  const callers = Object.keys(policyCallers({ policyPath: input.config.policyPath }));
  if (callers.length === 1) return { ok: true, name: callers[0]! };
  return {
    ok: false,
    message:
      `toolgate eval: whose tools should the model see? Pass --caller <name> or set "caller" in ${input.file.source}; ` +
      `the policy's callers: ${callers.join(', ') || '(none)'}`,
  };
}

const metricNames: Record<keyof SelectionMetrics, string> = {
  toolAccuracy: 'tool accuracy',
  argumentAccuracy: 'argument accuracy',
  spuriousCallRate: 'spurious-call rate',
};

function isFailure(result: SelectionCaseResult): boolean {
  return result.verdict !== 'correct' && result.verdict !== 'error';
}

function printReport(input: { report: SelectionReport; output: CliOutput }): void {
  const { report, output } = input;
  const { counts } = report;
  output.out(
    `selection suite, ${report.set} set: ${counts.cases} cases (${counts.positive} positive, ${counts.negative} negative), ` +
      `model ${report.model}${report.caller !== undefined ? `, tools of ${report.caller}` : ''}`,
  );
  const failures = report.results.filter(isFailure);
  if (failures.length) {
    output.out(`\nFAILURES (${failures.length})`);
    printTable(output, [
      ['CASE', 'EXPECTED', 'GOT', 'WHY'],
      ...failures.map((result) => [
        result.id,
        result.expected ?? 'none',
        result.calledTools?.length ? result.calledTools.join(', ') : 'none',
        whyOf(result),
      ]),
    ]);
  }
  const errors = report.results.filter((result) => result.verdict === 'error');
  if (errors.length) {
    output.out(`\nERRORS (${errors.length}): no decision, counted in no metric`);
    printTable(output, [['CASE', 'ERROR'], ...errors.map((result) => [result.id, result.error ?? ''])]);
  }
  output.out('');
  const missed = new Set(report.missed.map((miss) => miss.metric));
  const thresholdOf: Record<keyof SelectionMetrics, string> = {
    toolAccuracy: `>= ${thresholdText(report.thresholds.minToolAccuracy)}`,
    argumentAccuracy: `>= ${thresholdText(report.thresholds.minArgumentAccuracy)}`,
    spuriousCallRate: `<= ${thresholdText(report.thresholds.maxSpuriousCallRate)}`,
  };
  printTable(output, [
    ['METRIC', 'VALUE', 'COUNT', 'THRESHOLD', ''],
    ...(Object.keys(metricNames) as (keyof SelectionMetrics)[]).map((metric) => {
      const { value, numerator, denominator } = report.metrics[metric];
      return [
        metricNames[metric],
        value === null ? 'n/a' : value.toFixed(3),
        `${numerator}/${denominator}`,
        thresholdOf[metric],
        value === null ? 'nothing to count' : missed.has(metric) ? 'MISSED' : 'ok',
      ];
    }),
  ]);
  output.out('');
  if (errors.length) {
    output.out(
      `INCOMPLETE: ${errors.length} of ${counts.cases} cases got no decision; fix the endpoint and run again`,
    );
  } else if (report.missed.length) {
    output.out(
      `FAILED: ${report.missed.map((miss) => `${metricNames[miss.metric]} ${miss.value.toFixed(3)}`).join(', ')} ` +
        `outside the threshold${report.missed.length > 1 ? 's' : ''}`,
    );
  } else {
    output.out('PASSED: every threshold met');
  }
}

/** The failure table's WHY: what the model did instead, and which argument was wrong and how. */
function whyOf(result: SelectionCaseResult): string {
  switch (result.verdict) {
    case 'wrong-tool':
      return `called ${result.calledTools?.join(', ')}; expected ${result.expected} only`;
    case 'no-call':
      return `called no tool${result.text ? `; answered: ${JSON.stringify(result.text)}` : ''}`;
    case 'spurious-call':
      return `called a tool on a negative case, with ${result.arguments ?? '(no arguments)'}`;
    case 'wrong-arguments':
      return (result.mismatches ?? [])
        .map((mismatch) => `${mismatch.argument}: ${mismatch.reason}`)
        .join('; ');
    case 'correct':
    case 'error':
      return result.error ?? '';
  }
}

/** 0.9 as 0.90, as the defaults are written; a finer threshold keeps its digits. */
function thresholdText(value: number): string {
  return Math.abs(value * 100 - Math.round(value * 100)) < 1e-9 ? value.toFixed(2) : String(value);
}

function printTable(output: CliOutput, rows: readonly (readonly string[])[]): void {
  const widths = rows[0]!.map((_, column) =>
    // The last column is not padded, so a long reason does not widen every row.
    column === rows[0]!.length - 1 ? 0 : Math.max(...rows.map((row) => (row[column] ?? '').length)),
  );
  for (const row of rows) {
    output.out(
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    );
  }
}

function parseWholeNumber(minimum: number): (value: string) => number {
  return (value) => {
    const number = Number(value);
    if (!Number.isSafeInteger(number) || number < minimum) {
      throw new InvalidArgumentError(`a whole number of ${minimum} or more.`);
    }
    return number;
  };
}

function parseRatio(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number < 0 || number > 1) {
    throw new InvalidArgumentError('a number from 0 to 1, e.g. 0.95.');
  }
  return number;
}
