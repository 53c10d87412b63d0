import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { checkPolicy, createToolRegistry } from 'toolgate';
import { listToolSwitches, setToolSwitch } from 'toolgate/admin';
import {
  controlsWorkflowId,
  setSwitchUpdate,
  signValue,
  quotaUsageQuery,
  quotaWorkflowId,
} from 'toolgate/protocol';
import type { PolicyFileInput, ToolResult } from 'toolgate';
import type { ApplicableQuota } from 'toolgate/protocol';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { testContracts } from '../support/test-tools';
import { testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { createReadGate } from '../support/read-gate';

// Attacks on the kill switch and on limits across sessions, from a review: each test failed while
// the defect it names was there, and guards its fix. One finding stays open by design: whoever may
// send updates to a limit's counter (a raw Temporal client) can release a reservation; Temporal
// authorisation must keep `toolgate-quota:*` to workers and operators (docs/approvals.md, "Temporal access is part of the trust model").

const hourMs = 60 * 60 * 1000;
const dayMs = 24 * hourMs;

const { gate, gatedReads } = createReadGate();

describe('kill switch', () => {
  let harness: ToolGateHarness;
  useHarness((started) => (harness = started), { ordersApi: gatedReads });

  const flip = (action: 'disable' | 'enable', tool = 'refund_order') =>
    setToolSwitch({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      action,
      tool,
      operator: 'olivia',
      operatorKey: harness.operatorKey('olivia'),
      reason: `${action}: review`,
    });

  // The defect this once reproduced: a switch no operator signed (a controls run started with a crafted `carried`) is honoured and attributed to an operator.
  it('ignores a switch no operator signed (a controls run started with a crafted `carried`)', async () => {
    const controls = await harness.temporal.workflow.start('toolgateControls', {
      workflowId: controlsWorkflowId(harness.taskQueue),
      taskQueue: harness.taskQueue,
      args: [
        {
          carried: {
            disabled: [
              {
                tool: 'refund_order',
                operator: 'olivia',
                reason: 'forged',
                since: new Date().toISOString(),
                changeId: 'forged-1',
              },
            ],
            seen: [],
          },
        },
      ],
    });
    try {
      const refund = await harness.call({
        caller: 'test-refunder',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 1_111 }),
      });
      // olivia never signed it and the audit store holds no such change.
      expect(await harness.audit.controlEvents()).toEqual([]);
      expect(refund).not.toMatchObject({ code: 'TOOL_DISABLED', data: { disabledBy: 'olivia' } });
    } finally {
      await controls.terminate('review cleanup');
      // A terminated run still answers queries with its switches: an operator's change starts a fresh one.
      await flip('enable');
    }
  });

  // The defect this once reproduced: a write that needs no approval, evaluated just before a disable, executes after the operator was told the switch is off.
  it('stops a write that needs no approval, evaluated just before a disable, once the operator was told the switch is off', async () => {
    const before = await harness.orders.api.refundCount();
    gate.armed = true;
    gate.orderId = 'ORD-1002';
    const held = new Promise<void>((resolve) => (gate.held = resolve));
    const pending = harness.call({
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: JSON.stringify({
        order_id: 'ORD-1002',
        amount_cents: 500,
        currency: 'USD',
        reason: 'damaged',
      }),
    });
    // Evaluated (switch read: on), now in its business check.
    await Promise.race([
      held,
      pending.then((early) => {
        throw new Error(`the call ended before its check: ${early.code}`);
      }),
    ]);
    const off = await flip('disable');
    expect(off).toMatchObject({ accepted: true });
    gate.release?.();
    let result: ToolResult;
    try {
      result = await pending;
    } finally {
      await flip('enable');
    }
    expect(result).toMatchObject({ code: 'TOOL_DISABLED', effect: 'none' });
    expect(await harness.orders.api.refundCount()).toBe(before);
  });

  // The defect this once reproduced: once the controls run is terminated, the next change starts an empty run and every earlier switch is silently back on.
  it('keeps every earlier switch off when the controls run is terminated and the next change starts a new run', async () => {
    expect(await flip('disable', 'refund_order')).toMatchObject({ accepted: true });
    await harness.temporal.workflow
      .getHandle(controlsWorkflowId(harness.taskQueue))
      .terminate('ops: looked stuck');
    // Any later change, by an operator, for another tool.
    expect(await flip('disable', 'get_order')).toMatchObject({ accepted: true });
    const before = await harness.orders.api.refundCount();
    try {
      const refund = await harness.call({
        caller: 'test-refunder',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 1_234 }),
      });
      expect(refund).toMatchObject({ code: 'TOOL_DISABLED', effect: 'none' });
      expect(await harness.orders.api.refundCount()).toBe(before);
    } finally {
      await flip('enable', 'get_order');
      await flip('enable', 'refund_order');
    }
  });

  it('refuses a captured change replayed into a run started after a terminate: the switch and the audit agree', async () => {
    /** A change olivia signs, sent as a raw Temporal client would. */
    const signed = (action: 'disable' | 'enable') => {
      const change = {
        changeId: randomUUID(),
        action,
        tool: 'refund_order',
        operator: 'olivia',
        reason: `${action}: incident`,
        issuedAt: new Date().toISOString(),
      };
      return {
        change,
        signature: signValue({
          kind: 'tool-switch',
          value: change,
          privateKey: harness.operatorKey('olivia'),
        }),
      };
    };
    const send = async (change: ReturnType<typeof signed>, updateId = change.change.changeId) => {
      try {
        return await harness.temporal.workflow.executeUpdateWithStart(setSwitchUpdate, {
          args: [change],
          updateId,
          startWorkflowOperation: new WithStartWorkflowOperation('toolgateControls', {
            workflowId: controlsWorkflowId(harness.taskQueue),
            taskQueue: harness.taskQueue,
            args: [{}],
            workflowIdConflictPolicy: 'USE_EXISTING',
          }),
        });
      } catch (error) {
        return { accepted: false, code: (error as { cause?: { type?: string } }).cause?.type };
      }
    };
    const enable = signed('enable');
    expect(await send(signed('disable'))).toMatchObject({ accepted: true });
    expect(await send(enable)).toMatchObject({ accepted: true });
    expect(await send(signed('disable'))).toMatchObject({ accepted: true });
    await harness.temporal.workflow
      .getHandle(controlsWorkflowId(harness.taskQueue))
      .terminate('ops: looked stuck');
    try {
      // The captured enable, well within its 10 minutes, into the run it starts.
      // (Under a new update id: the same one would only be answered the closed run's receipt.)
      expect(await send(enable, randomUUID())).toMatchObject({ accepted: false, code: 'CHANGE_REPLAYED' });
      expect(
        (await listToolSwitches({ client: harness.temporal, taskQueue: harness.taskQueue })).disabled,
      ).toEqual([
        expect.objectContaining({ tool: 'refund_order', operator: 'olivia', reason: 'disable: incident' }),
      ]);
      const accepted = (await harness.audit.controlEvents({ tool: 'refund_order' })).filter(
        (event) => event.outcome === 'accepted',
      );
      expect(accepted.at(-1)).toMatchObject({ action: 'disable' });
      const refund = await harness.call({
        caller: 'test-refunder',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 1_235 }),
      });
      expect(refund).toMatchObject({ code: 'TOOL_DISABLED', effect: 'none' });
    } finally {
      await flip('enable', 'refund_order');
    }
  });
});

