// The production topology on one machine (test/cluster/cluster-topology.ts): a Temporal server built
// from go.temporal.io/server on PostgreSQL, two `toolgate worker` processes on one task queue, the
// orders service. The seed's story runs on it; then a worker is SIGKILLed while refunds are in flight
// (the other finishes them, none applied twice), and the Temporal server is killed and started again
// while a refund waits for its approval (the call survives and completes once approved).
// `npm run test:cluster`; CLUSTER_FULL=1 runs more refunds through the worker kill.
import { setTimeout as delay } from 'node:timers/promises';
import type { ToolResult } from 'toolgate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterTopology } from './cluster-topology';
import { clusterApprover, clusterCallers, startClusterTopology } from './cluster-topology';

const full = process.env.CLUSTER_FULL === '1';
/** Refund intents in flight when a worker is killed. */
const inFlightIntents = full ? 60 : 12;
const callAttempts = 5;
const resultTimeoutMs = 120_000;

const log = (line: string): void => {
  process.stderr.write(`[cluster] ${line}\n`);
};

/** What the run measured, printed when it ends. */
const figures = {
  calls: 0,
  refundIntents: 0,
  appliedRefunds: 0,
  duplicates: 0,
  inFlightAtWorkerKill: 0,
  callsThatLostAnAttempt: 0,
  workerKillRecoveryMs: undefined as number | undefined,
  serverDownMs: undefined as number | undefined,
  serverRestartRecoveryMs: undefined as number | undefined,
};

/** The call id of every refund intent that was applied, for the audit check. */
const appliedRefundCallIds: string[] = [];

let topology: ClusterTopology | undefined;
const cluster = (): ClusterTopology => {
  if (!topology) throw new Error('the cluster did not start');
  return topology;
};

beforeAll(async () => {
  const startedAt = performance.now();
  topology = await startClusterTopology({ log });
  log(`cluster up in ${seconds(performance.now() - startedAt)}`);
});

afterAll(async () => {
  try {
    await topology?.stop();
  } finally {
    printFigures();
  }
});

