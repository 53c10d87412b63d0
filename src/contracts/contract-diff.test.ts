import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AnyToolContract, ToolContractDefinition, ToolInputSchema } from '../tools/define-tool';
import { defineToolContract } from '../tools/define-tool';
import type { ContractChange } from './contract-diff';
import { diffSnapshots } from './contract-diff';
import { snapshotContracts } from './contract-snapshot';

// Two versions of a registry, each built with defineToolContract as a tool author writes it; the diff
// of their snapshots is what `toolgate contract check` reports.

const reason = z
  .enum(['damaged', 'not_delivered', 'customer_request'])
  .describe('Why the customer is refunded.');

function refundInput(fields: Record<string, z.ZodType> = {}) {
  return z.strictObject({
    order_id: z
      .string()
      .regex(/^ORD-\d{4}$/)
      .describe('Order id, for example ORD-1001.'),
    amount_cents: z.int().positive().max(100_000).describe('Refund amount in cents.'),
    reason,
    note: z.string().max(200).optional().describe('A note for the customer.'),
    ...fields,
  });
}

const refundOutput = z.strictObject({
  refund_id: z.string(),
  amount_cents: z.int(),
  status: z.enum(['applied', 'queued']),
  remaining_refundable_cents: z.int(),
});

/** A small and a large refund: the risk function gives them different levels. */
const refundExamples = [
  { order_id: 'ORD-1001', amount_cents: 2590, reason: 'damaged' },
  { order_id: 'ORD-1002', amount_cents: 25_000, reason: 'not_delivered' },
];

function refundTool(
  overrides: Partial<ToolContractDefinition<ToolInputSchema, z.ZodType>> = {},
): AnyToolContract {
  const definition: ToolContractDefinition<ToolInputSchema, z.ZodType> = {
    name: 'refund_order',
    description: 'Refund part or all of an order, in cents. Only when the user asked for a refund.',
    input: refundInput(),
    output: refundOutput,
    effect: 'write',
    risk: ({ args }) => ((args.amount_cents as number) > 10_000 ? 'critical' : 'irreversible'),
    domainCodes: {
      ORDER_NOT_FOUND: 'no order has this id',
      AMOUNT_EXCEEDS_REFUNDABLE: 'more than what is still refundable',
    },
    idempotencyFields: ['order_id', 'amount_cents'],
    ...overrides,
  };
  return defineToolContract(definition);
}

const readTool = defineToolContract({
  name: 'get_order',
  description: 'Read one order: its total and what is still refundable. No side effects.',
  input: z.strictObject({ order_id: z.string().describe('Order id, for example ORD-1001.') }),
  output: z.strictObject({ order_id: z.string(), total_cents: z.int() }),
  effect: 'read',
});

/** The diff between a registry of `before` and one of `after`. */
function diff(before: AnyToolContract[], after: AnyToolContract[]) {
  return diffSnapshots(snapshotContracts({ tools: before }), snapshotContracts({ tools: after }));
}

/** The one change between two versions of the refund tool, and that it is the only one. */
function onlyChange(after: AnyToolContract, before: AnyToolContract = refundTool()): ContractChange {
  const { changes } = diff([before], [after]);
  expect(changes, JSON.stringify(changes, null, 2)).toHaveLength(1);
  return changes[0]!;
}

describe('what is no change at all', () => {
  it('sees no change when fields, keys, enum values and domain codes are only reordered', () => {
    const reordered = defineToolContract({
      name: 'refund_order',
      description: 'Refund part or all of an order, in cents. Only when the user asked for a refund.',
      input: z.strictObject({
        note: z.string().max(200).optional().describe('A note for the customer.'),
        reason: z
          .enum(['customer_request', 'not_delivered', 'damaged'])
          .describe('Why the customer is refunded.'),
        amount_cents: z.int().max(100_000).positive().describe('Refund amount in cents.'),
        order_id: z
          .string()
          .regex(/^ORD-\d{4}$/)
          .describe('Order id, for example ORD-1001.'),
      }),
      output: z.strictObject({
        remaining_refundable_cents: z.int(),
        status: z.enum(['queued', 'applied']),
        amount_cents: z.int(),
        refund_id: z.string(),
      }),
      effect: 'write',
      risk: ({ args }) => (args.amount_cents > 10_000 ? 'critical' : 'irreversible'),
      domainCodes: {
        AMOUNT_EXCEEDS_REFUNDABLE: 'more than what is still refundable',
        ORDER_NOT_FOUND: 'no order has this id',
      },
      idempotencyFields: ['amount_cents', 'order_id'],
      examples: [
        { order_id: 'ORD-1002', reason: 'not_delivered', amount_cents: 25_000 },
        { reason: 'damaged', amount_cents: 2590, order_id: 'ORD-1001' },
      ],
    });
    const original = refundTool({ examples: refundExamples });
    const result = diff([original, readTool], [readTool, reordered]);
    expect(result).toMatchObject({ ok: true, verdict: 'unchanged', changes: [] });
    const [before, after] = [original, reordered].map(
      (tool) => snapshotContracts({ tools: [tool] }).tools[0]!.fingerprints,
    );
    expect(after).toEqual(before);
  });

  it('sees no change between two ways of writing one integer bound (> 0 and >= 1)', () => {
    const before = refundTool({ input: refundInput({ count: z.int().positive().describe('How many.') }) });
    const after = refundTool({ input: refundInput({ count: z.int().min(1).describe('How many.') }) });
    expect(diff([before], [after]).changes).toEqual([]);
  });
});

