import { describe, expect, it } from 'vitest';
import type { AuditRecord } from '../audit/audit-store';
import { createToolGateMetrics } from './metrics';

const record = (input: { code: string; channel?: string; runId?: string }): AuditRecord => ({
  callId: 'tc-get_order-1',
  runId: input.runId ?? 'run-1',
  session: 'session-1',
  caller: 'support-bot',
  tool: 'get_order',
  rawArguments: '{"order_id":"ORD-1001"}',
  ...(input.channel !== undefined ? { context: { onBehalfOf: 'CUS-1', channel: input.channel } } : {}),
  code: input.code,
  ok: input.code === 'OK',
  effect: 'none',
  result: { ok: input.code === 'OK', code: input.code, effect: 'none' } as AuditRecord['result'],
  startedAt: '2026-12-07T00:00:00.000Z',
  finishedAt: '2026-12-07T00:00:00.010Z',
  durationMs: 10,
});

/** The value of one series of toolgate_calls_by_channel_total, or undefined when it does not exist. */
async function byChannel(
  metrics: ReturnType<typeof createToolGateMetrics>,
  labels: { channel: string; code: string },
): Promise<number | undefined> {
  const metric = await metrics.registry.getSingleMetric('toolgate_calls_by_channel_total')!.get();
  return metric.values.find(
    (value) => value.labels.channel === labels.channel && value.labels.code === labels.code,
  )?.value;
}

describe('the channel label', () => {
  it('labels by the standard and the policy’s channels, and counts any other as _other and none as _none', async () => {
    const metrics = createToolGateMetrics({ knownTools: ['get_order'], knownChannels: ['partner-api'] });
    metrics.recorded(record({ code: 'OK', channel: 'end-user-chat' }));
    metrics.recorded(record({ code: 'ORDER_NOT_OWNED', channel: 'end-user-chat' }));
    metrics.recorded(record({ code: 'OK', channel: 'partner-api' }));
    // A harness naming a new channel per call cannot grow the series.
    for (let index = 0; index < 50; index++) {
      metrics.recorded(record({ code: 'OK', channel: `made-up-${index}` }));
    }
    metrics.recorded(record({ code: 'OK' }));
    // A session refusal is not a call: counted by toolgate_session_refusals_total only.
    metrics.recorded(record({ code: 'CONTEXT_MISMATCH', channel: 'end-user-chat', runId: 'admission:p-1' }));

    expect(await byChannel(metrics, { channel: 'end-user-chat', code: 'OK' })).toBe(1);
    expect(await byChannel(metrics, { channel: 'end-user-chat', code: 'ORDER_NOT_OWNED' })).toBe(1);
    expect(await byChannel(metrics, { channel: 'partner-api', code: 'OK' })).toBe(1);
    expect(await byChannel(metrics, { channel: '_other', code: 'OK' })).toBe(50);
    expect(await byChannel(metrics, { channel: '_none', code: 'OK' })).toBe(1);
    expect(await byChannel(metrics, { channel: 'end-user-chat', code: 'CONTEXT_MISMATCH' })).toBeUndefined();
    const metric = await metrics.registry.getSingleMetric('toolgate_calls_by_channel_total')!.get();
    expect(metric.values).toHaveLength(5);
    // End users and tenants are never labels.
    const text = await metrics.registry.metrics();
    expect(text).not.toContain('CUS-1');
  });
});
