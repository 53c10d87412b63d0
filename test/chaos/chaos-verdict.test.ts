// The chaos suite's judge, without any chaos: a wrong verdict would let a real duplicate pass.
import { describe, expect, it } from 'vitest';
import type { Refund } from '../../examples/orders/orders-api-client';
import type { ToolResult } from 'toolgate';
import type { ChaosIntent } from './chaos-plan';
import { planChaosIntents, seededRandom } from './chaos-plan';
import type { AgentAnswer, IntentOutcome } from './chaos-verdict';
import { judgeChaosRun, verdictLine, verdictPassed } from './chaos-verdict';

const intent: ChaosIntent = {
  index: 0,
  intentId: 'chaos-intent-1',
  kind: 'autonomous',
  caller: 'chaos-refunder',
  arguments: { order_id: 'ORD-1001', amount_cents: 25, currency: 'BRL', reason: 'damaged' },
  faults: 'none',
};
const callId = 'tc-intent-1';

function refund(input: Partial<Refund> & { createdAtMs: number }): Refund {
  return {
    refundId: `RF-${input.createdAtMs}`,
    orderId: 'ORD-1001',
    amountCents: 25,
    currency: 'BRL',
    reason: 'damaged',
    idempotencyKey: callId,
    remainingRefundableCents: 11_975,
    createdAt: new Date(input.createdAtMs).toISOString(),
    ...input,
  };
}

function answer(receivedAtMs: number, result: Partial<ToolResult>): AgentAnswer {
  return {
    kind: 'result',
    receivedAtMs,
    result: { ok: false, tool: 'refund_order', code: 'OK', message: '', effect: 'none', callId, ...result },
  };
}

const applied = (receivedAtMs: number): AgentAnswer =>
  answer(receivedAtMs, { ok: true, code: 'OK', effect: 'applied' });
const unavailable = (receivedAtMs: number): AgentAnswer =>
  answer(receivedAtMs, { code: 'UPSTREAM_UNAVAILABLE', effect: 'none' });

function judge(answers: AgentAnswer[], refunds: Refund[]) {
  const outcome: IntentOutcome = { intent, callId, answers };
  return judgeChaosRun({ outcomes: [outcome], refunds });
}

describe('the chaos verdict', () => {
  it('passes an intent told OK with exactly one matching refund', () => {
    const verdict = judge([applied(2_000)], [refund({ createdAtMs: 1_000 })]);
    expect(verdictLine(verdict)).toBe('intents 1, applied 1, duplicates 0, lost 0, misreported 0');
    expect(verdictPassed(verdict)).toBe(true);
  });

  it('accepts "none" followed by a retry that applied, when the refund came after the "none"', () => {
    const verdict = judge([unavailable(1_000), applied(3_000)], [refund({ createdAtMs: 2_000 })]);
    expect(verdictPassed(verdict)).toBe(true);
  });

  it('counts "none" as misreported when the refund was already committed before the answer', () => {
    const verdict = judge([unavailable(3_000), applied(4_000)], [refund({ createdAtMs: 2_000 })]);
    expect(verdict).toMatchObject({ applied: 1, lost: 0, misreported: 1 });
  });

  it('counts an OK without any refund as lost and misreported', () => {
    const verdict = judge([applied(1_000)], []);
    expect(verdict).toMatchObject({ applied: 0, lost: 1, misreported: 1 });
  });

  it('counts a refund under another key as a duplicate', () => {
    const verdict = judge(
      [applied(3_000)],
      [refund({ createdAtMs: 1_000 }), refund({ createdAtMs: 2_000, idempotencyKey: 'tc-other' })],
    );
    expect(verdict).toMatchObject({ applied: 1, duplicates: 1 });
    expect(verdictPassed(verdict)).toBe(false);
  });

  it('counts a refund under the key with other parameters as a duplicate, not as applied', () => {
    const verdict = judge([applied(3_000)], [refund({ createdAtMs: 1_000, amountCents: 26 })]);
    expect(verdict).toMatchObject({ applied: 0, duplicates: 1, lost: 1, misreported: 1 });
  });

  it('counts an intent whose agent gave up as lost even if the refund exists, and "unknown" as no misreport', () => {
    const unknown = answer(3_000, { code: 'UPSTREAM_UNAVAILABLE', effect: 'unknown' });
    const verdict = judge([unknown], [refund({ createdAtMs: 1_000 })]);
    expect(verdict).toMatchObject({ applied: 1, lost: 1, misreported: 0 });
  });

  it('counts an intent never answered as lost', () => {
    const verdict = judge([{ kind: 'exception', receivedAtMs: 1_000, message: 'no answer' }], []);
    expect(verdict).toMatchObject({ applied: 0, lost: 1, misreported: 0 });
  });
});

describe('the chaos plan', () => {
  const orders = [
    { orderId: 'ORD-1001', currency: 'BRL' as const, refundableCents: 12_000 },
    { orderId: 'ORD-1002', currency: 'USD' as const, refundableCents: 4_500 },
    { orderId: 'ORD-1003', currency: 'BRL' as const, refundableCents: 90_000 },
  ];
  const callers = { autonomous: 'chaos-refunder', approvee: 'support-bot' };

  it('keeps every order within its refundable balance, even for a long run', () => {
    const intents = planChaosIntents({
      total: 5_000,
      approvals: 3,
      faultShare: 0.4,
      orders,
      callers,
      random: seededRandom(7),
    });
    for (const order of orders) {
      const onOrder = intents.filter((planned) => planned.arguments.order_id === order.orderId);
      const cents = onOrder.reduce((sum, planned) => sum + planned.arguments.amount_cents, 0);
      expect(cents).toBeLessThanOrEqual(order.refundableCents);
      expect(onOrder.every((planned) => planned.arguments.currency === order.currency)).toBe(true);
    }
    expect(intents.filter((planned) => planned.kind === 'approval').map((planned) => planned.caller)).toEqual(
      ['support-bot', 'support-bot', 'support-bot'],
    );
  });

  it('draws the same plan from the same seed', () => {
    const plan = (seed: number) =>
      planChaosIntents({
        total: 50,
        approvals: 2,
        faultShare: 0.5,
        orders,
        callers,
        random: seededRandom(seed),
      });
    expect(plan(42)).toEqual(plan(42));
    expect(plan(42)).not.toEqual(plan(43));
  });

  it('refuses more intents than the orders have cents for', () => {
    expect(() =>
      planChaosIntents({
        total: 20_000,
        approvals: 0,
        faultShare: 0,
        orders,
        callers,
        random: seededRandom(1),
      }),
    ).toThrow(/run fewer intents/);
  });
});
