import { describe, expect, it } from 'vitest';
import type { ContractChange, ContractDiff } from './contract-diff';
import { renderContractDiff } from './contract-report';

function diffOf(changes: ContractChange[]): ContractDiff {
  const counts = { breaking: 0, compatible: 0, behavioural: 0 };
  for (const change of changes) counts[change.verdict]++;
  return {
    ok: counts.breaking === 0,
    verdict: counts.breaking ? 'breaking' : 'compatible',
    counts,
    selectionSuiteMustRun: counts.behavioural > 0,
    changes,
  };
}

describe('renderContractDiff', () => {
  it('says so when nothing changed', () => {
    expect(renderContractDiff(diffOf([]))).toBe('no changes: the tools match the snapshot');
  });

  it('groups changes by verdict, each with its path, its sentence and its value before → after', () => {
    const text = renderContractDiff(
      diffOf([
        {
          verdict: 'breaking',
          kind: 'CONSTRAINT_TIGHTENED',
          tool: 'refund_order',
          path: 'input.amount_cents',
          aspect: 'maximum',
          before: 'none',
          after: '<= 1000000',
          message: 'input field "amount_cents": upper bound tightened from none to <= 1000000',
        },
        {
          verdict: 'compatible',
          kind: 'FIELD_ADDED',
          tool: 'refund_order',
          path: 'output.remaining_cents',
          after: { type: 'integer', required: true },
          message: 'new output field "remaining_cents"',
        },
        {
          verdict: 'behavioural',
          kind: 'TOOL_ADDED',
          tool: 'get_customer',
          path: '',
          after: 'get_customer',
          message: 'tool added: the model may now pick it instead of another; run the selection suite',
        },
      ]),
    );
    expect(text).toBe(
      [
        '3 changes: 1 breaking, 1 compatible, 1 behavioural',
        '',
        'breaking (the check fails):',
        '  refund_order.input.amount_cents (maximum)  CONSTRAINT_TIGHTENED',
        '    input field "amount_cents": upper bound tightened from none to <= 1000000',
        '    "none" → "<= 1000000"',
        '',
        'compatible:',
        '  refund_order.output.remaining_cents  FIELD_ADDED',
        '    new output field "remaining_cents"',
        '    (absent) → {"type":"integer","required":true}',
        '',
        'behavioural (the check passes; run the selection suite):',
        '  get_customer  TOOL_ADDED',
        '    tool added: the model may now pick it instead of another; run the selection suite',
        '    (absent) → "get_customer"',
      ].join('\n'),
    );
  });

  it('puts long values, such as descriptions, on a line each', () => {
    const before =
      'Refund part or all of an order. Call get_order first. Amount in cents, in the order currency.';
    const text = renderContractDiff(
      diffOf([
        {
          verdict: 'behavioural',
          kind: 'DESCRIPTION_CHANGED',
          tool: 'refund_order',
          path: 'description',
          before,
          after: `${before} Never more than asked.`,
          message: 'description changed: the model chooses tools by it; run the selection suite',
        },
      ]),
    );
    expect(text).toContain(
      `    before: ${JSON.stringify(before)}\n    after:  ${JSON.stringify(`${before} Never more than asked.`)}`,
    );
  });
});
