import { beforeEach, describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { callOutcomeSignal, sessionWorkflowId } from 'toolgate';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { startHarness } from '../support/toolgate-harness';

let harness: ToolGateHarness;
let session: string;

useHarness((started) => (harness = started));

beforeEach(() => {
  session = harness.newSession();
});

const read = (caller: string, orderId = 'ORD-1001') =>
  harness.client.call({ session, caller, tool: 'get_order', arguments: `{"order_id":"${orderId}"}` });
const refund = (overrides: Record<string, unknown> = {}, caller = 'test-refunder') =>
  harness.client.call({
    session,
    caller,
    tool: 'refund_order',
    arguments: harness.refundArguments(overrides),
  });

describe('the seed article’s guards, as durable session state', () => {
  it('answers the third identical read with LOOP_DETECTED under a loop limit of 2', async () => {
    expect((await read('loopy-bot')).ok).toBe(true);
    expect((await read('loopy-bot')).ok).toBe(true);
    const third = await read('loopy-bot');
    expect(third).toMatchObject({ ok: false, code: 'LOOP_DETECTED', effect: 'none' });
    expect(third.message).toContain('Use the previous result');
  });

  it('answers the third call with STEP_LIMIT under a budget of 2, telling the model to answer', async () => {
    expect((await read('thrifty-bot', 'ORD-1001')).ok).toBe(true);
    expect((await read('thrifty-bot', 'ORD-1002')).ok).toBe(true);
    const third = await read('thrifty-bot', 'ORD-1001');
    expect(third).toMatchObject({ ok: false, code: 'STEP_LIMIT' });
    expect(third.message).toContain('Stop calling tools and answer the user');
  });
});

describe('admission under concurrency', () => {
  it('starts one call workflow and applies one refund for ten identical proposals sent at once', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, () => refund()));
    expect(results.filter((result) => result.code === 'LOOP_DETECTED')).toHaveLength(7);
    const applied = results.filter((result) => result.ok);
    expect(applied).toHaveLength(3);
    expect(applied.filter((result) => result.replayed !== true)).toHaveLength(1);
    expect(await harness.orders.api.refundCount()).toBe(1);
    const callId = applied[0]!.callId;
    await expect
      .poll(async () => {
        let runs = 0;
        for await (const _ of harness.temporal.workflow.list({ query: `WorkflowId = "${callId}"` })) runs++;
        return runs;
      })
      .toBe(1);
    expect((await harness.client.sessionStats(session)).steps).toBe(10);
  });
});

