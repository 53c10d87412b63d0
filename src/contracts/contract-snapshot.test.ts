import { format } from 'prettier';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolContractDefinition } from '../tools/define-tool';
import { defineToolContract } from '../tools/define-tool';
import { ordersContracts, refundOrderContract } from '../../examples/orders/orders-contracts';
import {
  parentPath,
  parseContractSnapshot,
  serializeContractSnapshot,
  snapshotContracts,
} from './contract-snapshot';

const shipTool = defineToolContract({
  name: 'ship_items',
  description: 'Ship some lines of an order to an address. Only when the user asked for it.',
  input: z.strictObject({
    lines: z
      .array(
        z.strictObject({
          sku: z.string().max(20).describe('Item code.'),
          quantity: z.int().min(1).describe('How many.'),
        }),
      )
      .min(1)
      .describe('The lines to ship.'),
    address: z
      .strictObject({
        city: z.string().describe('City.'),
        zip: z
          .string()
          .regex(/^\d{5}$/)
          .describe('Postal code.'),
      })
      .describe('Where to ship.'),
    note: z.string().max(80).nullable().optional().describe('For the courier.'),
    priority: z.enum(['normal', 'express']).default('normal').describe('How fast.'),
  }),
  output: z.strictObject({
    shipment_id: z.string(),
    labels: z.record(z.string(), z.string()),
    position: z.tuple([z.number(), z.number()]),
    eta: z.string().nullable(),
  }),
  effect: 'write',
  risk: () => 'reversible',
  examples: [{ lines: [{ sku: 'A-1', quantity: 2 }], address: { city: 'Lisboa', zip: '12345' } }],
});

describe('snapshotContracts', () => {
  it('records each input field by path: type, required, bounds, pattern, enum, default and description', () => {
    const [tool] = snapshotContracts({ tools: [shipTool] }).tools;
    expect(tool!.input).toEqual({
      $: { type: 'object', required: true, additionalProperties: false },
      address: { type: 'object', required: true, additionalProperties: false, description: 'Where to ship.' },
      'address.city': { type: 'string', required: true, description: 'City.' },
      'address.zip': { type: 'string', required: true, pattern: '^\\d{5}$', description: 'Postal code.' },
      lines: { type: 'array', required: true, minItems: 1, description: 'The lines to ship.' },
      'lines[]': { type: 'object', required: true, additionalProperties: false },
      'lines[].quantity': { type: 'integer', required: true, minimum: 1, description: 'How many.' },
      'lines[].sku': { type: 'string', required: true, maxLength: 20, description: 'Item code.' },
      // A constrained nullable field is one field whose types include null, as an unconstrained one is.
      note: { type: ['null', 'string'], required: false, maxLength: 80, description: 'For the courier.' },
      priority: {
        type: 'string',
        required: false,
        enum: ['express', 'normal'],
        default: 'normal',
        description: 'How fast.',
      },
    });
  });

  it('records the output the same way, without descriptions: records, tuples and nullable fields included', () => {
    const [tool] = snapshotContracts({ tools: [shipTool] }).tools;
    expect(tool!.output).toEqual({
      $: { type: 'object', required: true, additionalProperties: false },
      eta: { type: ['null', 'string'], required: true },
      labels: {
        type: 'object',
        required: true,
        additionalProperties: true,
        other: { propertyNames: { type: 'string' } },
      },
      'labels{}': { type: 'string', required: false },
      position: { type: 'array', required: true, minItems: 2, maxItems: 2, other: { items: false } },
      'position[0]': { type: 'number', required: true },
      'position[1]': { type: 'number', required: true },
      shipment_id: { type: 'string', required: true },
    });
  });

  it('records the effect, the domain codes, the idempotency fields and the risk level of every example', () => {
    const [, refund] = snapshotContracts({ tools: ordersContracts }).tools;
    expect(refund).toMatchObject({
      name: 'refund_order',
      effect: 'write',
      idempotencyFields: ['amount_cents', 'currency', 'order_id'],
    });
    expect(Object.keys(refund!.domainCodes)).toEqual([
      'AMOUNT_EXCEEDS_REFUNDABLE',
      'CURRENCY_MISMATCH',
      'ORDER_NOT_FOUND',
      'ORDER_NOT_OWNED',
    ]);
    expect(refund!.examples.map((example) => [example.arguments.amount_cents, example.risk])).toEqual([
      [2590, 'irreversible'],
      [10_000, 'irreversible'],
      [25_000, 'critical'],
    ]);
  });

  it('records the amount of every example of a tool that declares one, and none for the others', () => {
    const [read, refund] = snapshotContracts({ tools: ordersContracts }).tools;
    expect(refund!.examples.map((example) => example.amount)).toEqual([2590, 10_000, 25_000]);
    expect(read!.examples.every((example) => !('amount' in example))).toBe(true);
    const withoutAmount = snapshotContracts({ tools: [refundWith({})] }).tools[0]!;
    expect(withoutAmount.examples.every((example) => !('amount' in example))).toBe(true);
  });

  it('sorts tools by name and takes the date and the selection record it is given', () => {
    const snapshot = snapshotContracts({
      tools: [shipTool, ...ordersContracts],
      createdAt: '2025-01-02T03:04:05.000Z',
      selection: { model: 'gpt-x', at: '2025-01-01T00:00:00.000Z' },
    });
    expect(snapshot.tools.map((tool) => tool.name)).toEqual(['get_order', 'refund_order', 'ship_items']);
    expect(snapshot).toMatchObject({
      version: 1,
      createdAt: '2025-01-02T03:04:05.000Z',
      selection: { model: 'gpt-x', at: '2025-01-01T00:00:00.000Z' },
    });
  });

  type RefundDefinition = ToolContractDefinition<
    (typeof refundOrderContract)['input'],
    (typeof refundOrderContract)['output']
  >;
  /** The orders refund, defined again with `changes`. */
  const refundWith = (changes: Partial<Pick<RefundDefinition, 'description' | 'risk'>>) => {
    const { name, description, input, output, effect, domainCodes, examples, risk, boundParameters } =
      refundOrderContract;
    return defineToolContract({
      name,
      description,
      input,
      output,
      effect,
      ...(boundParameters ? { boundParameters } : {}),
      domainCodes,
      examples,
      risk,
      ...changes,
    });
  };

  it('fingerprints the invocation without descriptions, and the discovery by descriptions only', () => {
    const reworded = refundWith({
      description: 'Refund an order, in cents, in its currency; only when the user asked for a refund.',
    });
    const [before, after] = [refundOrderContract, reworded].map(
      (tool) => snapshotContracts({ tools: [tool] }).tools[0]!.fingerprints,
    );
    expect(after!.invocation).toBe(before!.invocation);
    expect(after!.output).toBe(before!.output);
    expect(after!.discovery).not.toBe(before!.discovery);
    expect(before!.invocation).toMatch(/^[0-9a-f]{64}$/);
  });

  it('names the tool and the example when the risk function throws on one', () => {
    const throwing = refundWith({
      risk: () => {
        throw new Error('no risk today');
      },
    });
    expect(() => snapshotContracts({ tools: [throwing] })).toThrow(
      'tool "refund_order": examples[0] could not be classified (no risk today)',
    );
  });
});

