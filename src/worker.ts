import type { Context as ActivityContext } from '@temporalio/activity';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import type * as OpenTelemetryInterceptors from '@temporalio/interceptors-opentelemetry';
import { createApproverKeyActivities } from './approver-keys/activities';
import { createControlsActivities } from './controls/activities';
import { createQuotaActivities } from './quotas/activities';
import { createGrantActivities } from './grants/activities';
import { createNotificationActivities } from './notifications/activities';
import { createToolCallActivities } from './calls/activities';
import { createSessionActivities } from './sessions/activities';
import type { AuditStore } from './audit/audit-store';
import type { CredentialMinter } from './credentials/credential-minter';
import type { ResolvedNotifications } from './notifications/notification-config';
import type { ToolGateMetrics } from './observability/metrics';
import { countingAuditStore, metricsActivityInterceptor } from './observability/metrics';
import type { ToolGateTracing } from './observability/tracing';
import type { LoadedPolicy } from './policy/load-policy';
import type { ToolGateSinks } from './shared/temporal';
import { defaultTaskQueue } from './shared/temporal';
import type { ExecutionRetry } from './tools/define-tool';
import { defaultExecutionRetry } from './tools/define-tool';
import type { ImplementedTool } from './tools/define-tool-implementation';
import { toolGateFailureConverterPath } from './connection/failure-converter-path';
import { toolGateWorkflowBundle } from './workflow-bundle';

/** What a toolgate worker needs; config is read by the caller (an entry point), never in here. */
export interface ToolGateWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  /** The tools' contracts with their implementations: the worker evaluates and runs them. */
  tools: readonly ImplementedTool[];
  /** The policy, or a function that returns the current one (for reloads). */
  policy: LoadedPolicy | (() => LoadedPolicy);
  audit: AuditStore;
  /** Mints per-attempt credentials for writes (see `createCredentialMinter`). */
  minter?: CredentialMinter;
  /** Retry of business checks and execution, unless a tool overrides it (default `defaultExecutionRetry`). */
  retry?: Partial<ExecutionRetry>;
  /** Approval notifications (see `resolveNotifications`); none when absent. */
  notifications?: ResolvedNotifications;
  /** Another workflow bundle than toolgate's own prebuilt one (tests that run workflows of their own). */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Counts outcomes as they are audited (see `createToolGateMetrics`); nothing counted when absent. */
  metrics?: ToolGateMetrics;
  /**
   * Traces workflows and activities (see `startTracing`): the traced workflow bundle, OpenTelemetry
   * interceptors and the workflow span exporter sink. No interceptor at all when absent.
   */
  tracing?: Pick<ToolGateTracing, 'spanProcessor' | 'resource'>;
  /**
   * Payload codecs (e.g. the encryption codec of `resolveTemporalConnection`). Only codecs: they run
   * outside the workflow sandbox. The failure converter is always toolgate's own (see
   * `toolGateFailureConverterPath`), the one the prebuilt bundle is built with, so the activities
   * encode failures as the workflows do.
   */
  dataConverter?: Pick<DataConverter, 'payloadCodecs'>;
  /** Extra worker options (tuning); toolgate's own fields win. */
  tuning?: Partial<
    Omit<
      WorkerOptions,
      'connection' | 'namespace' | 'taskQueue' | 'activities' | 'workflowBundle' | 'workflowsPath'
    >
  >;
}

/**
 * Creates a worker that runs toolgate's workflows (prebuilt: they hold no user code) and the tools'
 * activities. Every implementation must name a distinct tool; the policy is read through the worker
 * only, never from workflow input.
 */
