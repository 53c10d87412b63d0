// Judging a first decision against its case, and the suite's three metrics. Pure: the runner feeds
// decisions in, and the same decisions always give the same verdicts and figures.
import type { ArgumentMismatch } from './argument-matchers';
import { matchArgument } from './argument-matchers';
import type { ModelDecision } from './first-decision';
import type { SelectionCase, SelectionThresholds } from './selection-cases';

/**
 * A case's verdict. `error` is a case with no decision (a timeout, an HTTP error): it counts in no
 * metric, and the run cannot pass with one.
 */
export type SelectionVerdict =
  /** The expected tool with its critical arguments, or no tool on a negative case. */
  | 'correct'
  /** The expected tool, with a critical argument wrong or missing. */
  | 'wrong-arguments'
  /** Another tool first, or another tool besides the expected one, on a positive case. */
  | 'wrong-tool'
  /** No tool on a positive case. */
  | 'no-call'
  /** A tool on a negative case. */
  | 'spurious-call'
  | 'error';

/** One case's outcome, as the report and the failure table show it. */
export interface SelectionCaseResult {
  id: string;
  tags: string[];
  /** The expected tool, or null for a negative case. */
  expected: string | null;
  verdict: SelectionVerdict;
  /** The tools the answer called, in order; absent when there was no answer. */
  calledTools?: string[];
  /** The arguments of the call the critical arguments were compared with, as the model wrote them. */
  arguments?: string;
  /** The answer's text, cut short, when it called no tool. */
  text?: string;
  /** The critical arguments that did not match (verdict `wrong-arguments`). */
  mismatches?: ArgumentMismatch[];
  /** Why there is no decision (verdict `error`). */
  error?: string;
  durationMs: number;
}

/** A metric as a fraction: `value` is null when there is nothing to count (no negative case, say). */
export interface Ratio {
  value: number | null;
  numerator: number;
  denominator: number;
}

/** The suite's metrics over the cases that got a decision. */
export interface SelectionMetrics {
  /** Cases where the expected tool (or none) was chosen, over all decided cases. */
  toolAccuracy: Ratio;
  /** Positive cases whose critical arguments all match, over the positive cases where the right tool was chosen. */
  argumentAccuracy: Ratio;
  /** Negative cases where any tool was called, over the negative cases. */
  spuriousCallRate: Ratio;
}

/** A threshold the run missed. */
export interface ThresholdMiss {
  metric: keyof SelectionMetrics;
  value: number;
  threshold: number;
  /** The accuracies must reach their threshold; the spurious-call rate must not exceed its own. */
  bound: 'min' | 'max';
}

/** Judges one decision: only the first call's tool and critical arguments count, and any call on a negative case. */
export function judgeDecision(input: {
  testCase: SelectionCase;
  decision: ModelDecision;
}): Pick<SelectionCaseResult, 'verdict' | 'calledTools' | 'arguments' | 'text' | 'mismatches'> {
  const { testCase, decision } = input;
  const calledTools = decision.calls.map((call) => call.name);
  const seen = {
    calledTools,
    ...(decision.text !== null && calledTools.length === 0 ? { text: cut(decision.text) } : {}),
  };
  const [first] = decision.calls;
  if (testCase.expectedTool === null) {
    return first
      ? { verdict: 'spurious-call', ...seen, arguments: first.arguments }
      : { verdict: 'correct', ...seen };
  }
  if (!first) return { verdict: 'no-call', ...seen };
  // Parallel calls of the expected tool are one decision (reading two orders); any other tool is not.
  if (calledTools.some((name) => name !== testCase.expectedTool)) {
    return { verdict: 'wrong-tool', ...seen, arguments: first.arguments };
  }
  const mismatches = argumentMismatches({ testCase, rawArguments: first.arguments });
  return mismatches.length
    ? { verdict: 'wrong-arguments', ...seen, arguments: first.arguments, mismatches }
    : { verdict: 'correct', ...seen, arguments: first.arguments };
}

function argumentMismatches(input: { testCase: SelectionCase; rawArguments: string }): ArgumentMismatch[] {
  const matchers = Object.entries(input.testCase.criticalArguments);
  if (!matchers.length) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(input.rawArguments);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    const reason = `the arguments are not a JSON object: ${cut(input.rawArguments)}`;
    return matchers.map(([argument]) => ({ argument, reason }));
  }
  const values = parsed as Record<string, unknown>;
  return matchers.flatMap(([argument, matcher]) => {
    const match = matchArgument({
      matcher,
      present: Object.hasOwn(values, argument),
      value: values[argument],
    });
    return match.ok ? [] : [{ argument, reason: match.reason }];
  });
}

/** The three metrics over the decided cases (errors left out). */
export function selectionMetrics(
  results: readonly Pick<SelectionCaseResult, 'expected' | 'verdict'>[],
): SelectionMetrics {
  const decided = results.filter((result) => result.verdict !== 'error');
  const positives = decided.filter((result) => result.expected !== null);
  const negatives = decided.filter((result) => result.expected === null);
  const rightTool = positives.filter(
    (result) => result.verdict === 'correct' || result.verdict === 'wrong-arguments',
  );
  return {
    toolAccuracy: ratio(
      decided.filter((result) => result.verdict === 'correct' || result.verdict === 'wrong-arguments').length,
      decided.length,
    ),
    argumentAccuracy: ratio(
      rightTool.filter((result) => result.verdict === 'correct').length,
      rightTool.length,
    ),
    spuriousCallRate: ratio(
      negatives.filter((result) => result.verdict === 'spurious-call').length,
      negatives.length,
    ),
  };
}

/** The thresholds the metrics miss; a metric with nothing to count misses none. */
export function missedThresholds(input: {
  metrics: SelectionMetrics;
  thresholds: SelectionThresholds;
}): ThresholdMiss[] {
  const { metrics, thresholds } = input;
  const checks: { metric: keyof SelectionMetrics; threshold: number; bound: 'min' | 'max' }[] = [
    { metric: 'toolAccuracy', threshold: thresholds.minToolAccuracy, bound: 'min' },
    { metric: 'argumentAccuracy', threshold: thresholds.minArgumentAccuracy, bound: 'min' },
    { metric: 'spuriousCallRate', threshold: thresholds.maxSpuriousCallRate, bound: 'max' },
  ];
  return checks.flatMap(({ metric, threshold, bound }) => {
    const { value } = metrics[metric];
    if (value === null) return [];
    const missed = bound === 'min' ? value < threshold : value > threshold;
    return missed ? [{ metric, value, threshold, bound }] : [];
  });
}

function ratio(numerator: number, denominator: number): Ratio {
  return { value: denominator ? numerator / denominator : null, numerator, denominator };
}

function cut(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