const callers = testPolicy.callers;
const limitsPolicy: PolicyFileInput = {
  ...testPolicy,
  callers: {
    ...callers,
    'test-refunder': {
      ...callers['test-refunder']!,
      quotas: [{ tool: 'refund_order', window: '24h', maxAmount: 10_000 }],
    },
    'readonly-bot': {
      ...callers['readonly-bot']!,
      quotas: [{ tool: 'get_order', window: '1h', maxCalls: 2 }],
    },
    // Refunds without approval; a call limit and an amount limit over the same day, in one entry.
    'cautious-bot': {
      publicKey: 'callers/cautious-bot.pub',
      tools: ['refund_order'],
      autonomy: 'critical',
      quotas: [{ tool: 'refund_order', window: '24h', maxCalls: 10, maxAmount: 5_000 }],
    },
    // Refunds without approval; two call limits, a day's and 12 hours'.
    'hasty-bot': {
      publicKey: 'callers/hasty-bot.pub',
      tools: ['refund_order'],
      autonomy: 'critical',
      quotas: [
        { tool: 'refund_order', window: '24h', maxCalls: 5 },
        { tool: 'refund_order', window: '12h', maxCalls: 5 },
      ],
    },
    'support-bot': {
      ...callers['support-bot']!,
      quotas: [{ tool: 'refund_order', window: '24h', maxCalls: 1 }],
    },
  },
};

