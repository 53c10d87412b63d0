import { describe, expect, it } from 'vitest';
import type { ArgumentMatcher } from './argument-matchers';
import { builtInPredicates, matchArgument } from './argument-matchers';

const predicate = (name: string): ArgumentMatcher => ({
  kind: 'predicate',
  name,
  predicate: builtInPredicates[name]!,
});
const match = (matcher: ArgumentMatcher, value: unknown, present = true) =>
  matchArgument({ matcher, present, value });

describe('a critical argument', () => {
  it('matches an exact value as JSON, whatever the key order', () => {
    expect(match({ kind: 'equals', value: { a: 1, b: [2] } }, { b: [2], a: 1 })).toEqual({ ok: true });
    expect(match({ kind: 'equals', value: 2590 }, 25.9)).toEqual({
      ok: false,
      reason: 'expected 2590, got 25.9',
    });
    expect(match({ kind: 'equals', value: 2590 }, '2590')).toEqual({
      ok: false,
      reason: 'expected 2590, got "2590"',
    });
  });

  it('matches a pattern against strings only', () => {
    const matcher: ArgumentMatcher = { kind: 'pattern', pattern: /^ORD-\d{4}$/g };
    expect(match(matcher, 'ORD-1001')).toEqual({ ok: true });
    // The g flag keeps state in a RegExp; the second test must not depend on the first.
    expect(match(matcher, 'ORD-1001')).toEqual({ ok: true });
    expect(match(matcher, 'ORD-1')).toEqual({
      ok: false,
      reason: 'expected a match of /^ORD-\\d{4}$/g, got "ORD-1"',
    });
    expect(match(matcher, 1001)).toEqual({
      ok: false,
      reason: 'expected a string matching /^ORD-\\d{4}$/g, got 1001',
    });
  });

  it('says an argument the model left out is missing, and what was expected', () => {
    expect(match(predicate('cents'), undefined, false)).toEqual({
      ok: false,
      reason:
        'missing; expected cents (an amount in cents: a whole number above 0, never a decimal such as 25.9)',
    });
  });

  it('counts a predicate that throws as a failure, with its message', () => {
    const throwing: ArgumentMatcher = {
      kind: 'predicate',
      name: 'strict',
      predicate: {
        description: 'never',
        test: () => {
          throw new Error('boom');
        },
      },
    };
    expect(match(throwing, 1)).toEqual({ ok: false, reason: 'the predicate strict threw on 1: boom' });
  });
});

describe('the built-in predicates', () => {
  const passes = (name: string, values: unknown[]) =>
    values.map((value) => builtInPredicates[name]!.test(value));

  it('tell whole numbers from decimals, strings and unsafe integers', () => {
    expect(passes('positiveInteger', [1, 2590, 0, -1, 25.9, '1', 2 ** 53])).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(passes('nonNegativeInteger', [0, 7, -1, 0.5])).toEqual([true, true, false, false]);
    expect(passes('cents', [2590, 25.9, 0])).toEqual([true, false, false]);
  });

  it('check strings, dates and ids by their form', () => {
    expect(passes('nonEmptyString', ['a', ' ', '', 1])).toEqual([true, false, false, false]);
    expect(passes('isoDate', ['2025-02-28', '2025-02-30', '2025-2-1', 20250228])).toEqual([
      true,
      false,
      false,
      false,
    ]);
    expect(
      passes('isoDateTime', [
        '2025-01-31T14:00:00Z',
        '2025-01-31T14:00:00.5+01:00',
        '2025-01-31 14:00',
        '2025-01-31T14:00:00',
      ]),
    ).toEqual([true, true, false, false]);
    expect(passes('uuid', ['123e4567-e89b-12d3-a456-426614174000', '123e4567'])).toEqual([true, false]);
  });
});
