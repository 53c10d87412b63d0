import { describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import { callOutcomeSignal, sessionWorkflowId } from 'toolgate';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { testPolicy } from '../support/test-policy';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

// `thrifty-bot` becomes a caller whose limits are far above the defaults (budget 25, loop limit 3,
// circuit after 3): a session that forgot them would refuse long before the end. The tests' workflows
// continue a session as new after every 6 admissions.
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

describe('a session that continues as new keeps its caller’s limits', () => {
  it('judges an outcome that arrives before the new run’s first admission by the caller’s threshold', async () => {
    const session = harness.newSession();
    const results: ToolResult[] = [];
    // The sixth admission continues the session as new.
    for (let index = 0; index < 6; index++) results.push(await invalidRefund(session, index));
    await expect
      .poll(async () => (await harness.client.sessionStats(session)).generation, { timeout: 30_000 })
      .toBeGreaterThanOrEqual(1);
    // Outcomes that reach the new run before any admission has loaded the caller's policy.
    const handle = harness.temporal.workflow.getHandle(sessionWorkflowId(session));
    for (let index = 0; index < 4; index++) {
      await handle.signal(callOutcomeSignal, {
        callId: `tc-reported-${index}`,
        runId: `run-${index}`,
        tool: 'refund_order',
        code: 'INVALID_ARGUMENTS',
        ok: false,
      });
    }
    // Ten in a row stay far under a threshold of 100,000: the circuit stays closed.
    for (let index = 6; index < 9; index++) results.push(await invalidRefund(session, index));
    expect(results.map((result) => result.code)).toEqual(Array(9).fill('INVALID_ARGUMENTS'));
    const stats = await harness.client.sessionStats(session);
    expect(stats).toMatchObject({ steps: 9, circuitThreshold: marathon.circuitThreshold, openCircuits: {} });
    expect(stats.codeCounts).toEqual({ INVALID_ARGUMENTS: 13 });
  });

  it('closes an idle session after its caller’s idle timeout, also after continuing as new', async () => {
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
    // The sixth admission continued it as new: the new run must keep the 8 s window, not the 30 min default.
    await expect
      .poll(() => harness.client.sessionStats(session), { timeout: 30_000, interval: 500 })
      .toMatchObject({ closed: true, closedReason: 'idle' });
    expect((await harness.client.sessionStats(session)).generation).toBeGreaterThanOrEqual(1);
  });

  it(`counts ${total} proposals sent 4 at a time exactly, across a continue-as-new every 6 or so`, async () => {
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
    // At least 6 admissions per run (more when some were in flight as it continued).
    expect(stats.generation).toBeGreaterThan(total / 30);
    expect(stats.generation).toBeLessThanOrEqual(total / 6);
  }, 900_000);
});