describe('behavioural changes: flagged, the check passes, the selection suite must run', () => {
  it("reports a tool's description change as behavioural, not breaking, with both texts", () => {
    const change = onlyChange(
      refundTool({ description: 'Refund an order. Call get_order first; only when the user asked for it.' }),
    );
    expect(change).toMatchObject({
      verdict: 'behavioural',
      kind: 'DESCRIPTION_CHANGED',
      tool: 'refund_order',
      path: 'description',
      before: 'Refund part or all of an order, in cents. Only when the user asked for a refund.',
      after: 'Refund an order. Call get_order first; only when the user asked for it.',
    });
    const result = diff(
      [refundTool()],
      [refundTool({ description: 'Refund an order, in cents, when asked.' })],
    );
    expect(result).toMatchObject({ ok: true, verdict: 'behavioural', selectionSuiteMustRun: true });
  });

  it("reports a parameter's description change at the parameter's path, and moves only the discovery fingerprint", () => {
    const after = refundTool({
      input: refundInput({ reason: reason.describe('Why the customer is refunded, in their words.') }),
    });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'behavioural',
      kind: 'DESCRIPTION_CHANGED',
      path: 'input.reason',
      aspect: 'description',
      before: 'Why the customer is refunded.',
      after: 'Why the customer is refunded, in their words.',
    });
    const [old, now] = [refundTool(), after].map((tool) => snapshotContracts({ tools: [tool] }).tools[0]!);
    expect(now!.fingerprints.invocation).toBe(old!.fingerprints.invocation);
    expect(now!.fingerprints.discovery).not.toBe(old!.fingerprints.discovery);
  });

  it('reports a new tool as behavioural', () => {
    const result = diff([refundTool()], [refundTool(), readTool]);
    expect(result.changes).toEqual([
      expect.objectContaining({ verdict: 'behavioural', kind: 'TOOL_ADDED', tool: 'get_order', path: '' }),
    ]);
    expect(result.ok).toBe(true);
  });
});

