// How a selection case states a critical argument: an exact value, a pattern, or a named predicate.
// Only the critical arguments are compared, never the whole object: a model fills optional fields in
// ways that are legitimately different, and a suite that demands them fails until a team mutes it.
import { canonicalJson } from '../shared/canonical-json';

/** A named test of one argument's value, with what a passing value is (shown in the failure table). */
export interface ArgumentPredicate {
  /** What a passing value is, e.g. "a whole number above 0". */
  description: string;
  /** True when the value passes; a predicate that throws counts as a failure. */
  test: (value: unknown) => boolean;
}

/** Predicates by name, as a case file's predicates module exports them: a function or `{description, test}`. */
export type ArgumentPredicates = Readonly<Record<string, ArgumentPredicate | ((value: unknown) => boolean)>>;

const isSafeIntegerAbove = (minimum: number) => (value: unknown) =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > minimum;

/** The predicates every case file may name; a predicates module adds its own (and may not redefine these). */
export const builtInPredicates: Readonly<Record<string, ArgumentPredicate>> = {
  positiveInteger: { description: 'a whole number above 0', test: isSafeIntegerAbove(0) },
  nonNegativeInteger: { description: 'a whole number, 0 or more', test: isSafeIntegerAbove(-1) },
  cents: {
    description: 'an amount in cents: a whole number above 0, never a decimal such as 25.9',
    test: isSafeIntegerAbove(0),
  },
  nonEmptyString: {
    description: 'a string with something other than spaces',
    test: (value) => typeof value === 'string' && value.trim() !== '',
  },
  isoDate: {
    description: 'a calendar date written YYYY-MM-DD',
    test: (value) =>
      typeof value === 'string' &&
      /^\d{4}-\d{2}-\d{2}$/.test(value) &&
      // 2025-02-30 matches the pattern; the round trip does not.
      new Date(`${value}T00:00:00Z`).toISOString().startsWith(value),
  },
  isoDateTime: {
    description: 'a date and time in ISO 8601 with a zone, e.g. 2025-01-31T14:00:00Z',
    test: (value) =>
      typeof value === 'string' &&
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) &&
      !Number.isNaN(Date.parse(value)),
  },
  uuid: {
    description: 'a UUID such as 123e4567-e89b-12d3-a456-426614174000',
    test: (value) =>
      typeof value === 'string' &&
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value),
  },
};

/** A critical argument's matcher, checked when the case file was loaded. */
export type ArgumentMatcher =
  | { kind: 'equals'; value: unknown }
  | { kind: 'pattern'; pattern: RegExp }
  | { kind: 'predicate'; name: string; predicate: ArgumentPredicate };

/** One critical argument that did not match, and why, in words for the failure table. */
export interface ArgumentMismatch {
  argument: string;
  reason: string;
}

/** The matcher as the failure table states it: `2590`, `/^ORD-\d{4}$/`, `cents`. */
export function describeMatcher(matcher: ArgumentMatcher): string {
  switch (matcher.kind) {
    case 'equals':
      return JSON.stringify(matcher.value);
    case 'pattern':
      return String(matcher.pattern);
    case 'predicate':
      return `${matcher.name} (${matcher.predicate.description})`;
  }
}

/** Compares one argument with its matcher: exact values compare as canonical JSON (key order is no difference). */
export function matchArgument(input: {
  matcher: ArgumentMatcher;
  present: boolean;
  value: unknown;
}): { ok: true } | { ok: false; reason: string } {
  const { matcher, present, value } = input;
  if (!present) return { ok: false, reason: `missing; expected ${describeMatcher(matcher)}` };
  const got = shown(value);
  switch (matcher.kind) {
    case 'equals':
      return canonicalJson(value) === canonicalJson(matcher.value)
        ? { ok: true }
        : { ok: false, reason: `expected ${describeMatcher(matcher)}, got ${got}` };
    case 'pattern':
      if (typeof value !== 'string') {
        return { ok: false, reason: `expected a string matching ${describeMatcher(matcher)}, got ${got}` };
      }
      // A fresh RegExp each time: a pattern with the g or y flag keeps state between tests.
      return new RegExp(matcher.pattern).test(value)
        ? { ok: true }
        : { ok: false, reason: `expected a match of ${describeMatcher(matcher)}, got ${got}` };
    case 'predicate': {
      let passed: boolean;
      try {
        passed = matcher.predicate.test(value);
      } catch (error) {
        return {
          ok: false,
          reason: `the predicate ${matcher.name} threw on ${got}: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
      return passed
        ? { ok: true }
        : { ok: false, reason: `expected ${describeMatcher(matcher)}, got ${got}` };
    }
  }
}

/** A value as the failure table shows it: JSON, cut short. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
