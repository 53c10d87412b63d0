import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createToolGateMetrics, keyPaths, readPrivateKey, ToolGateClient } from 'toolgate';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import { approvalHelpers } from '../support/approval-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { testContracts } from '../support/test-tools';

let harness: ToolGateHarness;

// Port 0: the endpoint binds a free loopback port, named by the harness.
useHarness((started) => (harness = started), { metrics: { port: 0 } });

const { proposeRefund, decide, appliedRefunds } = approvalHelpers(() => harness);

/** One sample of the scraped text: its value, or undefined when the series does not exist. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .sort();
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = match[2]!.split(/,(?=[a-z_]+=)/).sort();
    if (present.join(',') === wanted.join(',')) return Number(match[3]);
  }
  return undefined;
}

async function scrape(): Promise<string> {
  const response = await fetch(harness.metricsUrl()!);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  return response.text();
}

/** Scrapes until `ready` holds: a session counts a reported outcome in its own workflow task. */
async function scrapeUntil(ready: (text: string) => boolean): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const text = await scrape();
    if (ready(text) || Date.now() > deadline) return text;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the worker metrics endpoint', () => {
  it('counts a refused call, an OK read, an approved write, a session refusal and a circuit opening exactly', async () => {
    expect(harness.metricsUrl()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

    const rejected = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 25.9 }),
    });
    expect(rejected.code).toBe('INVALID_ARGUMENTS');
    const read = await harness.call({
      caller: 'support-bot',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1001"}',
    });
    expect(read).toMatchObject({ ok: true, code: 'OK' });
    const pending = await proposeRefund();
    expect(await decide(pending.callId, 'alice')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      code: 'OK',
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);

    // Another caller in support-bot's session: refused at admission (step 0), nothing runs.
    const session = `metrics-${randomUUID()}`;
    await harness.client.call({
      session,
      caller: 'support-bot',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1001"}',
    });
    const intruder = await harness.client.call({
      session,
      caller: 'readonly-bot',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1002"}',
    });
    expect(intruder.code).toBe('UNAUTHENTICATED_CALLER');

    // Three INVALID_ARGUMENTS in a row for one tool in one session open its circuit.
    const circuitSession = `circuit-${randomUUID()}`;
    for (const amount of [25.1, 25.2, 25.3]) {
      const result = await harness.client.call({
        session: circuitSession,
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: amount }),
      });
      expect(result.code).toBe('INVALID_ARGUMENTS');
    }

    // A call answers before the worker's sinks (its audit record, hence its count) and its session's
    // outcome task have run: scrape until the last of each has been counted.
    const text = await scrapeUntil(
      (scraped) =>
        sample(scraped, 'toolgate_circuit_openings_total', { tool: 'refund_order' }) !== undefined &&
        sample(scraped, 'toolgate_calls_total', {
          tool: 'refund_order',
          code: 'INVALID_ARGUMENTS',
          effect: 'none',
        }) === 4 &&
        sample(scraped, 'toolgate_calls_total', { tool: 'get_order', code: 'OK', effect: 'none' }) === 2 &&
        sample(scraped, 'toolgate_approval_outcomes_total', { tool: 'refund_order', outcome: 'approved' }) !==
          undefined,
    );
    const calls = (tool: string, code: string, effect: string) =>
      sample(text, 'toolgate_calls_total', { tool, code, effect });
    expect(calls('refund_order', 'INVALID_ARGUMENTS', 'none')).toBe(4);
    expect(calls('get_order', 'OK', 'none')).toBe(2);
    expect(calls('refund_order', 'OK', 'applied')).toBe(1);
    expect(sample(text, 'toolgate_session_refusals_total', { code: 'UNAUTHENTICATED_CALLER' })).toBe(1);
    expect(
      sample(text, 'toolgate_approval_outcomes_total', { tool: 'refund_order', outcome: 'approved' }),
    ).toBe(1);
    expect(
      sample(text, 'toolgate_approval_decision_seconds_count', { tool: 'refund_order', outcome: 'approved' }),
    ).toBe(1);
    expect(
      sample(text, 'toolgate_approval_decision_seconds_bucket', {
        tool: 'refund_order',
        outcome: 'approved',
        le: '+Inf',
      }),
    ).toBe(1);
    expect(sample(text, 'toolgate_circuit_openings_total', { tool: 'refund_order' })).toBe(1);
    // The refusal at admission is its call's own run, so a call too (step 0 is the call's first step).
    expect(calls('get_order', 'UNAUTHENTICATED_CALLER', 'none')).toBe(1);
    // Nothing else was counted: every toolgate_calls_total series is one of the four above.
    const series = text.split('\n').filter((line) => line.startsWith('toolgate_calls_total{'));
    expect(series).toHaveLength(4);
    // Nothing was lost and recovered here, and no replay reaches a worker.
    expect(text).not.toMatch(/^toolgate_recovered_after_lost_response_total\{/m);
    expect(text).toContain('# TYPE toolgate_replays_total counter');

    const notFound = await fetch(harness.metricsUrl()!.replace(/\/metrics$/, '/other'));
    expect(notFound.status).toBe(404);
    await notFound.body?.cancel();
  });

  it('counts a replay in the client that answered it, and a write recovered after its response was lost', async () => {
    const metrics = createToolGateMetrics({ knownTools: ['refund_order', 'get_order'] });
    const client = new ToolGateClient({
      client: harness.temporal,
      tools: [...ordersContracts, ...testContracts],
      taskQueue: harness.taskQueue,
      callerKey: (caller) =>
        readPrivateKey(
          keyPaths({ directory: harness.keysDirectory, owner: { kind: 'caller', name: caller } }).privateKey,
        ),
      metrics,
    });
    const session = `replay-${randomUUID()}`;
    const refund = () =>
      client.call({
        session,
        caller: 'support-bot',
        tool: 'refund_order',
        arguments: harness.refundArguments(),
      });
    const pending = await refund();
    expect(pending.code).toBe('APPROVAL_PENDING');
    // The backend commits the refund and the response is lost: the worker finds it applied by its key.
    await harness.orders.api.setFaults({ idempotencyKey: pending.callId, loseResponseAfterCommit: 3 });
    await decide(pending.callId, 'alice');
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      code: 'OK',
      effect: 'applied',
    });
    expect(await refund()).toMatchObject({ ok: true, replayed: true });
    expect(await appliedRefunds()).toBe(1);

    const own = await metrics.registry.metrics();
    expect(sample(own, 'toolgate_replays_total', { tool: 'refund_order' })).toBe(1);
    const text = await scrape();
    expect(sample(text, 'toolgate_recovered_after_lost_response_total', { tool: 'refund_order' })).toBe(1);
  });
});
