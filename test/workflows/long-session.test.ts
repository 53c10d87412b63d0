import { describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { testPolicy } from '../support/test-policy';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

// `thrifty-bot` becomes a caller whose limits are far above the defaults (budget 25, loop limit 3,
// circuit after 3): a session that forgot them would refuse long before the end. A session is state
// in the audit store: no history grows with it, nothing continues as new.
const marathon = { stepBudget: 100_000, loopLimit: 100_000, circuitThreshold: 100_000 };
useHarness((started) => (harness = started), {
  policy: {
    ...testPolicy,
    callers: {
      ...testPolicy.callers,
      'thrifty-bot': {
        publicKey: 'callers/thrifty-bot.pub',
        tools: ['get_order', 'refund_order'],
        autonomy: 'read',
        session: marathon,
      },
      // Long enough that no call of the test leaves the session idle on a busy machine.
      'sleepy-bot': { ...testPolicy.callers['sleepy-bot']!, session: { idleTimeout: '8s' } },
    },
  },
});

// 600 proposals in `npm test`; the full run of the issue, 2,100, with TOOLGATE_LONG_SESSION_PROPOSALS=2100.
const total = Number(process.env.TOOLGATE_LONG_SESSION_PROPOSALS ?? 600);

/** A refund with a float amount: INVALID_ARGUMENTS, and a call id of its own for each `index`. */
const invalidRefund = (session: string, index: number): Promise<ToolResult> =>
  harness.client.call({
    session,
    caller: 'thrifty-bot',
    tool: 'refund_order',
    arguments: `{"order_id":"ORD-1001","amount_cents":${index}.5,"currency":"BRL","reason":"damaged"}`,
  });

describe('a long session keeps its caller’s limits', () => {
  it('closes an idle session after its caller’s idle timeout, not the default', async () => {
    const session = harness.newSession();
    for (const order of ['ORD-1001', 'ORD-1002', 'ORD-1003', 'ORD-1001', 'ORD-1002', 'ORD-1003']) {
      const read = await harness.client.call({
        session,
        caller: 'sleepy-bot',
        tool: 'get_order',
        arguments: { order_id: order },
      });
      expect(read.code).toBe('OK');
    }
    // The caller's 8 s window, not the 30 min default; the next proposal is refused, and the close written.
    await expect
      .poll(() => harness.client.sessionStats(session), { timeout: 30_000, interval: 500 })
      .toMatchObject({ closed: true, closedReason: 'idle' });
    const late = await harness.client.call({
      session,
      caller: 'sleepy-bot',
      tool: 'get_order',
      arguments: { order_id: 'ORD-1001' },
    });
    expect(late.code).toBe('SESSION_CLOSED');
    const listed = (await harness.audit.sessions.list()).find((entry) => entry.session === session);
    expect(listed).toMatchObject({ closed: true, closedReason: 'idle' });
    expect(listed?.closedAt).toMatch(/^\d{4}-/);
  });

  it(`counts ${total} proposals sent 4 at a time exactly`, async () => {
    const session = harness.newSession();
    const lanes = 4;
    const codes = new Map<string, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        for (let index = next++; index < total; index = next++) {
          const { code } = await invalidRefund(session, index);
          codes.set(code, (codes.get(code) ?? 0) + 1);
        }
      }),
    );
    expect(Object.fromEntries(codes)).toEqual({ INVALID_ARGUMENTS: total });
    const stats = await harness.client.sessionStats(session);
    expect(stats).toMatchObject({
      steps: total,
      stepBudget: marathon.stepBudget,
      circuitThreshold: marathon.circuitThreshold,
      codeCounts: { INVALID_ARGUMENTS: total },
      openCircuits: {},
      closed: false,
    });
  }, 900_000);
});
