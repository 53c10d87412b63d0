import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CallContext } from './call-context';
import {
  boundValues,
  checkContext,
  contextKey,
  contextValue,
  describeContext,
  maxContextClaims,
  maxContextIdLength,
} from './call-context';

/** Any JSON-ish value a harness or a raw client could send, prototype-shaped names included. */
const hostileKey = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'onBehalfOf',
    'claims',
  ),
  fc.string({ maxLength: 80 }),
);
const hostileValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string({ maxLength: 300 }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(hostileKey, tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('checkContext', () => {
  it('never throws, whatever it is given, and what it accepts is a context of the documented shape', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          hostileValue,
          fc.record({ onBehalfOf: hostileValue, claims: hostileValue }, { requiredKeys: [] }),
        ),
        (value) => {
          const checked = checkContext(value);
          if (!checked.ok) {
            expect(checked.problem.length).toBeGreaterThan(0);
            return;
          }
          const { context } = checked;
          for (const field of ['onBehalfOf', 'tenant'] as const) {
            const text = context[field];
            if (text !== undefined) expect(text.length).toBeLessThanOrEqual(maxContextIdLength);
          }
          if (context.claims) {
            expect(Object.getPrototypeOf(context.claims)).toBeNull();
            expect(Object.keys(context.claims).length).toBeLessThanOrEqual(maxContextClaims);
            for (const [name, claim] of Object.entries(context.claims)) {
              expect(name).toMatch(/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/);
              expect(typeof claim).toBe('string');
            }
          }
          // Serialising it never throws, and the same context gives the same key.
          expect(contextKey(context)).toBe(contextKey(JSON.parse(JSON.stringify(context)) as typeof context));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('refuses a claim named __proto__, unknown fields, control characters and oversized values', () => {
    const proto = JSON.parse('{"__proto__":"x"}') as Record<string, string>;
    expect(checkContext({ claims: proto }).ok).toBe(false);
    expect(checkContext({ onBehalfOf: 'CUS-1', role: 'admin' }).ok).toBe(false);
    expect(checkContext({ onBehalfOf: 'CUS-1\nCUS-2' }).ok).toBe(false);
    expect(checkContext({ onBehalfOf: 'CUS-\u202e1' }).ok).toBe(false);
    expect(checkContext({ onBehalfOf: 'x'.repeat(maxContextIdLength + 1) }).ok).toBe(false);
    const many = Object.fromEntries(
      Array.from({ length: maxContextClaims + 1 }, (_, index) => [`c${index}`, 'v']),
    );
    expect(checkContext({ claims: many }).ok).toBe(false);
    expect(checkContext({ channel: 'End User' }).ok).toBe(false);
    expect(checkContext({ claims: { plan: { nested: 'x' } } }).ok).toBe(false);
  });

  it('reads a claim named like a prototype member as data, never an inherited property', () => {
    const checked = checkContext({ claims: { constructor: 'gold' } });
    expect(checked.ok).toBe(true);
    const context = checked.ok ? checked.context : {};
    expect(contextValue(context, 'claims.constructor')).toBe('gold');
    expect(contextValue({}, 'claims.constructor')).toBeUndefined();
    expect(contextValue({ claims: {} }, 'claims.toString')).toBeUndefined();
  });
});

describe('bound values', () => {
  it('takes each bound field from its source, and leaves out a source the context lacks', () => {
    expect(
      boundValues({
        boundParameters: { customer_id: 'onBehalfOf', shop: 'tenant', plan: 'claims.plan' },
        context: { onBehalfOf: 'CUS-1', claims: { plan: 'gold' } },
      }),
    ).toEqual({ customer_id: 'CUS-1', plan: 'gold' });
  });

  it('describes a context for a person', () => {
    expect(describeContext({ onBehalfOf: 'CUS-1', channel: 'end-user-chat', tenant: 'shop-1' })).toBe(
      'for CUS-1 (tenant shop-1, end-user-chat)',
    );
    expect(describeContext({})).toBe('');
  });
});

describe('describeContext on what a raw client left in a call', () => {
  it('shows only text, never converting an object, and never throws', () => {
    const hostile = [
      null,
      'CUS-1',
      { onBehalfOf: { toString: 0 } },
      { onBehalfOf: ['CUS-1'], tenant: { valueOf: () => 1 }, channel: 7 },
    ] as unknown as CallContext[];
    expect(hostile.map((context) => describeContext(context))).toEqual([
      '',
      '',
      'for no end user',
      'for no end user',
    ]);
    expect(describeContext({ onBehalfOf: 'CUS-1', channel: 'end-user-chat', tenant: 'shop-br' })).toBe(
      'for CUS-1 (tenant shop-br, end-user-chat)',
    );
  });
});
