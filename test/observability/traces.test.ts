import { afterAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { startTracing } from 'toolgate';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Registered before the harness starts: the client and the worker in this process trace into memory.
const exporter = new InMemorySpanExporter();
const tracing = startTracing({ serviceName: 'toolgate-traces-test', exporter });
afterAll(() => tracing.shutdown());

let harness: ToolGateHarness;

useHarness((started) => (harness = started), {
  tracing,
  clientInterceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
});

/** The spans of one trace, waiting for the workflow's (exported through a sink at its activation's end). */
async function spansOfTrace(
  traceId: string,
  ready: (spans: ReadableSpan[]) => boolean,
): Promise<ReadableSpan[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const spans = exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
    if (ready(spans) || Date.now() > deadline) return spans;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('traces', () => {
  it('follows one call in one trace from client.call through its workflow, admission and activity to the backend request', async () => {
    const result = await harness.call({
      caller: 'support-bot',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1001"}',
    });
    expect(result).toMatchObject({ ok: true, code: 'OK' });

    const root = exporter.getFinishedSpans().find((span) => span.name === 'toolgate.call');
    expect(root).toBeDefined();
    expect(root!.parentSpanId).toBeUndefined();
    expect(root!.attributes).toMatchObject({
      'toolgate.tool': 'get_order',
      'toolgate.call_id': result.callId,
    });
    const traceId = root!.spanContext().traceId;
    const named = (spans: ReadableSpan[], name: string) => spans.filter((span) => span.name === name);
    // The call answers before its session has handled the outcome signal, and a span is exported when
    // it ends (a workflow's at its activation's end): wait for every span the checks below read.
    const awaited = [
      'RunActivity:executeToolCall',
      'StartActivity:executeToolCall',
      'RunWorkflow:toolCall',
      'RunActivity:admitProposal',
      'StartActivity:admitProposal',
      'HandleUpdate:admit',
      'UpdateWithStartWorkflow:admit',
      'UpdateWithStartWorkflow:propose',
      'RunActivity:finishToolCall',
      'HandleSignal:callOutcome',
    ];
    const spans = await spansOfTrace(traceId, (found) =>
      awaited.every((name) => named(found, name).length > 0),
    );
    const byId = new Map(spans.map((span) => [span.spanContext().spanId, span]));
    const parentOf = (span: ReadableSpan) => (span.parentSpanId ? byId.get(span.parentSpanId) : undefined);
    const ancestry = (span: ReadableSpan): string[] => {
      const names: string[] = [];
      for (let current = parentOf(span); current; current = parentOf(current)) names.push(current.name);
      return names;
    };

    // Every span of the trace but the root hangs off another span of it: no broken link.
    for (const span of spans) {
      if (span !== root) expect(parentOf(span), `${span.name} has its parent in the trace`).toBeDefined();
    }
    const only = (name: string) => {
      const found = named(spans, name);
      expect(found, name).toHaveLength(1);
      return found[0]!;
    };
    // The call's update-with-start is the client's child: no session workflow runs before it.
    expect(parentOf(only('UpdateWithStartWorkflow:propose'))).toBe(root);
    expect(named(spans, 'UpdateWithStartWorkflow:admit')).toEqual([]);
    // The session's admission (step 0) is the call's first local activity, with its evaluation.
    expect(ancestry(only('RunActivity:evaluateCall'))).toEqual([
      'StartActivity:evaluateCall',
      'RunWorkflow:toolCall',
      'UpdateWithStartWorkflow:propose',
      'toolgate.call',
    ]);
    // The outcome is counted in the session by the call's last step, in the same trace.
    expect(ancestry(only('RunActivity:finishToolCall'))).toContain('RunWorkflow:toolCall');
    // The call's workflow, its activity, then the backend's request, each under the one before.
    const execute = only('RunActivity:executeToolCall');
    expect(ancestry(execute)).toEqual([
      'StartActivity:executeToolCall',
      'RunWorkflow:toolCall',
      'UpdateWithStartWorkflow:propose',
      'toolgate.call',
    ]);

    // The orders service received the activity's span as the request's parent (W3C traceparent).
    const stats = (await (await fetch(`${harness.orders.url}/stats`)).json()) as {
      received_traceparents: string[];
    };
    const request = stats.received_traceparents.find((line) => line.startsWith('GET /orders/ORD-1001 '));
    expect(request).toBeDefined();
    const [, , traceparent] = request!.split(' ');
    const [, requestTraceId, parentSpanId] = traceparent!.split('-');
    expect(requestTraceId).toBe(traceId);
    expect(parentSpanId).toBe(execute.spanContext().spanId);
  });
});
