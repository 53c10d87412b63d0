import type { NativeConnection } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import { workflowBundlerOptions } from './workflow-bundle';
import type { ToolGateSinks } from './shared/temporal';
import { createToolCallActivities } from './activities/tool-call-activities';
import { admissionRefusalRecord } from './audit/audit-store';
import type { AuditStore } from './audit/audit-store';
import type { CredentialMinter } from './keys/credential-minter';
import type { LoadedPolicy } from './policy/load-policy';
import { defaultTaskQueue } from './shared/temporal';
import type { ImplementedTool } from './tools/define-tool-implementation';

/** What a toolgate worker needs; config is read by the caller (an entry point), never in here. */
export interface ToolGateWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  taskQueue?: string;
  /** The user's workflows module: it exports `toolCall = createToolCallWorkflow({ tools })`. */
  workflowsPath?: string;
  /** A prebuilt workflow bundle, instead of `workflowsPath` (faster start). */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** The tools' implementations, registered as the call workflow's activities. */
  tools: readonly ImplementedTool[];
  /** The policy, or a function that returns the current one (for reloads). */
  policy: LoadedPolicy | (() => LoadedPolicy);
  audit: AuditStore;
  /** Mints per-attempt credentials for writes (see `createCredentialMinter`). */
  minter?: CredentialMinter;
  /** Extra worker options (tuning); toolgate's own fields win. */
  tuning?: Partial<Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue' | 'activities'>>;
}

/**
 * Creates a worker that runs call workflows and their activities. Every implementation must name
 * a distinct tool; the policy is read through the worker only, never from workflow input.
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
  const activities = createToolCallActivities({
    tools: options.tools,
    policy: typeof policy === 'function' ? policy : () => policy,
    audit: options.audit,
    ...(options.minter ? { minter: options.minter } : {}),
  });
  const audit = options.audit;
  if (!options.workflowsPath && !options.workflowBundle) {
    throw new Error('createToolGateWorker needs workflowsPath (your workflows module) or workflowBundle');
  }
  return Worker.create({
    ...options.tuning,
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue ?? defaultTaskQueue,
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : {
          workflowsPath: options.workflowsPath,
          // toolgate's bundling, then the caller's own options and webpack hook on top of it.
          bundlerOptions: {
            ...options.tuning?.bundlerOptions,
            webpackConfigHook: (config) => {
              const bundled = workflowBundlerOptions.webpackConfigHook(config);
              return options.tuning?.bundlerOptions?.webpackConfigHook?.(bundled) ?? bundled;
            },
          },
        }),
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
      },
    },
  });
}
