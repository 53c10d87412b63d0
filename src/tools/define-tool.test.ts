import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { declaresDomainCode, defineToolContract, ToolDefinitionError } from './define-tool';
import { defineToolImplementation } from './define-tool-implementation';
import { createToolRegistry } from './tool-registry';
import { validateArguments } from './validate-arguments';
import {
  getOrderContract,
  ordersContracts,
  refundOrderContract,
} from '../../examples/orders/orders-contracts';

const valid = {
  name: 'read_thing',
  description: 'Reads one thing by id. No side effects.',
  input: z.strictObject({ id: z.string().describe('the thing id') }),
  output: z.strictObject({ id: z.string() }),
  effect: 'read' as const,
};

describe('defineToolContract refuses a definition that breaks a rule, saying what to fix', () => {
  it.each([
    ['a bad name', { name: 'read thing!' }, 'the name must be'],
    ['a missing description', { description: '' }, 'write a description'],
    ['a non-strict input', { input: z.object({ id: z.string().describe('x') }) }, 'z.strictObject'],
    ['a field without description', { input: z.strictObject({ id: z.string() }) }, 'needs .describe'],
    [
      'a coercing field',
      { input: z.strictObject({ n: z.coerce.number().describe('n') }) },
      'coerces its value',
    ],
    ['a write without risk', { effect: 'write' }, 'needs a risk function'],
    ['a read with risk', { risk: () => 'critical' }, 'a read tool has no risk function'],
    ['a lower-case domain code', { domainCodes: { not_found: 'x' } }, 'SCREAMING_SNAKE_CASE'],
    [
      'a built-in code as domain code',
      { domainCodes: { INVALID_ARGUMENTS: 'x' } },
      "one of toolgate's own codes",
    ],
    ['an unknown idempotency field', { idempotencyFields: ['nope'] }, 'not an input field'],
  ])('%s', (_case, override, expected) => {
    const definition = { ...valid, ...override } as Parameters<typeof defineToolContract>[0];
    expect(() => defineToolContract(definition)).toThrow(ToolDefinitionError);
    expect(() => defineToolContract(definition)).toThrow(expected);
  });

  it('refuses a write implementation without findApplied', () => {
    expect(() =>
      defineToolImplementation(refundOrderContract, { execute: async () => ({}) as never }),
    ).toThrow('needs findApplied');
  });

  it('refuses two tools with one name in a registry', () => {
    expect(() => createToolRegistry({ tools: [getOrderContract, getOrderContract] })).toThrow(
      'defined twice',
    );
  });
});

describe('domain codes a tool may refuse with', () => {
  it('are its own declared codes and IDEMPOTENCY_CONFLICT, never an inherited name or another code', () => {
    expect(declaresDomainCode(refundOrderContract, 'AMOUNT_EXCEEDS_REFUNDABLE')).toBe(true);
    expect(declaresDomainCode(refundOrderContract, 'IDEMPOTENCY_CONFLICT')).toBe(true);
    expect(declaresDomainCode(refundOrderContract, 'CARD_DECLINED')).toBe(false);
    expect(declaresDomainCode(refundOrderContract, 'constructor')).toBe(false);
    expect(declaresDomainCode(getOrderContract, 'CURRENCY_MISMATCH')).toBe(false);
  });
});

describe('risk classification', () => {
  it('depends on the arguments: a refund of 30 is not a refund of 20,000', () => {
    const args = { order_id: 'ORD-1001', currency: 'BRL', reason: 'damaged' } as const;
    expect(refundOrderContract.risk({ args: { ...args, amount_cents: 3000 } })).toBe('irreversible');
    expect(refundOrderContract.risk({ args: { ...args, amount_cents: 10_000 } })).toBe('irreversible');
    expect(refundOrderContract.risk({ args: { ...args, amount_cents: 10_001 } })).toBe('critical');
    expect(getOrderContract.risk({ args: { order_id: 'ORD-1001' } })).toBe('read');
  });
});