describe('round trips', () => {
  const { EventType } = temporal.api.enums.v1;
  const eventsOf = async (workflowId: string) =>
    (await harness.temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const countOf = (events: { eventType?: number | null }[], type: number) =>
    events.filter((event) => event.eventType === type).length;

  it('closes a read in one workflow task, its outcome already counted by the session', async () => {
    const first = await read('test-refunder');
    expect(first.ok).toBe(true);
    const call = await eventsOf(first.callId);
    expect(countOf(call, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)).toBe(1);
    expect(countOf(call, EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED)).toBe(0);
    expect((await harness.client.sessionStats(session)).codeCounts).toEqual({ OK: 1 });

    expect((await read('test-refunder', 'ORD-1002')).ok).toBe(true);
    expect((await read('test-refunder', 'ORD-1003')).ok).toBe(true);
    const events = await eventsOf(sessionWorkflowId(session));
    expect(countOf(events, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)).toBe(3);
    expect(countOf(events, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED)).toBe(3);
    // One idle timer for the window (re-armed at most once, when the caller's timeout is learnt), not one per call.
    expect(countOf(events, EventType.EVENT_TYPE_TIMER_STARTED)).toBeLessThanOrEqual(2);
  });

  it('counts a run’s outcome once when its report arrives twice (a retried activity)', async () => {
    expect((await read('test-refunder')).ok).toBe(true);
    const handle = harness.temporal.workflow.getHandle(sessionWorkflowId(session));
    const outcome = {
      callId: 'tc-repeated',
      runId: 'run-1',
      tool: 'refund_order',
      code: 'ORDER_NOT_FOUND',
      ok: false,
    };
    await handle.signal(callOutcomeSignal, outcome);
    await handle.signal(callOutcomeSignal, outcome);
    await handle.signal(callOutcomeSignal, { ...outcome, runId: 'run-2' });
    await expect
      .poll(async () => (await harness.client.sessionStats(session)).codeCounts.ORDER_NOT_FOUND)
      .toBe(2);
    expect((await harness.client.sessionStats(session)).openCircuits).toEqual({});
    await handle.signal(callOutcomeSignal, { ...outcome, runId: 'run-3' });
    await expect
      .poll(async () => (await harness.client.sessionStats(session)).openCircuits.refund_order?.count)
      .toBe(3);
  });
});

describe('circuit breaker', () => {
  it('opens after three INVALID_ARGUMENTS in a row for a tool; another tool still works; a reset closes it', async () => {
    for (let index = 0; index < 3; index++) {
      expect((await refund({ amount_cents: 25.9 + index })).code).toBe('INVALID_ARGUMENTS');
    }
    const blocked = await refund();
    expect(blocked).toMatchObject({ ok: false, code: 'CIRCUIT_OPEN' });
    expect(await harness.orders.api.refundCount()).toBe(0);
    expect((await read('test-refunder')).ok).toBe(true);
    const stats = await harness.client.sessionStats(session);
    expect(stats.openCircuits.refund_order).toMatchObject({ code: 'INVALID_ARGUMENTS', count: 3 });
    expect(stats.codeCounts).toMatchObject({ INVALID_ARGUMENTS: 3, CIRCUIT_OPEN: 1, OK: 1 });

    await harness.client.resetSession(session, { tool: 'refund_order' });
    expect(await refund()).toMatchObject({ ok: true, effect: 'applied' });
    expect(await harness.orders.api.refundCount()).toBe(1);
  });

  it('does not open on rejections with different codes, and a success resets the count', async () => {
    expect((await refund({ amount_cents: 25.9 })).code).toBe('INVALID_ARGUMENTS');
    expect((await refund({ amount_cents: 25.8 })).code).toBe('INVALID_ARGUMENTS');
    expect((await refund({ currency: 'USD' })).code).toBe('CURRENCY_MISMATCH');
    expect((await refund({ amount_cents: 25.7 })).code).toBe('INVALID_ARGUMENTS');
    expect((await refund()).ok).toBe(true);
    expect((await refund({ amount_cents: 25.6 })).code).toBe('INVALID_ARGUMENTS');
    expect((await harness.client.sessionStats(session)).openCircuits).toEqual({});
  });
});

describe('durability', () => {
  it('keeps every counter across continue-as-new and admits nothing twice', async () => {
    // The tests' sessions continue as new after 6 admissions.
    const first = await read('test-refunder');
    await read('test-refunder');
    for (const orderId of ['ORD-1002', 'ORD-1003', 'ORD-9999', 'ORD-1002'])
      await read('test-refunder', orderId);
    await read('test-refunder', 'ORD-1003');
    const stats = await harness.client.sessionStats(session);
    expect(stats.generation).toBeGreaterThanOrEqual(1);
    expect(stats.steps).toBe(7);
    // The loop map came across: a third read of ORD-1001 is allowed, a fourth is not.
    expect((await read('test-refunder')).callId).toBe(first.callId);
    expect((await read('test-refunder')).code).toBe('LOOP_DETECTED');
    expect((await harness.client.sessionStats(session)).steps).toBe(9);
  });

  it('holds the default budget of 25 across a worker restart in the middle of a session and across two workers', async () => {
    const second = await startHarness({
      address: temporalAddress(),
      taskQueue: harness.taskQueue,
      keysDirectory: harness.keysDirectory,
    });
    // test-refunder's policy sets no session guards: the defaults apply. Every proposal names another
    // order (past ORD-1003 none exists), so the loop guard never answers in the budget's place.
    const orderId = (step: number) => `ORD-${1000 + step}`;
    try {
      for (let step = 1; step <= 12; step++) {
        expect((await read('test-refunder', orderId(step))).code).not.toBe('STEP_LIMIT');
      }
      expect((await harness.client.sessionStats(session)).stepBudget).toBe(25);
      await harness.restartWorker();
      for (let step = 13; step <= 25; step++) {
        expect((await read('test-refunder', orderId(step))).code).not.toBe('STEP_LIMIT');
      }
      expect((await read('test-refunder', orderId(26))).code).toBe('STEP_LIMIT');
      expect((await harness.client.sessionStats(session)).steps).toBe(26);
    } finally {
      await second.stop();
    }
  });
});

describe('session end', () => {
  it('keeps a session ended before its first call ended', async () => {
    await harness.client.endSession(session, { reason: 'conversation abandoned' });
    expect(await read('test-refunder')).toMatchObject({ ok: false, code: 'SESSION_CLOSED' });
  });

  it('ends a session that stays idle past its timeout, and it stays ended', async () => {
    expect((await read('sleepy-bot')).ok).toBe(true);
    await expect
      .poll(async () => (await harness.client.sessionStats(session)).closed, { timeout: 10_000 })
      .toBe(true);
    expect((await harness.client.sessionStats(session)).closedReason).toBe('idle');
    expect(await read('sleepy-bot', 'ORD-1002')).toMatchObject({ ok: false, code: 'SESSION_CLOSED' });
  });

  it('lets a call pending approval outlive its session and execute once when approved', async () => {
    const pending = await refund({}, 'support-bot');
    expect(pending.code).toBe('APPROVAL_PENDING');
    await harness.client.endSession(session);
    const outcome = await harness.admin.decide({
      callId: pending.callId,
      approver: 'alice',
      privateKey: harness.approverKey('alice'),
      decision: 'approve',
      reason: 'ok',
    });
    expect(outcome.accepted).toBe(true);
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await harness.orders.api.refundCount()).toBe(1);
  });
});