describe('limits across sessions', () => {
  let harness: ToolGateHarness;
  useHarness((started) => (harness = started), { policy: limitsPolicy });

  const counter = (quota: Omit<ApplicableQuota, 'scope'>) =>
    harness.temporal.workflow.getHandle(
      quotaWorkflowId({ taskQueue: harness.taskQueue, quota: { scope: 'caller', ...quota } }),
    );
  const usage = (quota: Omit<ApplicableQuota, 'scope'>) =>
    counter(quota).query(quotaUsageQuery, {
      windowMs: quota.windowMs,
      ...(quota.maxCalls !== undefined ? { maxCalls: quota.maxCalls } : {}),
      ...(quota.maxAmount !== undefined ? { maxAmount: quota.maxAmount } : {}),
    });

  // The defect this once reproduced: a call limit on a read tool never binds (a successful read has effect none, so its reservation is released).
  it('binds a call limit on a read tool (a read that ran counts, though its effect is none)', async () => {
    const results: ToolResult[] = [];
    for (let index = 0; index < 3; index++) {
      results.push(
        await harness.client.call({
          caller: 'readonly-bot',
          session: harness.newSession(),
          tool: 'get_order',
          arguments: '{"order_id":"ORD-1001"}',
        }),
      );
    }
    expect(results.slice(0, 2).map((result) => result.code)).toEqual(['OK', 'OK']);
    expect(results[2]).toMatchObject({ code: 'POLICY_LIMIT' });
  });

  // The defect this once reproduced: two limits of one scope, tool and window share a counter, and the second is never checked.
  it('checks each of two limits of one scope, tool and window in a counter of its own', async () => {
    const refund = () =>
      harness.client.call({
        caller: 'cautious-bot',
        session: harness.newSession(),
        tool: 'refund_order',
        arguments: JSON.stringify({
          order_id: 'ORD-1003',
          amount_cents: 3_000,
          currency: 'BRL',
          reason: 'damaged',
        }),
      });
    // Two entries over one window would share one counter: the policy is refused, and says to merge them.
    expect(() =>
      checkPolicy({
        source: 'two limits',
        value: {
          ...limitsPolicy,
          callers: {
            ...limitsPolicy.callers,
            'cautious-bot': {
              ...limitsPolicy.callers['cautious-bot']!,
              quotas: [
                { tool: 'refund_order', window: '24h', maxCalls: 10 },
                { tool: 'refund_order', window: '1d', maxAmount: 5_000 },
              ],
            },
          },
        },
        registry: createToolRegistry({ tools: [...ordersContracts, ...testContracts] }),
        keysDirectory: harness.keysDirectory,
      }),
    ).toThrow(/same window at callers\.cautious-bot\.quotas\.0; give one entry both maxCalls and maxAmount/);
    expect(await refund()).toMatchObject({ ok: true, effect: 'applied' });
    // 3,000 + 3,000 passes the 5,000 a day the policy allows cautious-bot.
    expect(await refund()).toMatchObject({ code: 'POLICY_LIMIT', effect: 'none' });
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1003' })).toBe(1);
  });

  // The defect this once reproduced: a reservation taken in one counter leaks when a later counter fails (INTERNAL_ERROR, effect none, still counted).
  it('gives back a reservation taken in one counter when a later counter fails (INTERNAL_ERROR, effect none, not counted)', async () => {
    // The 12-hour counter cannot answer (here: its id is taken by another workflow; in production any
    // failure that outlasts the reservation activity's retries).
    const squatter = await harness.temporal.workflow.start('toolgateControls', {
      workflowId: quotaWorkflowId({
        taskQueue: harness.taskQueue,
        quota: {
          scope: 'caller',
          caller: 'hasty-bot',
          tool: 'refund_order',
          window: '12h',
          windowMs: 12 * hourMs,
          maxCalls: 5,
        },
      }),
      taskQueue: harness.taskQueue,
      args: [{}],
    });
    try {
      const result = await harness.client.call({
        caller: 'hasty-bot',
        session: harness.newSession(),
        tool: 'refund_order',
        arguments: JSON.stringify({
          order_id: 'ORD-1001',
          amount_cents: 100,
          currency: 'BRL',
          reason: 'damaged',
        }),
      });
      expect(result).toMatchObject({ ok: false, effect: 'none' });
      const day = { caller: 'hasty-bot', tool: 'refund_order', window: '24h', windowMs: dayMs, maxCalls: 5 };
      expect(await usage(day)).toMatchObject({ calls: 0 });
    } finally {
      await squatter.terminate('review cleanup');
    }
  });

  // The defect this once reproduced: a write proposed again after an unknown effect counts twice for one refund.
  it('counts a write proposed again after an unknown effect once for its one refund', async () => {
    const input = {
      caller: 'test-refunder',
      session: harness.newSession(),
      tool: 'refund_order',
      arguments: JSON.stringify({
        order_id: 'ORD-1003',
        amount_cents: 1_000,
        currency: 'BRL',
        reason: 'damaged',
      }),
    };
    const callId = harness.client.callIdOf(input);
    await harness.orders.api.setFaults({ idempotencyKey: callId, unavailable: 3, lookupUnavailable: 3 });
    expect(await harness.client.call(input)).toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      effect: 'unknown',
    });
    expect(await harness.client.call(input)).toMatchObject({ ok: true, effect: 'applied' });
    expect(await harness.orders.api.refundCount({ orderId: 'ORD-1003' })).toBe(1);
    const day = {
      caller: 'test-refunder',
      tool: 'refund_order',
      window: '24h',
      windowMs: dayMs,
      maxAmount: 10_000,
    };
    expect(await usage(day)).toMatchObject({ calls: 1, amount: 1_000 });
  });
});
