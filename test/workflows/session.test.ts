import { beforeEach, describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { keyPaths, readPrivateKey, SessionOperationRefused } from 'toolgate';
import { capProposal, searchAttributes, signValue, toolCallWorkflowType } from 'toolgate/protocol';
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

describe('the step budget across two workers sharing the store', () => {
  it('admits exactly 25 of 40 reads sent at once, each its own call; the store and the audit agree', async () => {
    const second = await startHarness({
      address: temporalAddress(),
      taskQueue: harness.taskQueue,
      keysDirectory: harness.keysDirectory,
      auditPath: harness.auditPath,
    });
    try {
      // test-refunder has the default limits (budget 25); an intent id per proposal makes 40 calls of one read.
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          harness.client.call({
            session,
            caller: 'test-refunder',
            tool: 'get_order',
            arguments: '{"order_id":"ORD-1001"}',
            intentId: `turn-1-call-${index}`,
          }),
        ),
      );
      const codes = results.map((result) => result.code);
      expect(codes.filter((code) => code === 'OK')).toHaveLength(25);
      expect(codes.filter((code) => code === 'STEP_LIMIT')).toHaveLength(15);
      expect(new Set(results.map((result) => result.callId)).size).toBe(40);
      expect(await harness.client.sessionStats(session)).toMatchObject({
        steps: 40,
        codeCounts: { OK: 25, STEP_LIMIT: 15 },
      });
      const audited = (await harness.audit.recordsOfSession(session)).map((record) => record.code);
      expect(audited.filter((code) => code === 'OK')).toHaveLength(25);
      expect(audited.filter((code) => code === 'STEP_LIMIT')).toHaveLength(15);
    } finally {
      await second.stop();
    }
  });
});

