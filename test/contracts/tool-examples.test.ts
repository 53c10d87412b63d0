import { defineToolContract, ToolDefinitionError } from 'toolgate';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const refund = {
  name: 'refund_order',
  description: 'Refund part or all of an order, in cents. Only when the user asked for one.',
  input: z.strictObject({
    order_id: z.string().describe('Order id.'),
    amount_cents: z.int().positive().describe('Amount in cents.'),
  }),
  output: z.strictObject({ refund_id: z.string() }),
  effect: 'write' as const,
  risk: () => 'irreversible' as const,
};

describe("a tool's examples", () => {
  it('keeps examples that pass the input schema, as a frozen copy', () => {
    const example = { order_id: 'ORD-1001', amount_cents: 2590 };
    const contract = defineToolContract({ ...refund, examples: [example] });
    expect(contract.examples).toEqual([example]);
    example.amount_cents = 1;
    expect(contract.examples?.[0]?.amount_cents).toBe(2590);
    expect(Object.isFrozen(contract.examples)).toBe(true);
  });

  it('refuses at definition time an example the input schema refuses, naming the example and the field', () => {
    const define = () =>
      defineToolContract({
        ...refund,
        examples: [
          { order_id: 'ORD-1001', amount_cents: 2590 },
          { order_id: 'ORD-1002', amount_cents: -5 },
        ],
      });
    expect(define).toThrow(ToolDefinitionError);
    expect(define).toThrow(
      'tool "refund_order": examples[1] does not pass the input schema (amount_cents: Too small: expected number to be >0)',
    );
  });

  it('refuses examples that are not a list', () => {
    expect(() => defineToolContract({ ...refund, examples: { order_id: 'ORD-1001' } as never })).toThrow(
      'examples must be an array of argument objects',
    );
  });

  it('has none unless the tool declares them', () => {
    expect(defineToolContract(refund).examples).toBeUndefined();
  });
});
