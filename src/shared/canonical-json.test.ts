import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, digestOf } from './canonical-json';

/**
 * The recursive definition canonicalJson had before it walked with a stack, the bytes it must keep;
 * with a null-prototype object, so that a key named `__proto__` is kept as a key (the old code set
 * the prototype instead and so dropped the key from digests).
 */
function recursiveCanonicalJson(value: unknown): string {
  const sortKeys = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(sortKeys);
    if (item !== null && typeof item === 'object') {
      const sorted = Object.create(null) as Record<string, unknown>;
      for (const key of Object.keys(item).sort()) {
        const entry = (item as Record<string, unknown>)[key];
        if (entry !== undefined) sorted[key] = sortKeys(entry);
      }
      return sorted;
    }
    return item;
  };
  return JSON.stringify(sortKeys(value));
}

function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level++)
    value = level % 2 ? [value] : { [`k${level % 7}`]: value, a: 1 };
  return value;
}

describe('canonical JSON', () => {
  it('orders array-index keys first, numerically, as every call id so far was computed', () => {
    expect(canonicalJson({ b: 1, '10': 2, a: 3, '9': 4, '': 5, '01': 6 })).toBe(
      '{"9":4,"10":2,"":5,"01":6,"a":3,"b":1}',
    );
  });

  it('writes the same bytes as the recursive definition for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(recursiveCanonicalJson(value));
      }),
      { numRuns: 2_000 },
    );
  });

  it('writes the same bytes for values JSON cannot hold (undefined, functions, NaN, dates, sparse arrays)', () => {
    fc.assert(
      fc.property(
        fc.anything({ withNullPrototype: true, withSparseArray: true, withDate: true }),
        (value) => {
          expect(canonicalJson(value)).toBe(recursiveCanonicalJson(value));
        },
      ),
      { numRuns: 1_000 },
    );
    const odd = { b: undefined, a: [undefined, () => 1, Symbol('s'), NaN], c: () => 2, d: new Date(0) };
    expect(canonicalJson(odd)).toBe('{"a":[null,null,null,null],"d":{}}');
  });

  it('serialises values nested 200,000 levels deep without overflowing the stack', () => {
    const deep = nested(200_000, 'x');
    const text = canonicalJson(deep);
    let expected = '"x"';
    for (let level = 0; level < 200_000; level++)
      expected = level % 2 ? `[${expected}]` : `{"a":1,"k${level % 7}":${expected}}`;
    expect(text).toBe(expected);
    expect(digestOf(deep)).toMatch(/^[0-9a-f]{64}$/);
    // The bytes agree with the recursive definition where that one still fits on the stack.
    const shallow = nested(500, 'x');
    expect(canonicalJson(shallow)).toBe(recursiveCanonicalJson(shallow));
  });

  it('keeps a key named __proto__, so it changes the digest like any other key', () => {
    const plain = JSON.parse('{"amount_cents":1}') as unknown;
    const withProto = JSON.parse('{"amount_cents":1,"__proto__":{"x":1}}') as unknown;
    expect(canonicalJson(withProto)).toBe('{"__proto__":{"x":1},"amount_cents":1}');
    expect(digestOf(withProto)).not.toBe(digestOf(plain));
  });

  it('refuses a cyclic value with a TypeError instead of overflowing the stack', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { inner: [cyclic] };
    expect(() => canonicalJson(cyclic)).toThrow(TypeError);
    // The same object twice, side by side, is not a cycle.
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared, shared] })).toBe('{"a":{"x":1},"b":[{"x":1},{"x":1}]}');
  });
});