describe('toolgate on a Temporal server on PostgreSQL, with two worker processes', () => {
  it("runs the seed's story: a read, then a refund applied once after a signed approval", async () => {
    const { client, orders } = cluster();
    const session = 'cluster-seed-story';
    const read = await propose({
      session,
      caller: clusterCallers.approvee,
      tool: 'get_order',
      arguments: JSON.stringify({ order_id: 'ORD-1001' }),
    });
    expect(read).toMatchObject({ ok: true, code: 'OK', effect: 'none' });
    expect(read.data).toMatchObject({ order_id: 'ORD-1001', currency: 'BRL' });

    const refundArguments = { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' };
    const pending = await propose({
      session,
      caller: clusterCallers.approvee,
      tool: 'refund_order',
      arguments: JSON.stringify(refundArguments),
    });
    expect(pending.code).toBe('APPROVAL_PENDING');
    expect(await orders.api.refundCount({ orderId: 'ORD-1001' })).toBe(0);

    const final = await approveUntilFinal({ callId: pending.callId });
    expect(final).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    figures.refundIntents += 1;
    appliedRefundCallIds.push(final.callId);

    // Proposed again, it is replayed: nothing runs twice.
    const again = await propose({
      session,
      caller: clusterCallers.approvee,
      tool: 'refund_order',
      arguments: JSON.stringify(refundArguments),
    });
    expect(again).toMatchObject({ ok: true, code: 'OK', replayed: true, callId: pending.callId });
    expect(await orders.api.refundCount({ orderId: 'ORD-1001' })).toBe(1);
    expect(await client.result(pending.callId, { wait: false })).toMatchObject({ code: 'OK' });
  });

  it('admits exactly 25 of one session’s 40 parallel reads, split across the two workers, on PostgreSQL', async () => {
    const { client, audit, temporal } = cluster();
    const session = 'cluster-parallel-turn';
    // One read, 40 intents: 40 calls of one session at once; the default budget is 25.
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        client.call({
          session,
          caller: clusterCallers.reader,
          tool: 'get_order',
          arguments: JSON.stringify({ order_id: 'ORD-1002' }),
          intentId: `parallel-${index}`,
        }),
      ),
    );
    const codes = results.map((result) => result.code);
    expect(codes.filter((code) => code === 'OK')).toHaveLength(25);
    expect(codes.filter((code) => code === 'STEP_LIMIT')).toHaveLength(15);
    expect(await client.sessionStats(session)).toMatchObject({
      steps: 40,
      codeCounts: { OK: 25, STEP_LIMIT: 15 },
    });
    const audited = (await audit.recordsOfSession(session)).map((record) => record.code);
    expect(audited.filter((code) => code === 'OK')).toHaveLength(25);
    expect(audited.filter((code) => code === 'STEP_LIMIT')).toHaveLength(15);
    // Both workers decided some of them: the identity that completed each call's first task.
    const identities = new Set<string>();
    for (const result of results) {
      const history = await temporal.workflow.getHandle(result.callId).fetchHistory();
      const completed = history.events?.find((event) => event.workflowTaskCompletedEventAttributes);
      const identity = completed?.workflowTaskCompletedEventAttributes?.identity;
      if (identity) identities.add(identity);
    }
    log(`the 40 calls' first tasks ran on ${identities.size} worker(s)`);
    expect(identities.size).toBe(2);
  });

  it('finishes the calls in flight on the other worker when one is SIGKILLed, applying no refund twice', async () => {
    const { orders, workers } = cluster();
    const intents = Array.from({ length: inFlightIntents }, (_, index) => ({
      // Distinct amounts: each intent is its own refund (the call id covers order, amount, currency).
      arguments: {
        order_id: 'ORD-1003',
        amount_cents: 101 + index,
        currency: 'BRL',
        reason: 'customer_request',
      },
      session: `cluster-kill-${index % 4}`,
    }));
    // Some refunds meet the backend's faults, so that they are still running (retrying) when the
    // worker dies: an unavailable backend, and a refund committed whose response is lost.
    for (const [index, intent] of intents.entries()) {
      const callId = cluster().client.callIdOf({
        session: intent.session,
        caller: clusterCallers.autonomous,
        tool: 'refund_order',
        arguments: intent.arguments,
      });
      if (index % 3 === 0) await orders.api.setFaults({ idempotencyKey: callId, unavailable: 1 });
      if (index % 3 === 1) await orders.api.setFaults({ idempotencyKey: callId, loseResponseAfterCommit: 1 });
    }

    let settled = 0;
    const calls = intents.map(async (intent) => {
      const result = await propose({
        session: intent.session,
        caller: clusterCallers.autonomous,
        tool: 'refund_order',
        arguments: JSON.stringify(intent.arguments),
      });
      settled += 1;
      return { result, settledAt: performance.now() };
    });

    // The kill: once the first refund is back, or after 3 s, whichever comes first.
    const firstBack = Promise.race(calls);
    await Promise.race([firstBack, delay(3_000)]);
    const victim = workers[0]!;
    const killedAt = performance.now();
    figures.inFlightAtWorkerKill = intents.length - settled;
    await victim.kill();
    log(
      `${victim.name} (pid ${victim.pid}) SIGKILLed with ${figures.inFlightAtWorkerKill} refunds in flight`,
    );

    const outcomes = await Promise.all(calls);
    const lastSettledAt = Math.max(...outcomes.map((outcome) => outcome.settledAt));
    figures.workerKillRecoveryMs = lastSettledAt - killedAt;
    figures.refundIntents += intents.length;
    log(`every refund settled ${seconds(figures.workerKillRecoveryMs)} after the kill`);

    expect(figures.inFlightAtWorkerKill).toBeGreaterThan(0);
    for (const { result } of outcomes) {
      expect(result).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
      appliedRefundCallIds.push(result.callId);
    }
    const refunds = await orders.api.listRefunds({ orderId: 'ORD-1003' });
    const amounts = refunds.map((refund) => refund.amountCents).sort((a, b) => a - b);
    expect(amounts).toEqual(intents.map((intent) => intent.arguments.amount_cents));

    // The kill took work with it: some call's history shows an attempt that timed out (its activity
    // ran on the killed worker and was retried on the other) or a workflow task that timed out.
    let lostWithTheVictim = 0;
    for (const { result } of outcomes) {
      const { events } = await cluster().temporal.workflow.getHandle(result.callId).fetchHistory();
      const lost = (events ?? []).some(
        (event) =>
          event.workflowTaskTimedOutEventAttributes ||
          event.activityTaskStartedEventAttributes?.lastFailure?.timeoutFailureInfo,
      );
      if (lost) lostWithTheVictim += 1;
    }
    figures.callsThatLostAnAttempt = lostWithTheVictim;
    log(`${lostWithTheVictim} of the refunds lost a task or an attempt with the killed worker`);
    expect(lostWithTheVictim).toBeGreaterThan(0);

    // A worker again in place of the killed one, for the rest of the run.
    const replacement = await cluster().startWorker('worker-c');
    workers.splice(workers.indexOf(victim), 1, replacement);
  });

  it('completes a call pending approval after the Temporal server is killed and started again', async () => {
    const { server, orders } = cluster();
    const refundArguments = {
      order_id: 'ORD-1002',
      amount_cents: 1500,
      currency: 'USD',
      reason: 'not_delivered',
    };
    const pending = await propose({
      session: 'cluster-server-restart',
      caller: clusterCallers.approvee,
      tool: 'refund_order',
      arguments: JSON.stringify(refundArguments),
    });
    expect(pending.code).toBe('APPROVAL_PENDING');

    const killedAt = performance.now();
    // As a crash: no shutdown, the state is what reached PostgreSQL.
    await server.kill('SIGKILL');
    log('Temporal server SIGKILLed; starting it again on the same ports and databases');
    await server.start();
    figures.serverDownMs = performance.now() - killedAt;
    log(`Temporal server back after ${seconds(figures.serverDownMs)}`);

    const final = await approveUntilFinal({ callId: pending.callId });
    figures.serverRestartRecoveryMs = performance.now() - killedAt;
    figures.refundIntents += 1;
    expect(final).toMatchObject({ ok: true, code: 'OK', effect: 'applied' });
    appliedRefundCallIds.push(final.callId);
    expect(await orders.api.refundCount({ orderId: 'ORD-1002' })).toBe(1);
  });

  it('applied exactly one refund per refund intent across the whole run', async () => {
    const refunds = await cluster().orders.api.listRefunds();
    const perKey = new Map<string, number>();
    for (const refund of refunds)
      perKey.set(refund.idempotencyKey, (perKey.get(refund.idempotencyKey) ?? 0) + 1);
    figures.appliedRefunds = refunds.length;
    figures.duplicates = [...perKey.values()].reduce((sum, count) => sum + count - 1, 0);
    expect(figures.duplicates).toBe(0);
    expect(figures.appliedRefunds).toBe(figures.refundIntents);
    expect(new Set(refunds.map((refund) => refund.idempotencyKey))).toEqual(new Set(appliedRefundCallIds));
  });

  it('has every applied refund in the audit store the workers share', async () => {
    for (const callId of appliedRefundCallIds) {
      const records = await cluster().audit.recordsOf(callId);
      expect(records.some((record) => record.code === 'OK' && record.effect === 'applied')).toBe(true);
    }
  });
});

