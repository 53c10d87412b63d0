import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SelectionCaseResult, SelectionReport } from 'toolgate';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ScriptedModelServer } from '../../examples/agent/scripted-model/scripted-model-server';
import { startScriptedModelServer } from '../../examples/agent/scripted-model/scripted-model-server';
import { ordersSelection } from '../../examples/agent/scripted-model/selection-script';
import { runCliCapturing } from '../support/cli-runner';

// `toolgate eval` end to end against the scripted model, which answers the orders cases from a table
// and gets eight of them wrong on purpose (examples/agent/scripted-model/selection-script.ts). No
// Temporal: the suite never runs a tool.

const projectRoot = join(__dirname, '..', '..');
const config = join(projectRoot, 'toolgate.config.ts');
const casesFile = join(projectRoot, 'examples', 'orders', 'selection-cases.json');

let model: ScriptedModelServer;
let directory: string;

beforeAll(async () => {
  model = await startScriptedModelServer({ scripts: [ordersSelection] });
  directory = mkdtempSync(join(tmpdir(), 'toolgate-eval-'));
});

afterAll(async () => {
  await model?.close();
  rmSync(directory, { recursive: true, force: true });
});

const environment = ['LLM_BASE_URL', 'LLM_MODEL', 'LLM_API_KEY'] as const;
let saved: Partial<Record<(typeof environment)[number], string>>;

beforeEach(() => {
  saved = Object.fromEntries(environment.map((name) => [name, process.env[name]]));
  process.env.LLM_BASE_URL = model.baseURL;
  process.env.LLM_MODEL = 'orders-selection';
  delete process.env.LLM_API_KEY;
});

