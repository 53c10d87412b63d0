import { describe, expect, it } from 'vitest';
import { parseSelectionCases } from './selection-cases';
import type { SelectionSuiteInput } from './selection-suite';
import { runSelectionSuite } from './selection-suite';

// The run's limits are checked before any request: a limit it cannot use would run no case (a
// concurrency of NaN starts no lane) and report a pass on nothing.

const file = parseSelectionCases({
  source: 'inline',
  value: {
    cases: [
      { id: 'greeting', userMessage: 'good morning', expectedTool: null, tags: ['critical'] },
      { id: 'vague-refund', userMessage: 'can I get a refund?', expectedTool: null, tags: ['critical'] },
    ],
  },
});

/** A run whose endpoint nothing listens on: any request sent would come back as a case error. */
function run(limits: Pick<SelectionSuiteInput, 'concurrency' | 'timeoutMs' | 'retries'>) {
  return runSelectionSuite({
    file,
    tools: [],
    endpoint: { baseURL: 'http://127.0.0.1:9/v1' },
    model: 'scripted',
    ...limits,
  });
}

describe('runSelectionSuite limits', () => {
  it.each([
    ['concurrency', { concurrency: Number('four') }],
    ['concurrency', { concurrency: 0 }],
    ['concurrency', { concurrency: 2.5 }],
    ['concurrency', { concurrency: Infinity }],
    ['timeoutMs', { timeoutMs: Number.NaN }],
    ['retries', { retries: -1 }],
  ])('refuses a %s it cannot use (%o) before sending anything, naming it', async (name, limits) => {
    await expect(run(limits)).rejects.toMatchObject({
      name: 'ConfigurationError',
      message: expect.stringContaining(`runSelectionSuite: ${name} must be`) as string,
    });
  });

  it('gives every case a result: with nothing listening, each is an error and the run does not pass', async () => {
    const report = await run({ concurrency: 1, retries: 0, timeoutMs: 2_000 });
    expect(report.results.map((result) => [result.id, result.verdict])).toEqual([
      ['greeting', 'error'],
      ['vague-refund', 'error'],
    ]);
    expect(report).toMatchObject({ ok: false, counts: { cases: 2, errors: 2 } });
  });
});
