import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { digestOf } from '../shared/canonical-json';
import { contractDigestInputOf, contractDigestOf } from './contract-digest';
import { defineToolContract } from './define-tool';
import type { RiskLevel } from './risk-levels';
import { markUnrepresentable, zodTypeKeyword } from './unrepresentable-types';
import { getOrderContract } from '../../examples/orders/orders-contracts';

/** The orders example's get_order as it was before it bound its customer to the context. */
const getOrderContractWithoutBinding = defineToolContract({
  name: getOrderContract.name,
  description: getOrderContract.description,
  input: z.strictObject({ order_id: getOrderContract.input.shape.order_id }),
  output: getOrderContract.output,
  effect: 'read',
  domainCodes: { ORDER_NOT_FOUND: 'no order has this id' },
  summarize: getOrderContract.summarize,
  examples: getOrderContract.examples,
});

/** A refund contract with what a deploy may change; every default is the same from one call to the next. */
function refund(
  changes: {
    description?: string;
    amountCents?: z.ZodType<number>;
    fieldsReversed?: boolean;
    output?: z.ZodType;
    risk?: (input: { args: { amount_cents: number } }) => RiskLevel;
    domainCodes?: Record<string, string>;
    idempotencyFields?: readonly ('order_id' | 'amount_cents' | 'reason')[];
    summarize?: (args: { order_id: string; amount_cents: number }) => string;
    resource?: (args: { order_id: string }) => string;
    amount?: (args: { amount_cents: number }) => number;
  } = {},
) {
  const fields = {
    order_id: z
      .string()
      .regex(/^ORD-\d{4}$/)
      .describe('The order id, e.g. ORD-1001.'),
    amount_cents: changes.amountCents ?? z.int().positive().describe('Amount in cents.'),
    reason: z.enum(['damaged', 'not_delivered']).describe('Why, as the user said it.'),
  };
  const input = changes.fieldsReversed
    ? z.strictObject({ reason: fields.reason, amount_cents: fields.amount_cents, order_id: fields.order_id })
    : z.strictObject(fields);
  return defineToolContract({
    name: 'refund_order',
    description: changes.description ?? 'Refund part or all of an order. Call get_order first.',
    input,
    output: changes.output ?? z.strictObject({ refund_id: z.string().describe('The refund.') }),
    effect: 'write',
    risk: changes.risk ?? (({ args }) => (args.amount_cents > 10_000 ? 'critical' : 'irreversible')),
    domainCodes: changes.domainCodes ?? { ORDER_NOT_FOUND: 'no order has this id' },
    idempotencyFields: [...(changes.idempotencyFields ?? ['order_id', 'amount_cents'])],
    summarize: changes.summarize ?? ((args) => `refund ${args.amount_cents} on ${args.order_id}`),
    resource: changes.resource ?? ((args) => `order:${args.order_id}`),
    ...(changes.amount ? { amount: changes.amount } : {}),
    examples: [
      { order_id: 'ORD-1001', amount_cents: 2590, reason: 'damaged' },
      { order_id: 'ORD-1002', amount_cents: 8_000, reason: 'damaged' },
      { order_id: 'ORD-1003', amount_cents: 25_000, reason: 'not_delivered' },
    ],
  });
}

const before = contractDigestOf({ contract: refund() });

describe('the contract digest an approval binds', () => {
  it('is the same for the same contract, computed once per contract object', () => {
    const contract = refund();
    expect(contractDigestOf({ contract })).toBe(before);
    expect(contractDigestOf({ contract })).toBe(contractDigestOf({ contract }));
    expect(before).toMatch(/^[0-9a-f]{64}$/);
  });

  it.each([
    ['the tool’s description', { description: 'Refunds an order, in its currency. Read it first.' }],
    ['a field’s description', { amountCents: z.int().positive().describe('How much, in cents.') }],
    [
      'a field’s title',
      { amountCents: z.int().positive().describe('Amount in cents.').meta({ title: 'Amount' }) },
    ],
    ['the order of the fields', { fieldsReversed: true }],
    ['what a domain code is said to mean', { domainCodes: { ORDER_NOT_FOUND: 'the order does not exist' } }],
  ])('does not change with %s: a wording deploy leaves waiting rounds open', (_change, changes) => {
    expect(contractDigestOf({ contract: refund(changes) })).toBe(before);
  });

  it.each([
    ['a tightened range', { amountCents: z.int().positive().max(30_000).describe('Amount in cents.') }],
    ['a field’s type', { amountCents: z.number().positive().describe('Amount in cents.') }],
    ['the output schema', { output: z.strictObject({ refund_id: z.string(), note: z.string().optional() }) }],
    [
      'the risk function, where an example crosses the new threshold',
      {
        risk: ({ args }: { args: { amount_cents: number } }): RiskLevel =>
          args.amount_cents > 5_000 ? 'critical' : 'irreversible',
      },
    ],
    [
      'the risk function, where no example crosses the new threshold (its source is bound)',
      {
        risk: ({ args }: { args: { amount_cents: number } }): RiskLevel =>
          args.amount_cents > 10_001 ? 'critical' : 'irreversible',
      },
    ],
    ['the domain codes', { domainCodes: { ORDER_NOT_FOUND: 'no order', REFUND_LOCKED: 'locked' } }],
    ['the idempotency fields', { idempotencyFields: ['order_id', 'amount_cents', 'reason'] as const }],
    [
      'the summary function',
      { summarize: (args: { order_id: string; amount_cents: number }) => `refund on ${args.order_id}` },
    ],
    ['the resource function', { resource: () => 'orders' }],
  ])('changes with %s: what would run is another thing', (_change, changes) => {
    const contract = refund(changes);
    expect(contractDigestOf({ contract })).not.toBe(before);
  });
});

