import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import type { AuditStore } from '../audit/audit-store';
import { auditStoreOnFirstUse, openAuditStore } from '../audit/open-audit-store';
import { ToolGateClient } from '../client';
import { loadConfig } from '../config';
import type { TemporalConnectionSettings } from '../connection/temporal-connection';
import { connectTemporalClient, resolveTemporalConnection } from '../connection/temporal-connection';
import type { LoadedConfig } from '../config';
import type { KeyOwner } from '../keys/key-files';
import { keyPaths, readPrivateKey } from '../keys/key-files';
import { loadPolicyFile } from '../policy/load-policy';
import type { LoadedPolicy } from '../policy/load-policy';
import { createToolRegistry } from '../tools/tool-registry';

/** Where output goes; tests pass their own. */
export interface CliOutput {
  out: (text: string) => void;
  error: (text: string) => void;
}

/** The options every command takes; declared once, on the program, and read with `optsWithGlobals()`. */
export type GlobalOptions = {
  config?: string;
  address?: string;
  namespace?: string;
  taskQueue?: string;
  json?: boolean;
};

/** What a command's action shares with `main`: where to write, what stops it, and its exit code. */
export interface CliContext {
  output: CliOutput;
  /** Aborting it ends a command that stays up (`dev`) as SIGINT would. */
  signal: AbortSignal | undefined;
  /** The exit code `main` resolves to; set by the action that ran. */
  exitCode: number;
}

/** Wraps a command body as a commander action: the number it returns becomes `main`'s exit code. */
export function commandAction<Args extends unknown[]>(
  context: CliContext,
  body: (...args: Args) => number | Promise<number>,
): (...args: Args) => Promise<void> {
  return async (...args) => {
    context.exitCode = await body(...args);
  };
}

/** The Temporal address as given by flag or environment, for messages written before a config loads. */
export function addressOf(options: GlobalOptions): string {
  return options.address ?? process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
}

/**
 * Address, namespace and task queue (the flag, else the environment, else the config, else the
 * default), and TLS, API key and payload codec (the environment, else the config).
 */
export function connectionSettings(options: GlobalOptions, config: LoadedConfig): TemporalConnectionSettings {
  return resolveTemporalConnection({
    config,
    env: process.env,
    overrides: {
      ...(options.address !== undefined ? { address: options.address } : {}),
      ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
      ...(options.taskQueue !== undefined ? { taskQueue: options.taskQueue } : {}),
    },
  });
}

/** Loads the config named by `--config` or TOOLGATE_CONFIG, else `./toolgate.config.ts` (or `.js`). */
export function configOf(options: GlobalOptions): LoadedConfig {
  const explicit = options.config ?? process.env.TOOLGATE_CONFIG;
  if (explicit) return loadConfig({ path: explicit });
  const candidates = ['toolgate.config.ts', 'toolgate.config.js'].map((name) => resolve(name));
  return loadConfig({ path: candidates.find((candidate) => existsSync(candidate)) ?? candidates[0]! });
}

/**
 * Runs `use` with a client for the configured tools and policy (loaded here unless `loaded` gives
 * them); closes the connection either way. Caller keys are read at each call, so a rotated key counts
 * at once.
 */
export async function withClient<T>(
  options: GlobalOptions,
  use: (client: ToolGateClient, context: { settings: ReturnType<typeof connectionSettings> }) => Promise<T>,
  loaded?: { config: LoadedConfig; policy: LoadedPolicy },
): Promise<T> {
  const config = loaded?.config ?? configOf(options);
  const settings = connectionSettings(options, config);
  const policy =
    loaded?.policy ??
    loadPolicyFile({
      path: config.policyPath,
      registry: createToolRegistry({ tools: config.tools }),
      keysDirectory: config.keysDirectory,
    });
  const { connection, client: temporal } = await connectTemporalClient(settings);
  const audit = auditStoreOnFirstUse(config);
  try {
    const client = new ToolGateClient({
      client: temporal,
      tools: config.tools,
      taskQueue: settings.taskQueue,
      policy,
      callerKey: (caller) => privateKeyOf({ config, owner: { kind: 'caller', name: caller } }),
      audit,
    });
    return await use(client, { settings });
  } finally {
    await connection.close();
    await audit.close();
  }
}

/**
 * Runs `use` with a Temporal client on the configured namespace and task queue, and (when `audited`)
 * the configured audit store; closes both either way.
 */
export async function withTemporal<T>(
  input: { options: GlobalOptions; audited: boolean },
  use: (opened: {
    temporal: Client;
    taskQueue: string;
    audit?: AuditStore;
    config: LoadedConfig;
  }) => Promise<T>,
): Promise<T> {
  const config = configOf(input.options);
  const settings = connectionSettings(input.options, config);
  const { connection, client: temporal } = await connectTemporalClient(settings);
  let audit: AuditStore | undefined;
  try {
    audit = input.audited ? await openAuditStore({ ...config, env: process.env }) : undefined;
    return await use({ temporal, taskQueue: settings.taskQueue, ...(audit ? { audit } : {}), config });
  } finally {
    await audit?.close();
    await connection.close();
  }
}

/** The owner's private key from the config's keys directory, or undefined when it cannot be read. */
export function privateKeyOf(input: { config: LoadedConfig; owner: KeyOwner }) {
  try {
    return readPrivateKey(keyPaths({ directory: input.config.keysDirectory, owner: input.owner }).privateKey);
  } catch {
    return undefined;
  }
}

/**
 * Resolves once a command that stays up should stop: SIGINT or SIGTERM, `signal` aborted, `close()`
 * called, or (with `stdin`) standard input ended, which is how an MCP client stops a stdio server.
 * Removes its listeners either way.
 */
export function untilStopped(input: { signal: AbortSignal | undefined; stdin?: boolean }): {
  promise: Promise<void>;
  close: () => void;
} {
  const { signal } = input;
  let close: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    close = (): void => {
      process.off('SIGINT', close);
      process.off('SIGTERM', close);
      process.stdin.off('end', close);
      signal?.removeEventListener('abort', close);
      resolve();
    };
    if (signal?.aborted) {
      resolve();
      return;
    }
    // While a listener is attached, these signals no longer end the process on their own: we stop cleanly.
    process.on('SIGINT', close);
    process.on('SIGTERM', close);
    if (input.stdin) process.stdin.once('end', close);
    signal?.addEventListener('abort', close, { once: true });
  });
  return { promise, close };
}
