import type { NativeConnection } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import { createApproverKeyActivities } from './activities/approver-key-activities';
import { createNotificationActivities } from './activities/notification-activities';
import { createToolCallActivities } from './activities/tool-call-activities';
import { admissionRefusalRecord } from './audit/audit-store';
import type { AuditStore } from './audit/audit-store';
import type { CredentialMinter } from './credentials/credential-minter';
import type { ResolvedNotifications } from './notifications/notification-config';
import type { LoadedPolicy } from './policy/load-policy';
import type { ToolGateSinks } from './shared/temporal';
import { defaultTaskQueue } from './shared/temporal';
import type { ExecutionRetry } from './tools/define-tool';
import { defaultExecutionRetry } from './tools/define-tool';
import type { ImplementedTool } from './tools/define-tool-implementation';
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
  /** Sessions continue as new after this many admissions in one run (default 1,000). */
  session?: { continueAsNewAfter?: number };
  /** Approval notifications (see `resolveNotifications`); none when absent. */
  notifications?: ResolvedNotifications;
  /** Another workflow bundle than toolgate's own prebuilt one (tests that run workflows of their own). */
  workflowBundle?: WorkerOptions['workflowBundle'];
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
  const currentPolicy = typeof policy === 'function' ? policy : () => policy;
  const activities = {
    ...createToolCallActivities({
      tools: options.tools,
      policy: currentPolicy,
      audit: options.audit,
      retry: { ...defaultExecutionRetry, ...options.retry },
      ...(options.session ? { session: options.session } : {}),
      ...(options.minter ? { minter: options.minter } : {}),
      ...(options.notifications ? { notifications: options.notifications.plan } : {}),
    }),
    // The audit store is the key lookups' second source: it remembers what a registry rolled back forgets.
    ...createApproverKeyActivities({ policy: currentPolicy, audit: options.audit }),
    ...createNotificationActivities({
      audit: options.audit,
      ...(options.notifications ? { notifications: options.notifications } : {}),
    }),
  };
  const audit = options.audit;
  return Worker.create({
    ...options.tuning,
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue ?? defaultTaskQueue,
    workflowBundle: options.workflowBundle ?? toolGateWorkflowBundle(),
    activities,
    sinks: <InjectedSinks<ToolGateSinks>>{
      audit: {
        // Decision attempts refused by a validator leave no trace in history; this is their record.
        decisionAttempt: {
          fn: (_info, attempt) => {
            audit.appendDecisionAttempt({ ...attempt, source: 'workflow' });
          },
          callDuringReplay: false,
        },
        // Session refusals start no call; this is their record (keyed by proposal: written once).
        admissionRefusal: {
          fn: (_info, refusal) => {
            audit.append(admissionRefusalRecord(refusal));
          },
          callDuringReplay: false,
        },
        // Every change attempted on the approver-key registry, accepted or refused (written once per update).
        registryEvent: {
          fn: (_info, event) => {
            audit.appendRegistryEvent(event);
          },
          callDuringReplay: false,
        },
      },
    },
  });
}