describe('breaking changes: the check fails and says what changed, where', () => {
  it('a tool removed', () => {
    const result = diff([refundTool(), readTool], [readTool]);
    expect(result.changes).toEqual([
      expect.objectContaining({ verdict: 'breaking', kind: 'TOOL_REMOVED', tool: 'refund_order' }),
    ]);
    expect(result).toMatchObject({ ok: false, verdict: 'breaking' });
  });

  it('a new required parameter', () => {
    const after = refundTool({
      input: refundInput({ currency: z.enum(['BRL', 'USD']).describe('Currency.') }),
    });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'breaking',
      kind: 'FIELD_ADDED',
      path: 'input.currency',
      after: { type: 'string', required: true, enum: ['BRL', 'USD'] },
    });
  });

  it('an optional parameter made required', () => {
    const after = refundTool({
      input: refundInput({ note: z.string().max(200).describe('A note for the customer.') }),
    });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'breaking',
      kind: 'FIELD_NOW_REQUIRED',
      path: 'input.note',
      before: false,
      after: true,
    });
  });

  it('an enum value removed', () => {
    const after = refundTool({
      input: refundInput({
        reason: z.enum(['damaged', 'not_delivered']).describe('Why the customer is refunded.'),
      }),
    });
    const change = onlyChange(after);
    expect(change).toMatchObject({ verdict: 'breaking', kind: 'ENUM_VALUE_REMOVED', path: 'input.reason' });
    expect(change.message).toContain('"customer_request" removed');
  });

  it('a type changed', () => {
    const after = refundTool({
      input: refundInput({ amount_cents: z.string().describe('Refund amount in cents.') }),
    });
    const { changes } = diff([refundTool()], [after]);
    expect(changes[0]).toMatchObject({
      verdict: 'breaking',
      kind: 'TYPE_CHANGED',
      path: 'input.amount_cents',
      before: 'integer',
      after: 'string',
    });
  });

  it('a pattern changed, and a pattern added', () => {
    const changed = refundTool({
      input: refundInput({
        order_id: z
          .string()
          .regex(/^ORD-\d{6}$/)
          .describe('Order id, for example ORD-1001.'),
      }),
    });
    expect(onlyChange(changed)).toMatchObject({
      verdict: 'breaking',
      kind: 'CONSTRAINT_CHANGED',
      path: 'input.order_id',
      aspect: 'pattern',
      before: '^ORD-\\d{4}$',
      after: '^ORD-\\d{6}$',
    });
    const added = refundTool({
      input: refundInput({
        note: z
          .string()
          .max(200)
          .regex(/^[^<>]*$/)
          .optional()
          .describe('A note for the customer.'),
      }),
    });
    expect(onlyChange(added)).toMatchObject({
      verdict: 'breaking',
      kind: 'CONSTRAINT_TIGHTENED',
      path: 'input.note',
      aspect: 'pattern',
    });
  });

  it('a maximum lowered', () => {
    const after = refundTool({
      input: refundInput({
        amount_cents: z.int().positive().max(50_000).describe('Refund amount in cents.'),
      }),
    });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'breaking',
      kind: 'CONSTRAINT_TIGHTENED',
      path: 'input.amount_cents',
      aspect: 'maximum',
      before: '<= 100000',
      after: '<= 50000',
    });
  });

  it('a minimum raised', () => {
    const after = refundTool({
      input: refundInput({ amount_cents: z.int().min(100).max(100_000).describe('Refund amount in cents.') }),
    });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'breaking',
      kind: 'CONSTRAINT_TIGHTENED',
      path: 'input.amount_cents',
      aspect: 'minimum',
      before: '>= 1',
      after: '>= 100',
    });
  });

  it('a new bound where there was none', () => {
    const after = refundTool({
      input: refundInput({ count: z.int().max(10).describe('How many.') }),
    });
    const before = refundTool({ input: refundInput({ count: z.int().describe('How many.') }) });
    expect(onlyChange(after, before)).toMatchObject({
      verdict: 'breaking',
      kind: 'CONSTRAINT_TIGHTENED',
      path: 'input.count',
      aspect: 'maximum',
      before: 'none',
      after: '<= 10',
    });
  });

  it('a maxLength lowered', () => {
    const after = refundTool({
      input: refundInput({ note: z.string().max(100).optional().describe('A note for the customer.') }),
    });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'breaking',
      kind: 'CONSTRAINT_TIGHTENED',
      path: 'input.note',
      aspect: 'maxLength',
      before: 200,
      after: 100,
    });
  });

  it('an input field removed', () => {
    const after = refundTool({ input: refundInput().omit({ note: true }) });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'breaking',
      kind: 'FIELD_REMOVED',
      path: 'input.note',
    });
  });

  it('an output field renamed: the removal is breaking, at its path, and names the likely new name', () => {
    const after = refundTool({
      output: refundOutput.omit({ remaining_refundable_cents: true }).extend({ remaining_cents: z.int() }),
    });
    const { changes, ok } = diff([refundTool()], [after]);
    expect(ok).toBe(false);
    expect(changes).toEqual([
      expect.objectContaining({
        verdict: 'breaking',
        kind: 'FIELD_REMOVED',
        path: 'output.remaining_refundable_cents',
        before: { type: 'integer', required: true },
      }),
      expect.objectContaining({ verdict: 'compatible', kind: 'FIELD_ADDED', path: 'output.remaining_cents' }),
    ]);
    expect(changes[0]!.message).toContain('renamed to "remaining_cents"?');
  });

  it('an output field that was always there may now be missing', () => {
    const after = refundTool({ output: refundOutput.extend({ refund_id: z.string().optional() }) });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'breaking',
      kind: 'FIELD_NOW_OPTIONAL',
      path: 'output.refund_id',
    });
  });

  it('an output enum value added: a reader told the old values meets one it does not know', () => {
    const after = refundTool({
      output: refundOutput.extend({ status: z.enum(['applied', 'queued', 'held']) }),
    });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'breaking',
      kind: 'ENUM_VALUE_ADDED',
      path: 'output.status',
    });
  });

  it('a domain code removed, and one renamed', () => {
    const removed = refundTool({ domainCodes: { ORDER_NOT_FOUND: 'no order has this id' } });
    expect(onlyChange(removed)).toMatchObject({
      verdict: 'breaking',
      kind: 'DOMAIN_CODE_REMOVED',
      path: 'domainCodes.AMOUNT_EXCEEDS_REFUNDABLE',
    });
    const renamed = refundTool({
      domainCodes: {
        ORDER_MISSING: 'no order has this id',
        AMOUNT_EXCEEDS_REFUNDABLE: 'more than what is still refundable',
      },
    });
    const { changes } = diff([refundTool()], [renamed]);
    expect(changes.map(({ verdict, kind, path }) => ({ verdict, kind, path }))).toEqual([
      { verdict: 'breaking', kind: 'DOMAIN_CODE_REMOVED', path: 'domainCodes.ORDER_NOT_FOUND' },
      { verdict: 'compatible', kind: 'DOMAIN_CODE_ADDED', path: 'domainCodes.ORDER_MISSING' },
    ]);
    expect(changes[0]!.message).toContain('renamed to ORDER_MISSING?');
  });

  it("a risk level lowered on one of the tool's examples", () => {
    const after = refundTool({
      examples: refundExamples,
      risk: ({ args }) => ((args.amount_cents as number) > 50_000 ? 'critical' : 'irreversible'),
    });
    const change = onlyChange(after, refundTool({ examples: refundExamples }));
    expect(change).toMatchObject({
      verdict: 'breaking',
      kind: 'RISK_LOWERED',
      path: 'examples[1]',
      aspect: 'risk',
      before: 'critical',
      after: 'irreversible',
    });
    expect(change.message).toContain('"amount_cents":25000');
  });

  it("an amount lowered on one of the tool's examples: the amount limits count less", () => {
    const cents = {
      examples: refundExamples,
      amount: (args: Record<string, unknown>) => args.amount_cents as number,
    };
    const after = refundTool({
      examples: refundExamples,
      amount: (args) => Math.min(args.amount_cents as number, 10_000),
    });
    const change = onlyChange(after, refundTool(cents));
    expect(change).toMatchObject({
      verdict: 'breaking',
      kind: 'AMOUNT_LOWERED',
      path: 'examples[1]',
      aspect: 'amount',
      before: 25_000,
      after: 10_000,
    });
    expect(change.message).toContain('"amount_cents":25000');
  });

  it('an amount function removed: every example is no longer counted, a breaking change', () => {
    const cents = {
      examples: refundExamples,
      amount: (args: Record<string, unknown>) => args.amount_cents as number,
    };
    const { changes } = diff([refundTool(cents)], [refundTool({ examples: refundExamples })]);
    expect(
      changes.map(({ verdict, kind, path, before, after }) => ({ verdict, kind, path, before, after })),
    ).toEqual([
      { verdict: 'breaking', kind: 'AMOUNT_LOWERED', path: 'examples[0]', before: 2590, after: undefined },
      { verdict: 'breaking', kind: 'AMOUNT_LOWERED', path: 'examples[1]', before: 25_000, after: undefined },
    ]);
    expect(changes[0]!.message).toContain('no longer counted');
  });

  it('an amount function added or raising an amount: limits only get stricter, a compatible change', () => {
    const cents = {
      examples: refundExamples,
      amount: (args: Record<string, unknown>) => args.amount_cents as number,
    };
    const added = diff([refundTool({ examples: refundExamples })], [refundTool(cents)]);
    expect(added.ok).toBe(true);
    expect(added.changes.map(({ verdict, kind, after }) => ({ verdict, kind, after }))).toEqual([
      { verdict: 'compatible', kind: 'AMOUNT_RAISED', after: 2590 },
      { verdict: 'compatible', kind: 'AMOUNT_RAISED', after: 25_000 },
    ]);
    expect(added.changes[0]!.message).toContain('now counted (2590)');
    const doubled = refundTool({ ...cents, amount: (args) => (args.amount_cents as number) * 2 });
    expect(diff([refundTool(cents)], [doubled]).changes.map(({ verdict, kind }) => [verdict, kind])).toEqual([
      ['compatible', 'AMOUNT_RAISED'],
      ['compatible', 'AMOUNT_RAISED'],
    ]);
  });

  it('the effect lowered from write to read', () => {
    const after = refundTool({ effect: 'read', risk: undefined, examples: refundExamples });
    const { changes } = diff([refundTool({ examples: refundExamples })], [after]);
    expect(changes.filter((change) => change.verdict === 'breaking').map((change) => change.kind)).toEqual([
      'EFFECT_LOWERED',
      'RISK_LOWERED',
      'RISK_LOWERED',
    ]);
  });

  it('the idempotency fields changed: call ids change across the deploy', () => {
    const after = refundTool({ idempotencyFields: ['order_id'] });
    expect(onlyChange(after)).toMatchObject({
      verdict: 'breaking',
      kind: 'IDEMPOTENCY_FIELDS_CHANGED',
      before: ['amount_cents', 'order_id'],
      after: ['order_id'],
    });
  });

  it('a removed object parameter is reported once, not once per field inside it', () => {
    const address = z
      .strictObject({ city: z.string().describe('City.'), zip: z.string().describe('Postal code.') })
      .optional()
      .describe('Where to send the refund letter.');
    const before = refundTool({ input: refundInput({ address }) });
    expect(onlyChange(refundTool(), before)).toMatchObject({
      verdict: 'breaking',
      kind: 'FIELD_REMOVED',
      path: 'input.address',
    });
  });

  it('finds a change deep inside arrays and objects, at its path', () => {
    const line = (sku: z.ZodString) =>
      z.array(z.strictObject({ sku: sku.describe('Item code.') })).describe('The order lines.');
    const before = refundTool({ input: refundInput({ lines: line(z.string().max(20)) }) });
    const after = refundTool({ input: refundInput({ lines: line(z.string().max(10)) }) });
    expect(onlyChange(after, before)).toMatchObject({
      verdict: 'breaking',
      kind: 'CONSTRAINT_TIGHTENED',
      path: 'input.lines[].sku',
      aspect: 'maxLength',
    });
  });
});

