import { quotaUsageQuery, quotaWorkflowId } from 'toolgate/protocol';
import type { ToolResult } from 'toolgate';
import { describe, expect, it } from 'vitest';
import { testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

const dayMs = 24 * 60 * 60 * 1000;
const maxAmount = 10_000;

// test-refunder refunds without approval; across all its sessions, at most 10,000 cents of refunds a
// day. The whole deployment: at most 40 refunds a day.
useHarness((started) => (harness = started), {
  policy: {
    ...testPolicy,
    quotas: [{ tool: 'refund_order', window: '24h', maxCalls: 40 }],
    callers: {
      ...testPolicy.callers,
      'test-refunder': {
        ...testPolicy.callers['test-refunder']!,
        quotas: [{ tool: 'refund_order', window: '24h', maxAmount }],
      },
    },
  },
});

const refund = (session: string, amount: number, currency = 'BRL') =>
  harness.call({
    caller: 'test-refunder',
    session,
    tool: 'refund_order',
    arguments: JSON.stringify({ order_id: 'ORD-1003', amount_cents: amount, currency, reason: 'damaged' }),
  });

/** The counter's own figure for the caller's daily amount limit. */
const counted = () =>
  harness.temporal.workflow
    .getHandle(
      quotaWorkflowId({
        taskQueue: harness.taskQueue,
        quota: {
          scope: 'caller',
          caller: 'test-refunder',
          tool: 'refund_order',
          window: '24h',
          windowMs: dayMs,
          maxAmount,
        },
      }),
    )
    .query(quotaUsageQuery, { windowMs: dayMs, maxAmount });

describe('limits across sessions', () => {
  it('releases the reservation of a call that ends without an effect', async () => {
    const mismatch = await refund(harness.newSession(), 900, 'USD');
    expect(mismatch).toMatchObject({ code: 'CURRENCY_MISMATCH', effect: 'none' });
    expect(await counted()).toMatchObject({ calls: 0, amount: 0, remainingAmount: maxAmount });
  });

  it('never lets 20 sessions calling at once pass a daily amount limit by a single cent', async () => {
    const results: ToolResult[] = await Promise.all(
      Array.from({ length: 20 }, (_, index) => refund(`quota-session-${index}`, 700)),
    );
    const applied = results.filter((result) => result.ok);
    const limited = results.filter((result) => result.code === 'POLICY_LIMIT');
    expect(applied.length + limited.length).toBe(20);
    // 14 × 700 = 9,800 fits in 10,000; a 15th would not.
    expect(applied).toHaveLength(14);
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1003' })).toBe(14);
    expect(await counted()).toMatchObject({ calls: 14, amount: 9_800, remainingAmount: 200 });
    expect(limited[0]).toMatchObject({
      effect: 'none',
      data: {
        limit: { scope: 'caller', caller: 'test-refunder', tool: 'refund_order', window: '24h', maxAmount },
        amount: 700,
        remaining: { amount: 200 },
      },
    });
    expect(Date.parse(String(limited[0]?.data?.resetsAt)) - Date.now()).toBeGreaterThan(dayMs - 5 * 60_000);
    expect(limited[0]?.message).toContain('Do not retry now');

    // What is left still fits: 200 cents, then nothing.
    expect(await refund(harness.newSession(), 200)).toMatchObject({ ok: true, effect: 'applied' });
    expect(await refund(harness.newSession(), 1)).toMatchObject({ code: 'POLICY_LIMIT' });
    expect(await counted()).toMatchObject({ amount: maxAmount, remainingAmount: 0 });
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1003' })).toBe(15);
  });
});