export async function createToolGateWorker(options: ToolGateWorkerOptions): Promise<Worker> {
  const names = new Set<string>();
  for (const tool of options.tools) {
    if (names.has(tool.contract.name)) {
      throw new Error(`tool "${tool.contract.name}" has two implementations; register each tool once`);
    }
    names.add(tool.contract.name);
  }
  const policy = options.policy;
  const { metrics, tracing } = options;
  // Counted where each outcome is written: once per record, however often it is sent.
  const audit = metrics ? countingAuditStore(options.audit, metrics) : options.audit;
  const currentPolicy = typeof policy === 'function' ? policy : () => policy;
  const activities = {
    ...createToolCallActivities({
      tools: options.tools,
      policy: currentPolicy,
      audit,
      retry: { ...defaultExecutionRetry, ...options.retry },
      ...(metrics ? { onCircuitOpened: (opened) => metrics.circuitOpened(opened) } : {}),
      ...(options.minter ? { minter: options.minter } : {}),
      ...(options.notifications ? { notifications: options.notifications.plan } : {}),
    }),
    // Sessions are state in the audit store: a call's admission, a joining proposal's, session operations.
    ...createSessionActivities({ policy: currentPolicy, audit }),
    // The audit store is the key lookups' second source: it remembers what a registry rolled back forgets.
    ...createApproverKeyActivities({ policy: currentPolicy, audit }),
    // The kill switch: operators' signed changes checked against the policy and audited.
    ...createControlsActivities({
      policy: currentPolicy,
      toolNames: options.tools.map((tool) => tool.contract.name),
      audit,
    }),
    ...createQuotaActivities(),
    // Standing grants: approvers' signed grants judged against the policy, their uses audited.
    ...createGrantActivities({
      policy: currentPolicy,
      tools: (name) => {
        const contract = options.tools.find((tool) => tool.contract.name === name)?.contract;
        return contract ? { declaresAmount: typeof contract.amount === 'function' } : undefined;
      },
      audit,
    }),
    ...createNotificationActivities({
      audit,
      ...(options.notifications ? { notifications: options.notifications } : {}),
    }),
  };
  const interceptors = options.tuning?.interceptors;
  // OpenTelemetry's interceptors (and the SDK they pull in) are loaded only by a traced worker.
  const otel = tracing
    ? // eslint-disable-next-line @typescript-eslint/no-require-imports -- deliberately lazy, see above
      (require('@temporalio/interceptors-opentelemetry') as typeof OpenTelemetryInterceptors)
    : undefined;
  return Worker.create({
    ...options.tuning,
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue ?? defaultTaskQueue,
    workflowBundle: options.workflowBundle ?? toolGateWorkflowBundle({ traced: tracing !== undefined }),
    dataConverter: {
      ...(options.dataConverter?.payloadCodecs ? { payloadCodecs: options.dataConverter.payloadCodecs } : {}),
      failureConverterPath: toolGateFailureConverterPath(),
    },
    activities,
    ...(metrics || tracing
      ? {
          interceptors: {
            ...interceptors,
            activity: [
              ...(interceptors?.activity ?? []),
              ...(otel
                ? [
                    (context: ActivityContext) => ({
                      inbound: new otel.OpenTelemetryActivityInboundInterceptor(context),
                      outbound: new otel.OpenTelemetryActivityOutboundInterceptor(context),
                    }),
                  ]
                : []),
              ...(metrics ? [metricsActivityInterceptor(metrics)] : []),
            ],
            // The activities' client (a call's report to its session) carries the trace too.
            ...(otel
              ? {
                  client: {
                    ...interceptors?.client,
                    workflow: [
                      ...((interceptors?.client?.workflow as WorkflowClientInterceptor[] | undefined) ?? []),
                      new otel.OpenTelemetryWorkflowClientInterceptor(),
                    ],
                  },
                }
              : {}),
          },
        }
      : {}),
    sinks: <InjectedSinks<ToolGateSinks>>{
      ...(tracing && otel
        ? { exporter: otel.makeWorkflowExporter(tracing.spanProcessor, tracing.resource) }
        : {}),
      audit: {
        // Decision attempts refused by a validator leave no trace in history; this is their record.
        decisionAttempt: {
          fn: async (_info, attempt) => {
            await audit.appendDecisionAttempt({ ...attempt, source: 'workflow' });
          },
          callDuringReplay: false,
        },
        // Every change attempted on the approver-key registry, accepted or refused (written once per update).
        registryEvent: {
          fn: async (_info, event) => {
            await audit.appendRegistryEvent(event);
          },
          callDuringReplay: false,
        },
      },
    },
  });
}