describe("a write's amount, counted by the policy's amount limits", () => {
  const transfer = {
    name: 'transfer_funds',
    description: 'Moves money between two accounts of the same customer, in cents.',
    input: z.strictObject({
      account: z.string().describe('The account the money leaves.'),
      amount_cents: z.number().nonnegative().describe('How much, in cents.'),
    }),
    output: z.strictObject({ transfer_id: z.string() }),
    effect: 'write' as const,
    risk: () => 'irreversible' as const,
    examples: [
      { account: 'ACC-1', amount_cents: 2590 },
      { account: 'ACC-2', amount_cents: 0 },
    ],
  };

  it('is kept on a write that declares it, as the author wrote it, and given the validated arguments', () => {
    const amount = (args: { amount_cents: number }): number => args.amount_cents;
    const contract = defineToolContract({ ...transfer, amount });
    expect(contract.amount).toBe(amount);
    expect(contract.amount?.({ account: 'ACC-1', amount_cents: 700 })).toBe(700);
    expect(Object.isFrozen(contract)).toBe(true);
  });

  it('is absent when the tool declares none', () => {
    expect('amount' in defineToolContract(transfer)).toBe(false);
    expect('amount' in getOrderContract).toBe(false);
  });

  it("is the orders refund's amount in cents", () => {
    const args = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' } as const;
    expect(refundOrderContract.amount?.(args)).toBe(2590);
  });

  it.each([
    [
      'on a read: a read moves nothing',
      { ...valid, amount: () => 0 },
      'tool "read_thing": a read tool has no amount function: a read moves nothing',
    ],
    [
      'that is not a function',
      { ...transfer, amount: 2590 },
      'tool "transfer_funds": amount must be a function of the validated arguments',
    ],
    [
      'that gives an example a float',
      { ...transfer, amount: (args: { amount_cents: number }) => args.amount_cents / 100 },
      'tool "transfer_funds": amount gives examples[0] 25.9, which is not whole: amounts are whole numbers in the smallest unit',
    ],
    [
      'that gives an example a negative amount',
      { ...transfer, amount: (args: { amount_cents: number }) => -args.amount_cents },
      'amount gives examples[0] -2590, which is negative',
    ],
    [
      'that gives an example something other than a finite number',
      { ...transfer, amount: (args: { amount_cents: number }) => (args.amount_cents ? Infinity : 0) },
      'amount gives examples[0] Infinity, which is not a finite number',
    ],
    [
      'that gives an example a string',
      { ...transfer, amount: () => '2590' },
      'amount gives examples[0] string, which is not a finite number',
    ],
    [
      'that gives an example more than JavaScript counts exactly',
      { ...transfer, amount: () => 2 ** 60 },
      'which is beyond the safe integers',
    ],
    [
      'that throws on an example',
      {
        ...transfer,
        amount: () => {
          throw new Error('no amount today');
        },
      },
      'amount threw on examples[0] (no amount today)',
    ],
  ])('is refused at definition time %s, saying what to fix', (_case, definition, expected) => {
    const define = () => defineToolContract(definition as Parameters<typeof defineToolContract>[0]);
    expect(define).toThrow(ToolDefinitionError);
    expect(define).toThrow(expected);
  });

  it('is checked on every example, the second included', () => {
    const define = () =>
      defineToolContract({
        ...transfer,
        examples: [...transfer.examples, { account: 'ACC-3', amount_cents: 0.5 }],
        amount: (args) => args.amount_cents,
      });
    expect(define).toThrow('amount gives examples[2] 0.5, which is not whole');
  });
});

describe('definitions for the model', () => {
  it('are generated from the very schema that validates', () => {
    const registry = createToolRegistry({ tools: ordersContracts });
    const [, refund] = registry.definitions();
    expect(refund).toMatchObject({
      name: 'refund_order',
      parameters: {
        type: 'object',
        additionalProperties: false,
        required: ['order_id', 'amount_cents', 'currency', 'reason'],
        properties: {
          amount_cents: { type: 'integer', exclusiveMinimum: 0 },
          currency: { enum: ['BRL', 'USD'] },
          order_id: { pattern: '^ORD-\\d{4}$' },
        },
      },
    });
    expect(registry.definitions({ only: ['get_order'] }).map((definition) => definition.name)).toEqual([
      'get_order',
    ]);
  });
});

describe('validateArguments', () => {
  it('refuses coercion: "2590" and 25.9 are not 2590', () => {
    const args = { order_id: 'ORD-1001', currency: 'BRL', reason: 'damaged' };
    expect(
      validateArguments({ contract: refundOrderContract, value: { ...args, amount_cents: '2590' } }).ok,
    ).toBe(false);
    expect(
      validateArguments({ contract: refundOrderContract, value: { ...args, amount_cents: 25.9 } }).ok,
    ).toBe(false);
    expect(
      validateArguments({ contract: refundOrderContract, value: { ...args, amount_cents: 2590 } }),
    ).toEqual({
      ok: true,
      args: { ...args, amount_cents: 2590 },
    });
  });
});