/** Proposes a call as an agent harness does: a transient failure (a worker or server gone) is proposed again. */
async function propose(input: {
  session: string;
  caller: string;
  tool: string;
  arguments: string;
}): Promise<ToolResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      figures.calls += 1;
      return await cluster().client.call(input);
    } catch (error) {
      if (attempt >= callAttempts) throw error;
      log(`${input.tool} proposed again after: ${firstLine(error)}`);
      await delay(1_000 * attempt);
    }
  }
}

/**
 * Approves the call's open round as the approver (asking again while no worker answers yet) and waits
 * for its final result by long poll.
 */
async function approveUntilFinal(input: { callId: string }): Promise<ToolResult> {
  const { client, admin, approverKey } = cluster();
  const giveUpAt = performance.now() + resultTimeoutMs;
  let lastError = '';
  for (;;) {
    if (performance.now() > giveUpAt)
      throw new Error(`no decision accepted for ${input.callId}: ${lastError}`);
    try {
      const decision = await admin.decide({
        callId: input.callId,
        approver: clusterApprover,
        privateKey: approverKey,
        decision: 'approve',
        reason: 'cluster test: approved',
      });
      if (decision.accepted) break;
      lastError = JSON.stringify(decision);
    } catch (error) {
      lastError = firstLine(error);
    }
    await delay(500);
  }
  for (;;) {
    try {
      const result = await client.result(input.callId, { wait: true });
      if (result) return result;
    } catch (error) {
      if (performance.now() > giveUpAt) throw error;
      await delay(500);
    }
  }
}

function printFigures(): void {
  const ms = (value: number | undefined) => (value === undefined ? 'n/a' : seconds(value));
  const lines = [
    `cluster figures (${full ? 'CLUSTER_FULL' : 'short'} run):`,
    `  calls proposed: ${figures.calls}`,
    `  refund intents: ${figures.refundIntents}`,
    `  refunds applied by the orders service: ${figures.appliedRefunds}`,
    `  duplicates: ${figures.duplicates}`,
    `  refunds in flight at the worker kill: ${figures.inFlightAtWorkerKill}`,
    `  of which lost a task or an attempt with the killed worker: ${figures.callsThatLostAnAttempt}`,
    `  worker SIGKILL -> every in-flight refund settled: ${ms(figures.workerKillRecoveryMs)}`,
    `  Temporal server SIGKILL -> serving again: ${ms(figures.serverDownMs)}`,
    `  Temporal server SIGKILL -> pending call approved and completed: ${ms(figures.serverRestartRecoveryMs)}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

function seconds(milliseconds: number): string {
  return `${(milliseconds / 1000).toFixed(1)} s`;
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 300);
}