describe('the snapshot file', () => {
  const snapshot = snapshotContracts({
    tools: [shipTool, ...ordersContracts],
    createdAt: '2025-01-02T03:04:05.000Z',
  });

  it('reads back what it wrote', () => {
    expect(parseContractSnapshot(serializeContractSnapshot(snapshot))).toEqual({ ok: true, snapshot });
  });

  it('is laid out as Prettier lays out JSON, so a formatter never rewrites it', async () => {
    const text = serializeContractSnapshot(snapshot);
    expect(await format(text, { parser: 'json' })).toBe(text);
    expect(text).toContain('"enum": ["customer_request", "damaged", "not_delivered"]');
  });

  it.each([
    ['text that is not JSON', '{"version": 1,', 'not JSON'],
    [
      'a snapshot of another version',
      '{"version": 2, "tools": []}',
      'version 2; this toolgate reads version 1',
    ],
    ['JSON that is not a snapshot', '{"version": 1, "tools": {}}', 'not a contract snapshot (createdAt:'],
  ])('refuses %s as SNAPSHOT_INVALID, saying what is wrong', (_case, text, message) => {
    const parsed = parseContractSnapshot(text);
    expect(parsed).toMatchObject({ ok: false, code: 'SNAPSHOT_INVALID' });
    expect(parsed.ok || parsed.message).toContain(message);
  });
});

describe('paths', () => {
  it('lists a field before the fields inside it, each level by name, and knows each field parent', () => {
    const [tool] = snapshotContracts({ tools: [shipTool] }).tools;
    expect(Object.keys(tool!.input)).toEqual([
      '$',
      'address',
      'address.city',
      'address.zip',
      'lines',
      'lines[]',
      'lines[].quantity',
      'lines[].sku',
      'note',
      'priority',
    ]);
    expect(['lines[].sku', 'lines[]', 'lines', 'a.b{}', '["odd key"].x'].map(parentPath)).toEqual([
      'lines[]',
      'lines',
      '$',
      'a.b',
      '["odd key"]',
    ]);
  });

  it('gives each branch of a union told apart by a property a path of its own, and quotes a field named "$"', () => {
    const tool = defineToolContract({
      name: 'adjust_order',
      description: 'Adjust an order.',
      input: z.strictObject({
        $: z.string().describe('A field named like the root.'),
        target: z
          .discriminatedUnion('kind', [
            z.strictObject({ kind: z.literal('order'), amount: z.int().describe('In cents.') }),
            z.strictObject({ kind: z.literal('shipping') }),
          ])
          .describe('What to adjust.'),
      }),
      output: z.strictObject({ adjusted_at: z.date() }),
      effect: 'write',
      risk: () => 'reversible',
    });
    const [snapshot] = snapshotContracts({ tools: [tool] }).tools;
    expect(Object.keys(snapshot!.input)).toEqual([
      '$',
      '["$"]',
      'target',
      'target(kind="order")',
      'target(kind="order").amount',
      'target(kind="order").kind',
      'target(kind="shipping")',
      'target(kind="shipping").kind',
    ]);
    expect(snapshot!.input.target).toEqual({
      type: 'object',
      required: true,
      discriminator: 'kind',
      description: 'What to adjust.',
    });
    expect(snapshot!.input['target(kind="order").amount']).toMatchObject({ description: 'In cents.' });
    // A type JSON Schema cannot express is named, not recorded as any value.
    expect(snapshot!.output.adjusted_at).toEqual({ required: true, unrepresentable: 'date' });
    expect(['target(kind="order").amount', 'target(kind="order")', '["$"]'].map(parentPath)).toEqual([
      'target(kind="order")',
      'target',
      '$',
    ]);
  });
});