describe('compatible changes: the check passes', () => {
  const withExamples = () => refundTool({ examples: refundExamples });
  it.each<[string, () => AnyToolContract, Partial<ContractChange>, (() => AnyToolContract)?]>([
    [
      'an optional parameter added',
      () =>
        refundTool({
          input: refundInput({ channel: z.string().optional().describe('Where it was asked.') }),
        }),
      { kind: 'FIELD_ADDED', path: 'input.channel' },
    ],
    [
      'an enum value added',
      () =>
        refundTool({
          input: refundInput({
            reason: z
              .enum(['damaged', 'not_delivered', 'customer_request', 'late'])
              .describe('Why the customer is refunded.'),
          }),
        }),
      { kind: 'ENUM_VALUE_ADDED', path: 'input.reason' },
    ],
    [
      'a maximum raised',
      () =>
        refundTool({
          input: refundInput({
            amount_cents: z.int().positive().max(500_000).describe('Refund amount in cents.'),
          }),
        }),
      { kind: 'CONSTRAINT_LOOSENED', path: 'input.amount_cents', aspect: 'maximum' },
    ],
    [
      'a maxLength raised',
      () =>
        refundTool({
          input: refundInput({ note: z.string().max(500).optional().describe('A note for the customer.') }),
        }),
      { kind: 'CONSTRAINT_LOOSENED', path: 'input.note', aspect: 'maxLength' },
    ],
    [
      'a pattern removed',
      () =>
        refundTool({
          input: refundInput({ order_id: z.string().describe('Order id, for example ORD-1001.') }),
        }),
      { kind: 'CONSTRAINT_LOOSENED', path: 'input.order_id', aspect: 'pattern' },
    ],
    [
      'a parameter that now also takes null',
      () =>
        refundTool({
          input: refundInput({
            note: z.string().max(200).nullable().optional().describe('A note for the customer.'),
          }),
        }),
      { kind: 'TYPE_CHANGED', path: 'input.note', before: 'string', after: ['null', 'string'] },
    ],
    [
      'a domain code added',
      () =>
        refundTool({
          domainCodes: {
            ORDER_NOT_FOUND: 'no order has this id',
            AMOUNT_EXCEEDS_REFUNDABLE: 'more than what is still refundable',
            ORDER_LOCKED: 'the order is locked',
          },
        }),
      { kind: 'DOMAIN_CODE_ADDED', path: 'domainCodes.ORDER_LOCKED' },
    ],
    [
      'an output field added',
      () => refundTool({ output: refundOutput.extend({ refunded_at: z.string() }) }),
      { kind: 'FIELD_ADDED', path: 'output.refunded_at' },
    ],
    [
      'an output enum value removed (the tool promises less)',
      () => refundTool({ output: refundOutput.extend({ status: z.enum(['applied']) }) }),
      { kind: 'ENUM_VALUE_REMOVED', path: 'output.status' },
    ],
    [
      'a risk level raised on an example',
      () => refundTool({ risk: () => 'critical', examples: refundExamples }),
      { kind: 'RISK_RAISED', path: 'examples[0]', before: 'irreversible', after: 'critical' },
      withExamples,
    ],
    [
      'an example added',
      () =>
        refundTool({
          examples: [...refundExamples, { order_id: 'ORD-1003', amount_cents: 100, reason: 'damaged' }],
        }),
      { kind: 'EXAMPLE_ADDED', path: 'examples[2]' },
      withExamples,
    ],
  ])('%s', (_case, after, expected, before = () => refundTool()) => {
    const result = diff([before()], [after()]);
    expect(result.changes).toEqual([expect.objectContaining({ verdict: 'compatible', ...expected })]);
    expect(result).toMatchObject({ ok: true, verdict: 'compatible', selectionSuiteMustRun: false });
  });
});