afterEach(() => {
  for (const name of environment) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

/** `toolgate eval` on the orders cases, recording into a snapshot of the test's own (never the repository's). */
function evaluate(...argv: string[]) {
  return runCliCapturing([
    'eval',
    '--config',
    config,
    '--cases',
    casesFile,
    '--snapshot',
    join(directory, 'absent-snapshot.json'),
    ...argv,
  ]);
}

type JsonReport = SelectionReport & { failures: SelectionCaseResult[]; errors: SelectionCaseResult[] };

async function evaluateJson(...argv: string[]): Promise<{ code: number; report: JsonReport; error: string }> {
  const run = await evaluate(...argv, '--json');
  return { code: run.code, report: JSON.parse(run.out) as JsonReport, error: run.error };
}

/** A failure as a row: the case, the verdict, what the model called, and which arguments failed. */
const row = (result: SelectionCaseResult) => [
  result.id,
  result.verdict,
  result.calledTools?.join(',') ?? '',
  (result.mismatches ?? []).map((mismatch) => mismatch.argument).join(','),
];

describe('toolgate eval against a model that gets known cases wrong', () => {
  it('measures the critical set exactly and exits 1 for the thresholds it misses', async () => {
    const { code, report } = await evaluateJson();

    expect(code).toBe(1);
    expect(report.set).toBe('critical');
    expect(report.model).toBe('orders-selection');
    expect(report.counts).toEqual({ cases: 25, positive: 14, negative: 11, errors: 0 });
    // Wrong: a tool on a question (wrong tool), a spurious refund; the wrong amount still picked the right tool.
    expect(report.metrics.toolAccuracy).toEqual({ value: 23 / 25, numerator: 23, denominator: 25 });
    // Over the 13 positive cases whose tool was right: the one with 45 cents for US$ 45.00 is wrong.
    expect(report.metrics.argumentAccuracy).toEqual({ value: 12 / 13, numerator: 12, denominator: 13 });
    expect(report.metrics.spuriousCallRate).toEqual({ value: 1 / 11, numerator: 1, denominator: 11 });
    expect(report.thresholds).toEqual({
      minToolAccuracy: 0.95,
      minArgumentAccuracy: 0.9,
      maxSpuriousCallRate: 0.02,
    });
    expect(report.missed.map((miss) => miss.metric)).toEqual(['toolAccuracy', 'spuriousCallRate']);
    expect(report.failures.map(row)).toEqual([
      ['did-my-refund-go-through', 'wrong-tool', 'refund_order', ''],
      ['refund-after-read-usd-full', 'wrong-arguments', 'refund_order', 'amount_cents'],
      ['refund-without-order', 'spurious-call', 'refund_order', ''],
    ]);
    expect(report.failures[1]!.mismatches).toEqual([
      { argument: 'amount_cents', reason: 'expected 4500, got 45' },
    ]);
    expect(report.errors).toEqual([]);
    // One request per case, the caller's tools offered, and no second turn: no tool ran.
    const served = model.requests.slice(-25);
    expect(served.every((request) => request.offeredTools.join() === 'get_order,refund_order')).toBe(true);
  });

  it('measures the full set, negatives included, and shows every failure with the argument and why', async () => {
    const { code, report } = await evaluateJson('--set', 'full');

    expect(code).toBe(1);
    expect(report.counts).toEqual({ cases: 40, positive: 23, negative: 17, errors: 0 });
    expect(report.metrics.toolAccuracy).toEqual({ value: 36 / 40, numerator: 36, denominator: 40 });
    expect(report.metrics.argumentAccuracy).toEqual({ value: 17 / 21, numerator: 17, denominator: 21 });
    expect(report.metrics.spuriousCallRate).toEqual({ value: 2 / 17, numerator: 2, denominator: 17 });
    expect(report.missed.map((miss) => miss.metric)).toEqual([
      'toolAccuracy',
      'argumentAccuracy',
      'spuriousCallRate',
    ]);
    expect(report.failures.map(row)).toEqual([
      ['did-my-refund-go-through', 'wrong-tool', 'refund_order', ''],
      ['refund-after-read-usd-full', 'wrong-arguments', 'refund_order', 'amount_cents'],
      ['refund-without-order', 'spurious-call', 'refund_order', ''],
      ['lowercase-order-id', 'wrong-arguments', 'get_order', 'order_id'],
      ['note-on-order', 'no-call', '', ''],
      ['compare-two-orders', 'wrong-arguments', 'get_order', 'order_id'],
      ['refund-cents-not-decimal', 'wrong-arguments', 'refund_order', 'amount_cents'],
      ['order-not-arrived-no-id', 'spurious-call', 'get_order', ''],
    ]);
    const reasons = Object.fromEntries(
      report.failures.flatMap((result) =>
        (result.mismatches ?? []).map((mismatch) => [result.id, mismatch.reason]),
      ),
    );
    expect(reasons).toEqual({
      'refund-after-read-usd-full': 'expected 4500, got 45',
      'lowercase-order-id': 'expected "ORD-1002", got "ord-1002"',
      // A predicate the case file adds (examples/orders/selection-predicates.ts).
      'compare-two-orders': 'expected orderId (one order id such as ORD-1001), got "ORD-1001,ORD-1002"',
      'refund-cents-not-decimal': 'expected 705, got 7.05',
    });
    // The positive cases that passed: every one that is not a failure, the negatives that called nothing.
    expect(report.results.filter((result) => result.verdict === 'correct')).toHaveLength(32);
  });

  it('prints the failure table and the metrics against their thresholds', async () => {
    const { code, out } = await evaluate();

    expect(code).toBe(1);
    const lines = out.split('\n');
    const failures = lines.slice(lines.indexOf('FAILURES (3)') + 1, lines.indexOf('FAILURES (3)') + 5);
    expect(failures.map((line) => line.split(/\s{2,}/))).toEqual([
      ['CASE', 'EXPECTED', 'GOT', 'WHY'],
      [
        'did-my-refund-go-through',
        'get_order',
        'refund_order',
        'called refund_order; expected get_order only',
      ],
      ['refund-after-read-usd-full', 'refund_order', 'refund_order', 'amount_cents: expected 4500, got 45'],
      [
        'refund-without-order',
        'none',
        'refund_order',
        'called a tool on a negative case, with {"order_id":"ORD-1001","amount_cents":100,"currency":"BRL","reason":"customer_request"}',
      ],
    ]);
    const metrics = lines.slice(lines.findIndex((line) => line.startsWith('METRIC')));
    expect(metrics.slice(0, 4).map((line) => line.split(/\s{2,}/))).toEqual([
      ['METRIC', 'VALUE', 'COUNT', 'THRESHOLD'],
      ['tool accuracy', '0.920', '23/25', '>= 0.95', 'MISSED'],
      ['argument accuracy', '0.923', '12/13', '>= 0.90', 'ok'],
      ['spurious-call rate', '0.091', '1/11', '<= 0.02', 'MISSED'],
    ]);
    expect(out).toContain('FAILED: tool accuracy 0.920, spurious-call rate 0.091 outside the thresholds');
  });

  it('passes with thresholds the model meets, and records the full run in an existing snapshot, nothing else changed', async () => {
    const snapshot = join(directory, 'toolgate.contracts.json');
    // Laid out as `toolgate contract snapshot` writes it; a tool's own field named selection stays as it is.
    const before = [
      '{',
      '  "version": 1,',
      '  "createdAt": "2025-01-01T00:00:00.000Z",',
      '  "selection": {},',
      '  "tools": [',
      '    {',
      '      "name": "pick",',
      '      "input": { "selection": { "type": "string" } }',
      '    }',
      '  ]',
      '}',
      '',
    ].join('\n');
    writeFileSync(snapshot, before);
    const loose = [
      '--min-tool-accuracy',
      '0.9',
      '--min-argument-accuracy',
      '0.8',
      '--max-spurious-rate',
      '0.2',
    ];

    const critical = await evaluate(...loose, '--snapshot', snapshot);
    expect(critical.code).toBe(0);
    expect(critical.out).toContain('PASSED: every threshold met');
    // Only a full run is recorded.
    expect(readFileSync(snapshot, 'utf8')).toBe(before);

    const full = await runCliCapturing([
      'eval',
      '--config',
      config,
      '--cases',
      casesFile,
      '--set',
      'full',
      ...loose,
      '--snapshot',
      snapshot,
      '--json',
    ]);
    expect(full.code).toBe(0);
    const report = JSON.parse(full.out) as {
      ok: boolean;
      selection: { model: string; at: string };
      recordedIn: string;
    };
    expect(report.ok).toBe(true);
    expect(report.selection.model).toBe('orders-selection');
    expect(report.recordedIn).toBe(snapshot);
    expect(readFileSync(snapshot, 'utf8')).toBe(
      before.replace(
        '  "selection": {},',
        `  "selection": {\n    "model": "orders-selection",\n    "at": "${report.selection.at}"\n  },`,
      ),
    );
    expect(full.error).toContain(`recorded in ${snapshot}`);
  });

  it('records nothing when there is no snapshot, and says so', async () => {
    const absent = join(directory, 'no-such-snapshot.json');
    const run = await evaluate(
      '--set',
      'full',
      '--min-tool-accuracy',
      '0',
      '--min-argument-accuracy',
      '0',
      '--max-spurious-rate',
      '1',
      '--snapshot',
      absent,
    );
    expect(run.code).toBe(0);
    expect(run.error).toContain(`no contract snapshot at ${absent}`);
    expect(() => readFileSync(absent)).toThrow();
  });

  it('shows progress on stderr, one line per case, and keeps stdout for the report', async () => {
    const { error, out } = await evaluate('--json');
    expect(error.match(/^ {2}\[\s*\d+\/25\] /gm)).toHaveLength(25);
    expect(error).toMatch(/^ {2}\[\s*\d+\/25\] wrong-tool\s+did-my-refund-go-through \(\d+ ms\)$/m);
    // stdout holds the report alone: one JSON document.
    expect((JSON.parse(out) as SelectionReport).counts.cases).toBe(25);
  });
});

describe('toolgate eval when the endpoint fails', () => {
  it('reports a server that is down as an error per case, not as wrong answers, and exits 2', async () => {
    process.env.LLM_BASE_URL = `http://127.0.0.1:${await closedPort()}/v1`;
    const { code, report } = await evaluateJson('--retries', '0');

    expect(code).toBe(2);
    expect(report.ok).toBe(false);
    expect(report.counts.errors).toBe(25);
    expect(report.failures).toEqual([]);
    expect(report.errors[0]!.error).toMatch(
      /^cannot reach http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: ECONNREFUSED$/,
    );
    // No decision, no metric: nothing is counted as a wrong answer.
    expect(report.metrics.toolAccuracy).toEqual({ value: null, numerator: 0, denominator: 0 });
  });

  it('retries a connection failure before it gives up', async () => {
    process.env.LLM_BASE_URL = `http://127.0.0.1:${await closedPort()}/v1`;
    const { code, report } = await evaluateJson('--retries', '1', '--concurrency', '25');
    expect(code).toBe(2);
    expect(report.errors[0]!.error).toMatch(/ECONNREFUSED \(after 2 attempts\)$/);
  });

  it('reports a request that takes longer than --timeout as that case’s error', async () => {
    const slow = await startScriptedModelServer({ scripts: [ordersSelection], latencyMs: 2_000 });
    try {
      process.env.LLM_BASE_URL = slow.baseURL;
      const run = await evaluate('--timeout', '100', '--retries', '0', '--concurrency', '25');
      expect(run.code).toBe(2);
      expect(run.out).toContain('ERRORS (25): no decision, counted in no metric');
      expect(run.out).toMatch(/did-my-refund-go-through\s+no answer from \S+ within 100 ms/);
      expect(run.out).toContain('INCOMPLETE: 25 of 25 cases got no decision');
    } finally {
      await slow.close();
    }
  });

  it("reports an HTTP error with the endpoint's message", async () => {
    process.env.LLM_MODEL = 'no-such-model';
    const { code, report } = await evaluateJson('--retries', '0');
    expect(code).toBe(2);
    expect(report.errors[0]!.error).toMatch(
      /answered HTTP 404: The model 'no-such-model' does not exist\. This server plays the scripts: orders-selection\.$/,
    );
  });

  it('says what to set when LLM_BASE_URL is missing', async () => {
    delete process.env.LLM_BASE_URL;
    const run = await evaluate();
    expect(run.code).toBe(2);
    expect(run.error).toContain('toolgate eval: set LLM_BASE_URL to an OpenAI-compatible endpoint');
  });

  it('asks the endpoint for its first model when LLM_MODEL is not set', async () => {
    delete process.env.LLM_MODEL;
    const { report } = await evaluateJson();
    expect(report.model).toBe('orders-selection');
  });
});

describe('toolgate eval concurrency', () => {
  it.each([1, 3])('keeps at most --concurrency %i requests in flight', async (concurrency) => {
    const slow = await startScriptedModelServer({ scripts: [ordersSelection], latencyMs: 40 });
    try {
      process.env.LLM_BASE_URL = slow.baseURL;
      const { code } = await evaluateJson('--concurrency', String(concurrency));
      expect(code).toBe(1);
      expect(slow.requests).toHaveLength(25);
      expect(slow.peakInFlight).toBe(concurrency);
    } finally {
      await slow.close();
    }
  });

  it('runs 4 cases at a time by default', async () => {
    const slow = await startScriptedModelServer({ scripts: [ordersSelection], latencyMs: 40 });
    try {
      process.env.LLM_BASE_URL = slow.baseURL;
      await evaluateJson();
      expect(slow.peakInFlight).toBe(4);
    } finally {
      await slow.close();
    }
  });
});

describe('toolgate eval with a bad case file', () => {
  it('names the file, the case and the field, and exits 2 before any request', async () => {
    const file = join(directory, 'bad-cases.json');
    writeFileSync(
      file,
      JSON.stringify({
        caller: 'support-bot',
        cases: [
          { id: 'fine', userMessage: 'Good morning!', expectedTool: null, tags: ['critical'] },
          {
            id: 'typo',
            userMessage: 'Refund R$ 25,90 on ORD-1001',
            expectedTool: 'refund_order',
            criticalArguments: { amount_cents: { predicate: 'cent' } },
          },
        ],
      }),
    );
    const before = model.requests.length;
    const run = await runCliCapturing(['eval', '--config', config, '--cases', file]);
    expect(run.code).toBe(2);
    expect(run.error).toContain(
      `case file ${file}: cases[1] (id "typo").criticalArguments.amount_cents: unknown predicate "cent"; known: positiveInteger,`,
    );
    expect(model.requests.length).toBe(before);
  });

  it('refuses a case that expects a tool the caller is not offered', async () => {
    const file = join(directory, 'readonly-cases.json');
    writeFileSync(
      file,
      JSON.stringify({
        cases: [
          {
            id: 'refund',
            userMessage: 'Yes, go ahead with the R$ 25,90 refund.',
            expectedTool: 'refund_order',
            tags: ['critical'],
          },
        ],
      }),
    );
    const run = await runCliCapturing([
      'eval',
      '--config',
      config,
      '--cases',
      file,
      '--caller',
      'readonly-bot',
    ]);
    expect(run.code).toBe(2);
    expect(run.error).toContain(
      `case file ${file}: cases[0] (id "refund").expectedTool: "refund_order" is not offered to readonly-bot; the tools are: get_order`,
    );
  });
});

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
