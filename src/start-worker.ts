import { existsSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { readApproverKeyStatus } from './approver-keys/client';
import type { Worker } from '@temporalio/worker';
import type { Registry } from 'prom-client';
import type { AuditStore } from './audit/audit-store';
import { openAuditStore } from './audit/open-audit-store';
import type { LoadedConfig } from './config';
import {
  nativeConnectionOptions,
  resolveTemporalConnection,
  temporalClientOn,
} from './connection/temporal-connection';
import { createCredentialMinter } from './credentials/credential-minter';
import { readGrantUse } from './grants/activities';
import type { CredentialMinter } from './credentials/credential-minter';
import { keyPaths, readPrivateKey } from './keys/key-files';
import { resolveNotifications } from './notifications/notification-config';
import { createToolGateMetrics } from './observability/metrics';
import type { MetricsEndpoint, MetricsEndpointOptions } from './observability/metrics-server';
import { serveMetrics } from './observability/metrics-server';
import type { ToolGateTracing } from './observability/tracing';
import { loadPolicyFile } from './policy/load-policy';
import type { LoadedPolicy } from './policy/load-policy';
import { createToolRegistry } from './tools/tool-registry';
import type { ToolGateWorkerOptions } from './worker';
import { createToolGateWorker } from './worker';

/** Where a worker connects: each field overrides the config's `temporal` section. */
export interface WorkerTarget {
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

/** A started worker with what it assembled; `run()` polls until shutdown, `stop()` ends it and closes the rest. */
export interface ToolGateWorkerHandle {
  worker: Worker;
  policy: LoadedPolicy;
  audit: AuditStore;
  minter?: CredentialMinter;
  address: string;
  namespace: string;
  taskQueue: string;
  /** The Prometheus endpoint (`url` ends in /metrics), when metrics are on; closed with the worker. */
  metrics?: MetricsEndpoint & { registry: Registry };
  /** Runs the worker until it shuts down (SIGINT/SIGTERM, or `stop()`), then closes what it opened. */
  run(): Promise<void>;
  /** Shuts the worker down, waits for it, and closes what it opened. */
  stop(): Promise<void>;
}

/**
 * The one place a worker is assembled from a config: the tools' registry and implementations, the
 * policy, the keys and the credential minter (when the minter key exists), the audit store and the
 * worker. The CLI, `npm start`, the bench and the test harness all start workers through it.
 */
export async function startToolGateWorker(input: {
  config: LoadedConfig;
  target?: WorkerTarget;
  /** A policy file other than the config's (e.g. a stricter one for a demo). */
  policyPath?: string;
  /** An open connection to reuse (it stays open after `stop()`); otherwise one is opened. */
  connection?: NativeConnection;
  /** An open audit store to share (it stays open after `stop()`); otherwise the config's is opened. */
  audit?: AuditStore;
  /** Another minter than the one made from the keys directory (`null`: writes carry no credential). */
  minter?: CredentialMinter | null;
  tuning?: ToolGateWorkerOptions['tuning'];
  workflowBundle?: ToolGateWorkerOptions['workflowBundle'];
  /**
   * Serves toolgate's metrics on GET /metrics at this port (host 127.0.0.1 unless given); `false`
   * turns them off. Default: the config's `metrics` (off when it has none).
   */
  metrics?: MetricsEndpointOptions | false;
  /** The Temporal SDK's own Prometheus exporter (see `installSdkMetrics`), served through the same endpoint. */
  sdkMetricsUrl?: string;
  /** Traces the worker's workflows and activities (see `startTracing`); off when absent. */
  tracing?: Pick<ToolGateTracing, 'spanProcessor' | 'resource'>;
  /**
   * Where the TLS, API key and codec settings (and the target's fields it leaves out) are read from
   * (default `process.env`); see `resolveTemporalConnection`.
   */
  env?: NodeJS.ProcessEnv;
}): Promise<ToolGateWorkerHandle> {
  const { config } = input;
  // Checked before anything opens: unreadable TLS files or malformed codec keys stop the worker here.
  const settings = resolveTemporalConnection({
    config,
    env: input.env ?? process.env,
    overrides: { ...input.target },
  });
  const { address, namespace, taskQueue } = settings;
  const registry = createToolRegistry({ tools: config.tools });
  const policy = loadPolicyFile({
    path: input.policyPath ?? config.policyPath,
    registry,
    keysDirectory: config.keysDirectory,
  });
  // Checked before anything opens: a bad channel or a missing secret stops the worker at start-up.
  const notifications = config.notifications
    ? resolveNotifications({ config: config.notifications, source: config.source, env: process.env })
    : undefined;
  const tools = await config.implementations();
  const closers: (() => unknown)[] = [];
  // Best-effort, in reverse: one that fails does not keep the others open.
  const closeAll = async (): Promise<void> => {
    for (const close of closers.splice(0).reverse()) {
      try {
        await close();
      } catch {
        // already closed, or closing failed: nothing more to do for it
      }
    }
  };
  try {
    // SQLite at auditPath, or PostgreSQL (shared by every worker) when auditUrl or TOOLGATE_AUDIT_URL names one.
    const audit = input.audit ?? (await openAuditStore({ ...config, env: process.env }));
    if (!input.audit) closers.push(() => audit.close());
    const connection =
      input.connection ?? (await NativeConnection.connect(nativeConnectionOptions(settings)));
    if (!input.connection) closers.push(() => connection.close());
    const minter =
      input.minter === undefined
        ? minterFromKeys({
            config,
            policy,
            client: temporalClientOn({ connection, settings }),
            taskQueue,
            audit,
          })
        : (input.minter ?? undefined);
    const endpointOptions = input.metrics === undefined ? config.metrics : input.metrics || undefined;
    const metrics = endpointOptions
      ? createToolGateMetrics({ knownTools: registry.names, knownChannels: channelsOf(policy.file) })
      : undefined;
    const endpoint =
      metrics && endpointOptions
        ? await serveMetrics({
            metrics,
            endpoint: endpointOptions,
            ...(input.sdkMetricsUrl ? { sdkMetricsUrl: input.sdkMetricsUrl } : {}),
          })
        : undefined;
    if (endpoint) closers.push(() => endpoint.close());
    const worker = await createToolGateWorker({
      connection,
      namespace,
      taskQueue,
      tools,
      policy,
      audit,
      ...(minter ? { minter } : {}),
      ...(config.retry ? { retry: config.retry } : {}),
      ...(notifications ? { notifications } : {}),
      ...(input.tuning ? { tuning: input.tuning } : {}),
      ...(input.workflowBundle ? { workflowBundle: input.workflowBundle } : {}),
      ...(metrics ? { metrics } : {}),
      ...(input.tracing ? { tracing: input.tracing } : {}),
      dataConverter: settings.dataConverter,
    });
    let running: Promise<void> | undefined;
    const run = (): Promise<void> => {
      running ??= worker.run().finally(closeAll);
      return running;
    };
    return {
      worker,
      policy,
      audit,
      ...(minter ? { minter } : {}),
      ...(endpoint && metrics ? { metrics: { ...endpoint, registry: metrics.registry } } : {}),
      address,
      namespace,
      taskQueue,
      run,
      stop: async () => {
        // A worker that never ran is run and shut down at once, so its native half is released too.
        const done = run();
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await done.catch(() => undefined);
      },
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** The worker's credential minter, when the minter key exists in the keys directory. */
function minterFromKeys(input: {
  config: LoadedConfig;
  policy: LoadedPolicy;
  /** A client on the worker's connection: the minter asks the approver-key registry through it. */
  client: Client;
  taskQueue: string;
  /** Cross-checked with the registry's answers: a key it shows revoked stays revoked (registry rollback). */
  audit: AuditStore;
}): CredentialMinter | undefined {
  const path = keyPaths({ directory: input.config.keysDirectory, owner: { kind: 'minter' } }).privateKey;
  if (!existsSync(path)) return undefined; // no minter key: writes carry no credential, calls no ticket
  // A key that exists but cannot be read stops the worker: it never runs without tickets by accident.
  const privateKey = readPrivateKey(path);
  const { client, taskQueue, audit } = input;
  return createCredentialMinter({
    privateKey,
    policy: () => input.policy,
    approverKeyStatus: (keyId) => readApproverKeyStatus({ client, taskQueue, keyId, audit }),
    // A call covered by a standing grant: the grants workflow must hold its use.
    grantUse: (use) => readGrantUse({ client, taskQueue, ...use }),
  });
}

/** The channels a policy file's caller contexts name: the bounded set the metrics label by. */
function channelsOf(file: LoadedPolicy['file']): string[] {
  return Object.values(file.callers).flatMap((caller) =>
    (caller.contexts ?? []).flatMap((entry) =>
      entry.when.channel !== undefined ? [entry.when.channel] : [],
    ),
  );
}
