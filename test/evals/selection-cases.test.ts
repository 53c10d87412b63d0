import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builtInPredicates, loadSelectionCases, parseSelectionCases } from 'toolgate';
import { afterAll, describe, expect, it } from 'vitest';

// The case file: what it accepts, and the message a mistake in it gets (the file, the case, the field).

const directory = mkdtempSync(join(tmpdir(), 'toolgate-cases-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const positive = {
  id: 'refund',
  userMessage: 'Yes, refund R$ 25,90 on ORD-1001.',
  expectedTool: 'refund_order',
  criticalArguments: { amount_cents: 2590 },
};

/** The message parseSelectionCases throws for `cases`. */
function problemOf(cases: unknown[], extra: Record<string, unknown> = {}): string {
  try {
    parseSelectionCases({ source: 'cases.json', value: { cases, ...extra } });
  } catch (error) {
    expect((error as Error).name).toBe('ConfigurationError');
    return (error as Error).message;
  }
  throw new Error('expected the case file to be refused');
}

describe('a case file', () => {
  it('reads every form of critical argument: a value, equals, a pattern, a predicate', () => {
    const file = parseSelectionCases({
      source: 'cases.json',
      value: {
        cases: [
          {
            ...positive,
            criticalArguments: {
              amount_cents: 2590,
              currency: { equals: 'BRL' },
              order_id: { pattern: '^ord-1001$', flags: 'i' },
              reason: { predicate: 'nonEmptyString' },
            },
          },
        ],
      },
    });
    const matchers = file.cases[0]!.criticalArguments;
    expect(matchers.amount_cents).toEqual({ kind: 'equals', value: 2590 });
    expect(matchers.currency).toEqual({ kind: 'equals', value: 'BRL' });
    expect(matchers.order_id).toEqual({ kind: 'pattern', pattern: /^ord-1001$/i });
    expect(matchers.reason).toEqual({
      kind: 'predicate',
      name: 'nonEmptyString',
      predicate: builtInPredicates.nonEmptyString,
    });
  });

  it('turns history tool calls and results written as objects into the JSON text the wire carries', () => {
    const file = parseSelectionCases({
      source: 'cases.json',
      value: {
        cases: [
          {
            ...positive,
            history: [
              { role: 'user', content: 'Refund R$ 25,90 on ORD-1001' },
              {
                role: 'assistant',
                tool_calls: [
                  { id: 'c1', function: { name: 'get_order', arguments: { order_id: 'ORD-1001' } } },
                ],
              },
              { role: 'tool', tool_call_id: 'c1', content: { ok: true } },
            ],
          },
        ],
      },
    });
    expect(file.cases[0]!.history).toEqual([
      { role: 'user', content: 'Refund R$ 25,90 on ORD-1001' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: { name: 'get_order', arguments: '{"order_id":"ORD-1001"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"ok":true}' },
    ]);
  });

  it('names the case by index and id, and the field, for a wrong shape', () => {
    expect(
      problemOf([
        { id: 'a', userMessage: 'hi', expectedTool: null },
        { id: 'b', userMessage: 'hi' },
      ]),
    ).toBe(
      'case file cases.json: cases[1] (id "b").expectedTool: Invalid input: expected string, received undefined',
    );
    expect(problemOf([{ ...positive, criticalArguments: { amount_cents: { min: 1 } } }])).toMatch(
      /^case file cases\.json: cases\[0\] \(id "refund"\)\.criticalArguments\.amount_cents: an object here must be one matcher; write a value to match exactly, \{"equals": <any JSON>\}/,
    );
    expect(problemOf([{ ...positive, criticalArguments: { order_id: { pattern: '(' } } }])).toMatch(
      /cases\[0\] \(id "refund"\)\.criticalArguments\.order_id: not a valid regular expression: /,
    );
    expect(problemOf([{ ...positive, expected: 'refund_order' }])).toContain(
      'cases[0] (id "refund"): Unrecognized key: "expected"',
    );
  });

  it('refuses arguments on a negative case, duplicate ids, and tool calls the history leaves unanswered', () => {
    expect(
      problemOf([{ id: 'hi', userMessage: 'hi', expectedTool: null, criticalArguments: { a: 1 } }]),
    ).toBe(
      'case file cases.json: cases[0] (id "hi").criticalArguments: a negative case (expectedTool null) has no arguments to check; remove them',
    );
    expect(problemOf([positive, positive])).toBe(
      'case file cases.json: cases[1] (id "refund").id: the id is also the id of cases[0]',
    );
    const unanswered = [
      { role: 'assistant', tool_calls: [{ id: 'c1', function: { name: 'get_order', arguments: '{}' } }] },
    ];
    expect(problemOf([{ ...positive, history: unanswered }])).toBe(
      'case file cases.json: cases[0] (id "refund").history: ends with the tool calls c1 unanswered; add a tool message for each',
    );
    expect(problemOf([{ ...positive, history: [{ role: 'tool', tool_call_id: 'c9', content: '{}' }] }])).toBe(
      'case file cases.json: cases[0] (id "refund").history[0].tool_call_id: answers no tool call of the assistant message before it ("c9")',
    );
  });

  it('lists every problem at once, up to ten', () => {
    const bad = Array.from({ length: 12 }, (_, index) => ({
      id: `c${index}`,
      userMessage: '',
      expectedTool: null,
    }));
    const message = problemOf(bad);
    expect(message.match(/Too small/g)).toHaveLength(10);
    expect(message).toMatch(/; and 2 more$/);
  });

  it('says where a file that is not JSON breaks', () => {
    const path = join(directory, 'broken.json');
    writeFileSync(path, '{"cases": [');
    expect(() => loadSelectionCases({ path })).toThrow(new RegExp(`^case file ${path}: not valid JSON \\(`));
    expect(() => loadSelectionCases({ path: join(directory, 'absent.json') })).toThrow(
      /cannot be read .*; pass --cases <file>$/,
    );
  });

  it('loads the predicates a module next to it exports, and refuses one that redefines a built-in', () => {
    writeFileSync(
      join(directory, 'predicates.js'),
      'module.exports = { sku: (value) => /^SKU-/.test(value), even: { description: "an even number", test: (v) => v % 2 === 0 } };',
    );
    const path = join(directory, 'with-predicates.json');
    writeFileSync(
      path,
      JSON.stringify({
        predicates: './predicates.js',
        cases: [
          {
            ...positive,
            criticalArguments: { sku: { predicate: 'sku' }, amount_cents: { predicate: 'even' } },
          },
        ],
      }),
    );
    const matchers = loadSelectionCases({ path }).cases[0]!.criticalArguments;
    expect(matchers.amount_cents).toMatchObject({
      kind: 'predicate',
      name: 'even',
      predicate: { description: 'an even number' },
    });
    expect(matchers.sku).toMatchObject({
      kind: 'predicate',
      name: 'sku',
      predicate: { description: 'passes sku' },
    });

    writeFileSync(join(directory, 'clash.js'), 'module.exports = { cents: () => true };');
    writeFileSync(path, JSON.stringify({ predicates: './clash.js', cases: [positive] }));
    expect(() => loadSelectionCases({ path })).toThrow(
      `predicates module ${join(directory, 'clash.js')}: the predicate cents is already defined`,
    );
  });

  it('ships the orders cases: 40, of which 25 critical, with negatives in both sets', () => {
    const file = loadSelectionCases({
      path: join(__dirname, '..', '..', 'examples', 'orders', 'selection-cases.json'),
    });
    const critical = file.cases.filter((entry) => entry.tags.includes('critical'));
    expect(file.cases).toHaveLength(40);
    expect(critical).toHaveLength(25);
    expect(critical.filter((entry) => entry.expectedTool === null)).toHaveLength(11);
    expect(file.cases.filter((entry) => entry.expectedTool === null)).toHaveLength(17);
    const byId = new Map(file.cases.map((entry) => [entry.id, entry]));
    // The issue's own negatives, in the critical set.
    expect(byId.get('good-morning')).toMatchObject({
      userMessage: 'Good morning!',
      expectedTool: null,
      tags: ['critical'],
    });
    expect(byId.get('refund-without-order')).toMatchObject({
      userMessage: 'Can I get a refund?',
      expectedTool: null,
    });
  });
});