describe('round trips', () => {
  const { EventType } = temporal.api.enums.v1;
  const eventsOf = async (workflowId: string) =>
    (await harness.temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const countOf = (events: { eventType?: number | null }[], type: number) =>
    events.filter((event) => event.eventType === type).length;

  it('closes a read in one workflow task, its outcome already counted in the store; the session is no workflow', async () => {
    const first = await read('test-refunder');
    expect(first.ok).toBe(true);
    const call = await eventsOf(first.callId);
    expect(countOf(call, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)).toBe(1);
    expect(countOf(call, EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED)).toBe(0);
    expect((await harness.client.sessionStats(session)).codeCounts).toEqual({ OK: 1 });

    expect((await read('test-refunder', 'ORD-1002')).ok).toBe(true);
    expect((await read('test-refunder', 'ORD-1003')).ok).toBe(true);
    // Ops see a session as its calls: every workflow that carries its id is a call.
    await expect
      .poll(async () => {
        const types: string[] = [];
        for await (const execution of harness.temporal.workflow.list({
          query: `${searchAttributes.sessionId.name} = "${session}"`,
        })) {
          types.push(execution.type);
        }
        return types;
      })
      .toEqual([toolCallWorkflowType, toolCallWorkflowType, toolCallWorkflowType]);
  });

  it('counts a run’s outcome once when it is counted twice (a retried activity)', async () => {
    expect((await read('test-refunder')).ok).toBe(true);
    const outcome = {
      session,
      callId: 'tc-repeated',
      runId: 'run-1',
      tool: 'refund_order',
      code: 'ORDER_NOT_FOUND',
      ok: false,
    };
    await harness.audit.sessions.countOutcome(outcome);
    await harness.audit.sessions.countOutcome(outcome);
    await harness.audit.sessions.countOutcome({ ...outcome, runId: 'run-2' });
    expect((await harness.client.sessionStats(session)).codeCounts.ORDER_NOT_FOUND).toBe(2);
    expect((await harness.client.sessionStats(session)).openCircuits).toEqual({});
    const opened = await harness.audit.sessions.countOutcome({ ...outcome, runId: 'run-3' });
    expect(opened.opened).toMatchObject({ code: 'ORDER_NOT_FOUND', count: 3 });
    expect((await harness.client.sessionStats(session)).openCircuits.refund_order?.count).toBe(3);
    expect((await refund()).code).toBe('CIRCUIT_OPEN');
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

    // Only an operator of the policy resets it, with their own key; the reset is kept with the session.
    const reset = (operator: string, key = operator) =>
      harness.client.resetSession(session, {
        tool: 'refund_order',
        operator,
        operatorKey: harness.operatorKey(key),
        reason: 'the schema was fixed',
      });
    await expect(reset('mallory')).rejects.toMatchObject({ code: 'NOT_AN_OPERATOR' });
    await expect(reset('olivia', 'mallory')).rejects.toBeInstanceOf(SessionOperationRefused);
    await expect(reset('olivia', 'mallory')).rejects.toMatchObject({ code: 'SIGNATURE_INVALID' });
    expect(await refund()).toMatchObject({ ok: false, code: 'CIRCUIT_OPEN' });
    const after = await reset('olivia');
    expect(after.openCircuits).toEqual({});
    expect(after.resets?.map(({ at: _at, ...reset }) => reset)).toEqual([
      { operator: 'olivia', reason: 'the schema was fixed', tool: 'refund_order' },
    ]);
    expect(after.resets?.[0]?.at).toMatch(/^\d{4}-/);
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
  it('refuses a call a raw Temporal client starts, validly signed, past the budget: STEP_LIMIT, nothing runs', async () => {
    expect((await read('thrifty-bot', 'ORD-1001')).ok).toBe(true);
    expect((await read('thrifty-bot', 'ORD-1002')).ok).toBe(true);
    // The caller's own key, a well-formed proposal, a workflow started directly: no client, no admission before it.
    const proposed = {
      session,
      caller: 'thrifty-bot',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1003"}',
    };
    const proposal = capProposal(proposed);
    const callId = harness.client.callIdOf(proposed);
    const key = readPrivateKey(
      keyPaths({ directory: harness.keysDirectory, owner: { kind: 'caller', name: 'thrifty-bot' } })
        .privateKey,
    );
    const signature = signValue({ kind: 'proposal', value: { callId, proposal }, privateKey: key });
    const handle = await harness.temporal.workflow.start(toolCallWorkflowType, {
      workflowId: callId,
      taskQueue: harness.taskQueue,
      args: [{ proposalId: 'raw-client-proposal', proposal, signature }],
    });
    const failure = await handle.result().then(
      () => undefined,
      (error: { cause?: { type?: string; details?: unknown[] } }) => error.cause,
    );
    expect(failure).toMatchObject({ type: 'STEP_LIMIT' });
    expect(failure?.details?.[0]).toMatchObject({ ok: false, code: 'STEP_LIMIT', effect: 'none' });
    // Two local activities ran, the admission-and-evaluation and the final record: no read of the order.
    const { EventType } = temporal.api.enums.v1;
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.filter((event) => event.eventType === EventType.EVENT_TYPE_MARKER_RECORDED)).toHaveLength(
      2,
    );
    const stats = await harness.client.sessionStats(session);
    expect(stats).toMatchObject({ steps: 3, codeCounts: { OK: 2, STEP_LIMIT: 1 } });
    expect((await harness.audit.recordsOf(callId)).map((record) => record.code)).toEqual(['STEP_LIMIT']);
  });

  it('holds the default budget of 25 across a worker restart in the middle of a session and across two workers', async () => {
    const second = await startHarness({
      address: temporalAddress(),
      taskQueue: harness.taskQueue,
      keysDirectory: harness.keysDirectory,
      auditPath: harness.auditPath,
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
    await harness.client.endSession(session, { reason: 'conversation abandoned', caller: 'test-refunder' });
    expect(await read('test-refunder')).toMatchObject({ ok: false, code: 'SESSION_CLOSED' });
  });

  it('is ended only by its own caller, with its key', async () => {
    expect((await read('test-refunder')).ok).toBe(true);
    await expect(harness.client.endSession(session, { caller: 'support-bot' })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED_CALLER',
    });
    expect((await harness.client.sessionStats(session)).closed).toBe(false);
    expect(await harness.client.endSession(session, { reason: 'handoff' })).toMatchObject({
      closed: true,
      closedReason: 'handoff',
    });
    expect(await read('test-refunder', 'ORD-1002')).toMatchObject({ ok: false, code: 'SESSION_CLOSED' });
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
