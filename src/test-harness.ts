import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Connection } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { ApprovalAdmin } from './approvals/client';
import type { DecisionOutcome } from './approvals/client';
import { ToolGateClient } from './client';
import type { LoadedConfig } from './config';
import {
  clientConnectionOptions,
  resolveTemporalConnection,
  temporalClientOn,
  withoutTransportSecurity,
} from './connection/temporal-connection';
import type { DevServer } from './dev/dev-server';
import { prepareNamespace, startDevServer } from './dev/dev-server';
import type { KeyOwner } from './keys/key-files';
import { generateKeyPairFiles, keyPaths, readPrivateKey } from './keys/key-files';
import { startToolGateWorker } from './start-worker';
import type { ToolGateWorkerHandle } from './start-worker';

/** A running toolgate for a user's own tests: a Temporal server, a worker for their tools, a client. */
export interface TestHarness {
  /** The Temporal server's address and namespace. */
  address: string;
  namespace: string;
  /** The worker's own task queue (one per harness, so tests never share calls). */
  taskQueue: string;
  /** A raw Temporal client (for histories, describe, and attacks of your own). */
  temporal: Client;
  /** Proposes calls signed with each caller's key from the config's keys directory. */
  client: ToolGateClient;
  /** Lists and decides pending approvals. */
  admin: ApprovalAdmin;
  worker: ToolGateWorkerHandle;
  /** Decides a waiting call as `approver`, signed with their key from the keys directory. */
  decide(input: {
    callId: string;
    approver: string;
    decision?: 'approve' | 'deny';
    reason?: string;
  }): Promise<DecisionOutcome>;
  /** Stops the worker, the client's connection and the server it started; calling it again is harmless. */
  stop(): Promise<void>;
}

/**
 * Starts toolgate for a test of your own tools: a Temporal dev server with toolgate's namespace
 * settings (unless `address` names a running server), development keys for every caller and
 * approver the policy names and for the minter (unless they exist), a worker on a task queue of
 * its own, and a client. A failed start stops what it started.
 */
export async function startTestHarness(input: {
  config: LoadedConfig;
  /** A Temporal server already running (its namespace prepared); otherwise a dev server is started. */
  address?: string;
  namespace?: string;
  /** Where the dev server finds or builds the Temporal CLI (`.toolgate/bin`); default the config's folder. */
  projectRoot?: string;
  /** Receives the dev server's progress lines (default: none). */
  log?: (line: string) => void;
}): Promise<TestHarness> {
  const { config } = input;
  const stops: (() => Promise<unknown>)[] = [];
  // Best-effort, in reverse: a part that fails to stop does not leave the others running.
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.splice(0).reverse()) {
      try {
        await stop();
      } catch {
        // already stopped, or stopping failed: nothing more to do for it
      }
    }
  };
  try {
    generateDevelopmentKeys(config);
    let address = input.address;
    let namespace = input.namespace ?? 'default';
    if (address === undefined) {
      const server: DevServer = await startDevServer({
        projectRoot: input.projectRoot ?? dirname(config.source),
        headless: true,
        namespace,
        log: input.log ?? (() => undefined),
      });
      stops.push(() => server.stop());
      address = server.address;
      namespace = server.namespace;
    }
    // A dev server started here speaks plaintext on loopback: TLS and API keys are for a server of
    // your own (`address`); the payload codec applies either way.
    const env = input.address === undefined ? withoutTransportSecurity(process.env) : process.env;
    const source =
      input.address === undefined
        ? { ...config, temporal: { ...config.temporal, tls: false, apiKey: undefined } }
        : config;
    const settings = resolveTemporalConnection({ config: source, env, overrides: { address, namespace } });
    const connection = await Connection.connect(clientConnectionOptions(settings));
    stops.push(() => connection.close());
    if (input.address === undefined) await prepareNamespace({ connection, namespace });
    const taskQueue = `test-${randomUUID()}`;
    const worker = await startToolGateWorker({
      config: source,
      target: { address, namespace, taskQueue },
      env,
    });
    const running = worker.run().catch(() => undefined);
    stops.push(async () => {
      await worker.stop();
      await running;
    });
    const temporal = temporalClientOn({ connection, settings });
    const keyOf = (owner: KeyOwner): KeyObject | undefined => {
      try {
        return readPrivateKey(keyPaths({ directory: config.keysDirectory, owner }).privateKey);
      } catch {
        return undefined;
      }
    };
    const client = new ToolGateClient({
      client: temporal,
      tools: config.tools,
      taskQueue,
      policy: worker.policy,
      callerKey: (caller) => keyOf({ kind: 'caller', name: caller }),
    });
    const admin = new ApprovalAdmin({ client: temporal, taskQueue, audit: worker.audit });
    return {
      address,
      namespace,
      taskQueue,
      temporal,
      client,
      admin,
      worker,
      decide: ({ callId, approver, decision = 'approve', reason }) => {
        const privateKey = keyOf({ kind: 'approver', name: approver });
        if (!privateKey) throw new Error(`no key for approver ${approver} in ${config.keysDirectory}`);
        return admin.decide({
          callId,
          approver,
          privateKey,
          decision,
          reason: reason ?? `${decision}d in a test`,
        });
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** Key pairs for every caller and approver the policy file names, and the minter, where none exist. */
function generateDevelopmentKeys(config: LoadedConfig): void {
  const named = JSON.parse(readFileSync(config.policyPath, 'utf8')) as {
    callers?: Record<string, unknown>;
    approvers?: Record<string, unknown>;
  };
  const owners: KeyOwner[] = [
    ...Object.keys(named.callers ?? {}).map((name) => ({ kind: 'caller' as const, name })),
    ...Object.keys(named.approvers ?? {}).map((name) => ({ kind: 'approver' as const, name })),
    { kind: 'minter' },
  ];
  for (const owner of owners) generateKeyPairFiles({ directory: config.keysDirectory, owner });
}