describe('the order of a report', () => {
  it('lists breaking changes first, then compatible, then behavioural, by tool and path', () => {
    const after = refundTool({
      description: 'Refund an order, in cents, only when the user asked for it.',
      input: refundInput({ channel: z.string().optional().describe('Where it was asked.') }).omit({
        note: true,
      }),
    });
    const { changes } = diff([refundTool()], [after, readTool]);
    expect(changes.map(({ verdict, tool, path }) => `${verdict} ${tool}.${path}`)).toEqual([
      'breaking refund_order.input.note',
      'compatible refund_order.input.channel',
      'behavioural get_order.',
      'behavioural refund_order.description',
    ]);
  });
});

describe('what the plain rules used to miss: unions, defaults, unwritable types, odd names, decimals', () => {
  const target = (amountDescription: string, ...more: z.ZodObject[]) =>
    z
      .discriminatedUnion('kind', [
        z.strictObject({ kind: z.literal('order'), amount: z.int().describe(amountDescription) }),
        z.strictObject({ kind: z.literal('shipping') }),
        ...more,
      ])
      .describe('What to refund.');

  it('reports a description changed inside a discriminated-union branch at its path, as behavioural', () => {
    const before = refundTool({ input: refundInput({ target: target('Refund amount in cents.') }) });
    const after = refundTool({ input: refundInput({ target: target('Refund amount in dollars.') }) });
    expect(onlyChange(after, before)).toMatchObject({
      verdict: 'behavioural',
      kind: 'DESCRIPTION_CHANGED',
      path: 'input.target(kind="order").amount',
      before: 'Refund amount in cents.',
      after: 'Refund amount in dollars.',
    });
    const [old, now] = [before, after].map((tool) => snapshotContracts({ tools: [tool] }).tools[0]!);
    expect(now!.fingerprints.invocation).toBe(old!.fingerprints.invocation);
    expect(now!.fingerprints.discovery).not.toBe(old!.fingerprints.discovery);
  });

  it('reports a description changed inside a plain union branch as behavioural, and moves only the discovery fingerprint', () => {
    const id = (description: string) =>
      z.union([z.string().max(20).describe(description), z.int()]).describe('Which order.');
    const before = refundTool({ input: refundInput({ lookup: id('The order id, ORD-1234.') }) });
    const after = refundTool({ input: refundInput({ lookup: id('The customer id, CUS-12.') }) });
    const result = diff([before], [after]);
    expect(result).toMatchObject({ verdict: 'behavioural', selectionSuiteMustRun: true });
    expect(result.changes).toEqual([
      expect.objectContaining({ kind: 'DESCRIPTION_CHANGED', path: 'input.lookup', aspect: 'description' }),
    ]);
    const [old, now] = [before, after].map((tool) => snapshotContracts({ tools: [tool] }).tools[0]!);
    expect(now!.fingerprints.invocation).toBe(old!.fingerprints.invocation);
    expect(now!.fingerprints.discovery).not.toBe(old!.fingerprints.discovery);
  });

  it('a branch added to an input discriminated union is compatible, removed is breaking, each at its path', () => {
    const tax = z.strictObject({ kind: z.literal('tax'), rate: z.number() });
    const two = refundTool({ input: refundInput({ target: target('Amount.') }) });
    const three = refundTool({ input: refundInput({ target: target('Amount.', tax) }) });
    expect(onlyChange(three, two)).toMatchObject({
      verdict: 'compatible',
      kind: 'BRANCH_ADDED',
      path: 'input.target(kind="tax")',
    });
    expect(onlyChange(two, three)).toMatchObject({
      verdict: 'breaking',
      kind: 'BRANCH_REMOVED',
      path: 'input.target(kind="tax")',
    });
  });

  it('an output field removed inside a discriminated-union branch is breaking, at its path', () => {
    const found = { status: z.literal('found'), total_cents: z.int() };
    const output = (fields: Record<string, z.ZodType>) =>
      z.discriminatedUnion('status', [
        z.strictObject({ ...found, ...fields }),
        z.strictObject({ status: z.literal('missing') }),
      ]);
    const before = refundTool({ output: output({ currency: z.string() }) });
    const after = refundTool({ output: output({}) });
    expect(onlyChange(after, before)).toMatchObject({
      verdict: 'breaking',
      kind: 'FIELD_REMOVED',
      path: 'output(status="found").currency',
    });
  });

  it.each([
    ['removed', z.boolean().default(true), z.boolean().optional()],
    ['changed', z.boolean().default(true), z.boolean().default(false)],
    ['added to an optional field', z.boolean().optional(), z.boolean().default(true)],
  ])(
    'an input default %s is breaking: calls that leave the field out now mean something else',
    (_case, old, now) => {
      const before = refundTool({ input: refundInput({ notify: old.describe('Tell the customer.') }) });
      const after = refundTool({ input: refundInput({ notify: now.describe('Tell the customer.') }) });
      expect(onlyChange(after, before)).toMatchObject({
        verdict: 'breaking',
        kind: 'DEFAULT_CHANGED',
        path: 'input.notify',
        message: expect.stringContaining('calls that leave the field out') as string,
      });
    },
  );

  it('a default added to a field that was required is compatible: no call could leave it out before', () => {
    const before = refundTool({ input: refundInput({ notify: z.boolean().describe('Tell the customer.') }) });
    const after = refundTool({
      input: refundInput({ notify: z.boolean().default(true).describe('Tell the customer.') }),
    });
    const result = diff([before], [after]);
    expect(result.verdict).toBe('compatible');
    expect(result.changes.map((change) => change.kind)).toEqual(['FIELD_NOW_OPTIONAL', 'DEFAULT_CHANGED']);
  });

  it.each([
    ['a transform to a number, now a string', z.string().transform(Number), z.string()],
    ['a date, now a bigint', z.date(), z.bigint()],
    ['a string, now a date', z.string(), z.date()],
  ])('an output type JSON Schema cannot express is not "any": %s is breaking', (_case, old, now) => {
    const before = refundTool({ output: refundOutput.extend({ refunded_at: old }) });
    const after = refundTool({ output: refundOutput.extend({ refunded_at: now }) });
    expect(onlyChange(after, before)).toMatchObject({
      verdict: 'breaking',
      kind: 'TYPE_CHANGED',
      path: 'output.refunded_at',
    });
  });

  it('a parameter named "$" is its own field, never the root', () => {
    const input = (dollar: z.ZodType) => refundInput({ $: dollar.describe('A field named like the root.') });
    const tightened = onlyChange(
      refundTool({ input: input(z.string().max(3)) }),
      refundTool({ input: input(z.string()) }),
    );
    expect(tightened).toMatchObject({
      kind: 'CONSTRAINT_TIGHTENED',
      path: 'input["$"]',
      aspect: 'maxLength',
    });
    // The field does not overwrite the root's entry: the input stays a closed object at `$`.
    const { input: fields } = snapshotContracts({ tools: [refundTool({ input: input(z.string()) })] })
      .tools[0]!;
    expect(fields.$).toMatchObject({ type: 'object', additionalProperties: false });
    expect(fields['["$"]']).toMatchObject({ type: 'string', required: true });
  });

  it.each([
    [0.3, 0.1, 'CONSTRAINT_LOOSENED', 'compatible'],
    [0.1, 0.3, 'CONSTRAINT_TIGHTENED', 'breaking'],
    [0.2, 0.3, 'CONSTRAINT_CHANGED', 'breaking'],
    [0.01, 0.05, 'CONSTRAINT_TIGHTENED', 'breaking'],
  ])('multipleOf %s to %s compares the decimals as written: %s', (old, now, kind, verdict) => {
    const rate = (step: number) => refundInput({ rate: z.number().multipleOf(step).describe('The rate.') });
    expect(onlyChange(refundTool({ input: rate(now) }), refundTool({ input: rate(old) }))).toMatchObject({
      kind,
      verdict,
      path: 'input.rate',
      aspect: 'multipleOf',
    });
  });
});

