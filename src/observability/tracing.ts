// OpenTelemetry traces for toolgate: one trace from `ToolGateClient.call` through the session's
// admission, the call's workflow and activities, to the tool's HTTP request to its backend. Off
// unless configured: then no provider is registered, no interceptor installed, no span made.
import { context, propagation, trace } from '@opentelemetry/api';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as Resources from '@opentelemetry/resources';
import type { Resource } from '@opentelemetry/resources';
import type * as TraceBase from '@opentelemetry/sdk-trace-base';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AsyncLocalContextManager } from './async-context-manager';

/** Config `tracing`: where spans go over OTLP HTTP, and the service name they carry. */
export interface TracingConfig {
  /** The OTLP HTTP traces URL (e.g. `http://127.0.0.1:4318/v1/traces`); `OTEL_EXPORTER_OTLP_ENDPOINT` also turns tracing on. */
  endpoint?: string;
  /** The `service.name` resource attribute (default `toolgate-worker` on a worker); `OTEL_SERVICE_NAME` overrides it. */
  serviceName?: string;
}

/** What a worker (and the Temporal client's interceptors) need to trace: where spans are processed, and their resource. */
export interface ToolGateTracing {
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** Flushes what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

/**
 * Registers a global tracer provider (with an AsyncLocalStorage context manager and W3C trace-context
 * propagation) that sends spans to `exporter`, or over OTLP HTTP to `endpoint`. Batched for OTLP,
 * sent one by one for an exporter given (tests collect them in memory). Call it once per process,
 * before clients and workers are made.
 */
export function startTracing(input: {
  serviceName: string;
  exporter?: SpanExporter;
  endpoint?: string;
}): ToolGateTracing {
  // The SDK and the OTLP exporter (protobufjs among it) are loaded here, not with the module: a process
  // that never traces (most agents, an untraced worker) does not hold them.
  /* eslint-disable @typescript-eslint/no-require-imports -- deliberately lazy, see above */
  const { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } =
    require('@opentelemetry/sdk-trace-base') as typeof TraceBase;
  const { Resource } = require('@opentelemetry/resources') as typeof Resources;
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const exporter = input.exporter ?? new OTLPTraceExporter(input.endpoint ? { url: input.endpoint } : {});
  const spanProcessor = input.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter);
  const resource = new Resource({ 'service.name': input.serviceName });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Sets the global provider, the context manager and the propagator (W3C trace context and baggage).
  provider.register({ contextManager: new AsyncLocalContextManager().enable() });
  return {
    spanProcessor,
    resource,
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/**
 * Tracing as the config and the environment ask for it: on when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `..._TRACES_ENDPOINT`) is set or the config names an endpoint; off (undefined) otherwise.
 */
export function tracingFromConfig(input: {
  config?: TracingConfig;
  env: NodeJS.ProcessEnv;
  defaultServiceName: string;
}): ToolGateTracing | undefined {
  const { env, config } = input;
  const fromEnv = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!fromEnv && !config?.endpoint) return undefined;
  return startTracing({
    serviceName: env.OTEL_SERVICE_NAME ?? config?.serviceName ?? input.defaultServiceName,
    // The exporter reads the environment's endpoint itself (and appends /v1/traces to the generic one).
    ...(fromEnv ? {} : { endpoint: config?.endpoint }),
  });
}
