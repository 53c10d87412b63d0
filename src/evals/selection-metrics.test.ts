import { describe, expect, it } from 'vitest';
import type { SelectionCase } from './selection-cases';
import type { SelectionVerdict } from './selection-metrics';
import { judgeDecision, missedThresholds, selectionMetrics } from './selection-metrics';

const readCase: SelectionCase = {
  id: 'read',
  userMessage: 'What about ORD-1001?',
  history: [],
  expectedTool: 'get_order',
  criticalArguments: { order_id: { kind: 'equals', value: 'ORD-1001' } },
  tags: [],
};
const negativeCase: SelectionCase = { ...readCase, id: 'hello', expectedTool: null, criticalArguments: {} };
const call = (name: string, args: unknown) => ({
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
});
const judge = (
  testCase: SelectionCase,
  calls: { name: string; arguments: string }[],
  text: string | null = null,
) => judgeDecision({ testCase, decision: { calls, text } });

describe('judging a first decision', () => {
  it('accepts the expected tool with its critical arguments, whatever else it sent', () => {
    expect(judge(readCase, [call('get_order', { order_id: 'ORD-1001', extra: true })]).verdict).toBe(
      'correct',
    );
    // Parallel reads of the expected tool are one decision; the first call's arguments are compared.
    expect(
      judge(readCase, [
        call('get_order', { order_id: 'ORD-1001' }),
        call('get_order', { order_id: 'ORD-1002' }),
      ]).verdict,
    ).toBe('correct');
  });

  it('calls another tool besides the expected one a wrong tool', () => {
    const judged = judge(readCase, [call('get_order', { order_id: 'ORD-1001' }), call('refund_order', {})]);
    expect(judged).toMatchObject({ verdict: 'wrong-tool', calledTools: ['get_order', 'refund_order'] });
  });

  it('tells a missing call, a spurious call and arguments that are not JSON apart', () => {
    expect(judge(readCase, [], 'Which order?')).toMatchObject({ verdict: 'no-call', text: 'Which order?' });
    expect(judge(negativeCase, [call('get_order', { order_id: 'ORD-1001' })]).verdict).toBe('spurious-call');
    expect(judge(negativeCase, [], 'Hello!').verdict).toBe('correct');
    expect(judge(readCase, [call('get_order', '{"order_id": ')])).toMatchObject({
      verdict: 'wrong-arguments',
      mismatches: [{ argument: 'order_id', reason: 'the arguments are not a JSON object: {"order_id":' }],
    });
  });
});

describe('the metrics', () => {
  const results = (verdicts: [string | null, SelectionVerdict][]) =>
    verdicts.map(([expected, verdict]) => ({ expected, verdict }));

  it('count tool accuracy over all decided cases, argument accuracy over the right tools, spurious calls over negatives', () => {
    const metrics = selectionMetrics(
      results([
        ['get_order', 'correct'],
        ['get_order', 'wrong-arguments'],
        ['get_order', 'wrong-tool'],
        ['get_order', 'no-call'],
        [null, 'correct'],
        [null, 'spurious-call'],
        [null, 'error'],
        ['get_order', 'error'],
      ]),
    );
    expect(metrics).toEqual({
      toolAccuracy: { value: 3 / 6, numerator: 3, denominator: 6 },
      argumentAccuracy: { value: 1 / 2, numerator: 1, denominator: 2 },
      spuriousCallRate: { value: 1 / 2, numerator: 1, denominator: 2 },
    });
  });

  it('miss a threshold only when below a minimum or above the maximum, and never with nothing to count', () => {
    const thresholds = { minToolAccuracy: 0.95, minArgumentAccuracy: 0.9, maxSpuriousCallRate: 0.02 };
    const metrics = selectionMetrics(
      results([
        ...Array.from({ length: 19 }, () => ['t', 'correct'] as [string, SelectionVerdict]),
        ['t', 'wrong-tool'],
      ]),
    );
    expect(metrics.toolAccuracy.value).toBe(0.95);
    expect(metrics.spuriousCallRate.value).toBeNull();
    expect(missedThresholds({ metrics, thresholds })).toEqual([]);
    expect(missedThresholds({ metrics, thresholds: { ...thresholds, minToolAccuracy: 0.96 } })).toEqual([
      { metric: 'toolAccuracy', value: 0.95, threshold: 0.96, bound: 'min' },
    ]);
  });
});
