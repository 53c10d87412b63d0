// toolgate's own spans and the trace context it sends to backends: the OpenTelemetry API only (no
// SDK), so a process that does not trace loads nothing more and every call here is a no-op.
import { context, propagation, trace } from '@opentelemetry/api';
import type { Span, Tracer } from '@opentelemetry/api';

/** The tracer name toolgate's own spans (the client's `toolgate.call`) are made with. */
export const toolGateTracerName = 'toolgate';

/**
 * The W3C `traceparent` (and `tracestate`) of the active span, to send on a request to a backend;
 * empty when nothing is traced, so the request goes out unchanged.
 */
export function traceHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  propagation.inject(context.active(), headers);
  return headers;
}

/** Runs `action` in a span of toolgate's tracer, ended when it settles; a no-op tracer costs nothing. */
export async function inSpan<T>(
  name: string,
  attributes: Record<string, string>,
  action: (span: Span) => Promise<T>,
  tracer: Tracer = trace.getTracer(toolGateTracerName),
): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await action(span);
    } catch (error) {
      span.recordException(error as Error);
      throw error;
    } finally {
      span.end();
    }
  });
}