describe('on whose behalf: bound parameters and untrusted output', () => {
  const withCustomer = (bound?: Record<string, 'onBehalfOf' | 'tenant'>) =>
    refundTool({
      input: refundInput({ customer_id: z.string().min(1).describe('The customer.') }),
      ...(bound ? { boundParameters: bound } : {}),
    });
  const noteOutput = z.strictObject({ order_id: z.string(), note: z.string(), status: z.string() });
  const readWith = (untrustedOutput?: true | string[]) =>
    defineToolContract({
      name: 'get_order',
      description: 'Read one order. No side effects.',
      input: z.strictObject({ order_id: z.string().describe('Order id.') }),
      output: noteOutput,
      effect: 'read',
      ...(untrustedOutput !== undefined ? { untrustedOutput } : {}),
    });

  it('records the bound parameters and untrusted output in the snapshot, sorted', () => {
    const snapshot = snapshotContracts({
      tools: [withCustomer({ customer_id: 'onBehalfOf' }), readWith(['status', 'note'])],
    });
    const [read, refund] = snapshot.tools;
    expect(refund).toMatchObject({ boundParameters: { customer_id: 'onBehalfOf' } });
    // The model never sees a bound field: the snapshot's input is the model's.
    expect(Object.keys(refund!.input)).not.toContain('input.customer_id');
    expect(read).toMatchObject({ untrustedOutput: ['note', 'status'] });
    expect(read).not.toHaveProperty('boundParameters');
  });

  it('unbinding a parameter is breaking: the model would choose the end user', () => {
    const { changes } = diff([withCustomer({ customer_id: 'onBehalfOf' })], [withCustomer()]);
    expect(changes.map((change) => [change.verdict, change.kind, change.path])).toEqual([
      ['breaking', 'BOUND_PARAMETER_REMOVED', 'boundParameters.customer_id'],
      // The model's schema now asks for it: a required field added.
      ['breaking', 'FIELD_ADDED', 'input.customer_id'],
    ]);
  });

  it('binding a parameter, or changing its source, is breaking', () => {
    const bound = diff([withCustomer()], [withCustomer({ customer_id: 'onBehalfOf' })]);
    expect(bound.ok).toBe(false);
    expect(bound.changes.map((change) => change.kind).sort()).toEqual([
      'BOUND_PARAMETER_ADDED',
      'FIELD_REMOVED',
    ]);
    const moved = diff(
      [withCustomer({ customer_id: 'onBehalfOf' })],
      [withCustomer({ customer_id: 'tenant' })],
    );
    expect(moved.changes).toEqual([
      expect.objectContaining({
        verdict: 'breaking',
        kind: 'BOUND_PARAMETER_SOURCE_CHANGED',
        before: 'onBehalfOf',
        after: 'tenant',
      }),
    ]);
  });

  it('less untrusted output is breaking; more is compatible', () => {
    const kinds = (before: AnyToolContract, after: AnyToolContract) =>
      diff([before], [after]).changes.map((change) => [change.verdict, change.kind]);
    expect(kinds(readWith(['note']), readWith())).toEqual([['breaking', 'UNTRUSTED_OUTPUT_NARROWED']]);
    expect(kinds(readWith(true), readWith(['note']))).toEqual([['breaking', 'UNTRUSTED_OUTPUT_NARROWED']]);
    expect(kinds(readWith(['note']), readWith(['status']))).toEqual([
      ['breaking', 'UNTRUSTED_OUTPUT_NARROWED'],
    ]);
    expect(kinds(readWith(), readWith(['note']))).toEqual([['compatible', 'UNTRUSTED_OUTPUT_WIDENED']]);
    expect(kinds(readWith(['note']), readWith(['note', 'status']))).toEqual([
      ['compatible', 'UNTRUSTED_OUTPUT_WIDENED'],
    ]);
    expect(kinds(readWith(['note']), readWith(true))).toEqual([['compatible', 'UNTRUSTED_OUTPUT_WIDENED']]);
    expect(kinds(readWith(['status', 'note']), readWith(['note', 'status']))).toEqual([]);
  });
});