describe('the amount function', () => {
  const cents = (args: { amount_cents: number }): number => args.amount_cents;

  it('leaves the digest of a tool that declares none exactly as it was before amounts existed', () => {
    // Canonical JSON of the same keys is the same bytes: no key for an amount, none set to undefined.
    for (const contract of [refund(), getOrderContractWithoutBinding]) {
      const digested = contractDigestInputOf(contract);
      expect(Object.keys(digested).sort()).toEqual([
        'domainCodes',
        'effect',
        'functions',
        'idempotencyFields',
        'input',
        'name',
        'output',
        'riskOfExamples',
      ]);
      expect(Object.keys(digested.functions as object).sort()).toEqual(['resource', 'risk', 'summarize']);
      expect(contractDigestOf({ contract })).toBe(digestOf(digested));
    }
    expect(contractDigestOf({ contract: refund() })).toBe(before);
  });

  it('covers bound parameters only when a tool declares them', () => {
    expect(contractDigestInputOf(getOrderContract).boundParameters).toEqual({ customer_id: 'onBehalfOf' });
    expect(contractDigestOf({ contract: getOrderContract })).not.toBe(
      contractDigestOf({ contract: getOrderContractWithoutBinding }),
    );
  });

  it('covers its source and what it gives each example when declared', () => {
    const digested = contractDigestInputOf(refund({ amount: cents }));
    expect(digested.functions).toMatchObject({ amount: cents.toString() });
    expect(digested.amountOfExamples).toEqual([2590, 8_000, 25_000]);
  });

  it('changes the digest when declared, and when its source or what it gives an example changes', () => {
    const declared = contractDigestOf({ contract: refund({ amount: cents }) });
    expect(declared).not.toBe(before);
    expect(contractDigestOf({ contract: refund({ amount: cents }) })).toBe(declared);
    const doubled = contractDigestOf({ contract: refund({ amount: (args) => args.amount_cents * 2 }) });
    const constant = contractDigestOf({ contract: refund({ amount: () => 0 }) });
    expect(new Set([before, declared, doubled, constant]).size).toBe(4);
  });

  it('binds what it gives the examples, so a factor it closes over shows', () => {
    const scaled = (factor: number) =>
      contractDigestOf({ contract: refund({ amount: (args) => args.amount_cents * factor }) });
    expect(scaled(1)).not.toBe(scaled(100));
  });
});

describe('types JSON Schema cannot express', () => {
  const withRefundedAt = (refundedAt: z.ZodType) =>
    contractDigestOf({
      contract: refund({ output: z.strictObject({ refund_id: z.string(), refunded_at: refundedAt }) }),
    });

  it('changes with an output field that goes from or to a date, a bigint or a transform: none is "any value"', () => {
    const digests = [
      withRefundedAt(z.string()),
      withRefundedAt(z.date()),
      withRefundedAt(z.bigint()),
      withRefundedAt(z.string().transform((text) => Number(text))),
    ];
    expect(new Set(digests).size).toBe(digests.length);
  });

  it('writes a schema without one exactly as before: the digest of such a tool is what it always was', () => {
    const contract = refund();
    const plain = z.toJSONSchema(contract.output, { io: 'output', unrepresentable: 'any' });
    const marked = z.toJSONSchema(contract.output, { io: 'output', unrepresentable: markUnrepresentable });
    expect(marked).toEqual(plain);
    expect(
      z.toJSONSchema(z.strictObject({ at: z.date() }), {
        io: 'output',
        unrepresentable: markUnrepresentable,
      }),
    ).toMatchObject({ properties: { at: { [zodTypeKeyword]: 'date' } } });
  });
});
