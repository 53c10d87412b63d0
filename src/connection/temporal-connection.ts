// Where toolgate reaches Temporal, and how: address, namespace and task queue, TLS (mTLS), an API
// key for Temporal Cloud, and the payload codec. Every client and worker toolgate opens takes its
// options from here, so a deployment configures them once (config or environment) for all of them.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { ConnectionLike, ConnectionOptions, DataConverter, TLSConfig } from '@temporalio/client';
import type { CodecConfig, TemporalConfig } from '../config';
import { ConfigurationError } from '../policy/load-policy';
import { defaultTaskQueue } from '../shared/temporal';
import { toolGateFailureConverterPath } from './failure-converter-path';
import {
  codecKeysEnvironmentVariable,
  codecKeysFromConfig,
  parseCodecKeys,
  PayloadEncryptionCodec,
} from './payload-encryption';
import type { PayloadEncryptionKey } from './payload-encryption';

/** The environment variables read here; each wins over its config field. */
export const temporalEnvironmentVariables = {
  address: 'TEMPORAL_ADDRESS',
  namespace: 'TEMPORAL_NAMESPACE',
  taskQueue: 'TOOLGATE_TASK_QUEUE',
  /** `true` for TLS with the system's root CAs (implied by any other TLS variable or an API key). */
  tls: 'TEMPORAL_TLS',
  /** A file: the root CA that signed the server's certificate. */
  tlsCa: 'TEMPORAL_TLS_CA',
  /** A file: this client's certificate (mTLS), with TEMPORAL_TLS_KEY. */
  tlsCert: 'TEMPORAL_TLS_CERT',
  /** A file: this client's private key (mTLS), with TEMPORAL_TLS_CERT. */
  tlsKey: 'TEMPORAL_TLS_KEY',
  /** The name to check the server's certificate against (SNI), when it is not the address's host. */
  tlsServerName: 'TEMPORAL_TLS_SERVER_NAME',
  /** A Temporal Cloud API key; implies TLS. */
  apiKey: 'TEMPORAL_API_KEY',
  codecKeys: codecKeysEnvironmentVariable,
} as const;

/** What a config contributes to a connection: its `temporal` and `codec` sections, and its file. */
export interface ConnectionConfigSource {
  temporal?: TemporalConfig;
  codec?: CodecConfig;
  /** The config file: relative TLS paths are relative to its folder, and messages name it. */
  source?: string;
}

/** Everything a client or worker needs to reach the namespace, resolved once. */
export interface TemporalConnectionSettings {
  address: string;
  namespace: string;
  taskQueue: string;
  /** TLS options (files already read), or undefined for a plaintext connection. */
  tls?: TLSConfig;
  apiKey?: string;
  /** The payload codec, when keys are configured. */
  codec?: PayloadEncryptionCodec;
  /**
   * What clients and workers pass as `dataConverter`: toolgate's failure converter (failure messages
   * and stack traces in an encoded payload, as the workflow bundle encodes them) and the codec, when
   * configured.
   */
  dataConverter: DataConverter;
}

/**
 * Resolves where and how to connect: for each field, the override (a command-line flag, a caller's
 * target), else the environment, else the config, else the default (127.0.0.1:7233, `default`,
 * `toolgate`, plaintext, no codec). Reads the TLS files now; a missing file, a certificate without
 * its key or a malformed key list throws a `ConfigurationError` naming the variable or field and the fix.
 */
export function resolveTemporalConnection(input: {
  config?: ConnectionConfigSource;
  env?: NodeJS.ProcessEnv;
  overrides?: { address?: string; namespace?: string; taskQueue?: string };
}): TemporalConnectionSettings {
  const env = input.env ?? process.env;
  const config = input.config ?? {};
  const temporal = config.temporal ?? {};
  const names = temporalEnvironmentVariables;
  const fromEnv = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const address = input.overrides?.address ?? fromEnv(names.address) ?? temporal.address ?? '127.0.0.1:7233';
  const namespace = input.overrides?.namespace ?? fromEnv(names.namespace) ?? temporal.namespace ?? 'default';
  const taskQueue =
    input.overrides?.taskQueue ?? fromEnv(names.taskQueue) ?? temporal.taskQueue ?? defaultTaskQueue;
  const apiKey = fromEnv(names.apiKey) ?? temporal.apiKey;
  const tls = resolveTls({ env: fromEnv, config, apiKey });
  const codec = resolvePayloadCodec({ config, env });
  return {
    address,
    namespace,
    taskQueue,
    ...(tls ? { tls } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(codec ? { codec } : {}),
    dataConverter: {
      failureConverterPath: toolGateFailureConverterPath(),
      ...(codec ? { payloadCodecs: [codec] } : {}),
    },
  };
}

/** The options of `Connection.connect` (a client's connection) for these settings. */
export function clientConnectionOptions(
  settings: TemporalConnectionSettings,
  extra: { connectTimeout?: string | number } = {},
): ConnectionOptions {
  return {
    address: settings.address,
    ...(settings.tls ? { tls: settings.tls } : {}),
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
    ...(extra.connectTimeout !== undefined ? { connectTimeout: extra.connectTimeout } : {}),
  };
}

/**
 * The options of `NativeConnection.connect` (a worker's connection) for these settings: the same
 * fields as a client's, checked to fit both.
 */
export function nativeConnectionOptions(settings: TemporalConnectionSettings): {
  address: string;
  tls?: TLSConfig;
  apiKey?: string;
} {
  return {
    address: settings.address,
    ...(settings.tls ? { tls: settings.tls } : {}),
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
  };
}

/**
 * Opens a client's connection and a client on the settings' namespace, with toolgate's failure
 * converter and the codec when one is configured. The caller closes `connection`.
 */
export async function connectTemporalClient(
  settings: TemporalConnectionSettings,
  extra: { connectTimeout?: string | number } = { connectTimeout: '5s' },
): Promise<{ connection: Connection; client: Client }> {
  const connection = await Connection.connect(clientConnectionOptions(settings, extra));
  return { connection, client: temporalClientOn({ connection, settings }) };
}

/**
 * A client on an open connection (a client's or a worker's), with the settings' namespace, codec
 * and failure converter.
 */
export function temporalClientOn(input: {
  connection: ConnectionLike;
  settings: Pick<TemporalConnectionSettings, 'namespace' | 'dataConverter'>;
}): Client {
  return new Client({
    connection: input.connection,
    namespace: input.settings.namespace,
    dataConverter: input.settings.dataConverter,
  });
}

function resolveTls(input: {
  env: (name: string) => string | undefined;
  config: ConnectionConfigSource;
  apiKey: string | undefined;
}): TLSConfig | undefined {
  const names = temporalEnvironmentVariables;
  const configured = input.config.temporal?.tls;
  const fromConfig = typeof configured === 'object' ? configured : {};
  const where = input.config.source ? `config file ${input.config.source}: ` : '';
  const base = input.config.source ? dirname(input.config.source) : process.cwd();
  // One file per field: the environment's path as given, the config's relative to the config file.
  const file = (
    variable: string,
    field: keyof typeof fromConfig,
  ): { path: string; from: string } | undefined => {
    const fromEnv = input.env(variable);
    if (fromEnv) return { path: resolve(fromEnv), from: variable };
    const value = fromConfig[field];
    if (typeof value !== 'string' || value === '') return undefined;
    return { path: isAbsolute(value) ? value : resolve(base, value), from: `${where}temporal.tls.${field}` };
  };
  const ca = file(names.tlsCa, 'caPath');
  const cert = file(names.tlsCert, 'certPath');
  const key = file(names.tlsKey, 'keyPath');
  const serverName = input.env(names.tlsServerName) ?? fromConfig.serverName;
  const explicit = input.env(names.tls);
  if (explicit !== undefined && !/^(true|false|1|0)$/i.test(explicit)) {
    throw new ConfigurationError(`${names.tls}: "${explicit}" is not a switch; write true or false`);
  }
  const switchedOff = explicit !== undefined ? /^(false|0)$/i.test(explicit) : configured === false;
  const wanted =
    (explicit !== undefined
      ? /^(true|1)$/i.test(explicit)
      : configured !== undefined && configured !== false) ||
    ca !== undefined ||
    cert !== undefined ||
    key !== undefined ||
    serverName !== undefined ||
    input.apiKey !== undefined;
  if (!wanted) return undefined;
  if (switchedOff && (ca || cert || key || serverName || input.apiKey)) {
    throw new ConfigurationError(
      `${names.tls} (or temporal.tls: false) turns TLS off, but TLS files, a server name or an API key are ` +
        `configured; remove them, or drop the switch (an API key needs TLS)`,
    );
  }
  if ((cert === undefined) !== (key === undefined)) {
    const missing =
      cert === undefined
        ? `${names.tlsCert} (or temporal.tls.certPath)`
        : `${names.tlsKey} (or temporal.tls.keyPath)`;
    throw new ConfigurationError(
      `mTLS needs a client certificate and its private key: set ${missing} too, or neither`,
    );
  }
  const read = (entry: { path: string; from: string }): Buffer => {
    try {
      return readFileSync(entry.path);
    } catch (error) {
      throw new ConfigurationError(
        `${entry.from}: cannot read ${entry.path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); ` +
          `give the path of a PEM file this process can read`,
      );
    }
  };
  return {
    ...(ca ? { serverRootCACertificate: read(ca) } : {}),
    ...(cert && key ? { clientCertPair: { crt: read(cert), key: read(key) } } : {}),
    ...(serverName ? { serverNameOverride: serverName } : {}),
  };
}

/**
 * The payload codec alone (for what needs no connection: the codec server, a client of a local dev
 * server): `TOOLGATE_CODEC_KEYS`, else the config's `codec.keys`, else none.
 */
export function resolvePayloadCodec(input: {
  config?: ConnectionConfigSource;
  env?: NodeJS.ProcessEnv;
}): PayloadEncryptionCodec | undefined {
  const keys = resolveCodecKeys(input);
  return keys ? new PayloadEncryptionCodec({ keys }) : undefined;
}

/**
 * The payload codec's keys, the active one first: `TOOLGATE_CODEC_KEYS`, else the config's
 * `codec.keys`, else undefined. What a process that must decode payloads is handed (the approvals
 * console's own process), written back with `formatCodecKeys`.
 */
export function resolveCodecKeys(input: {
  config?: ConnectionConfigSource;
  env?: NodeJS.ProcessEnv;
}): PayloadEncryptionKey[] | undefined {
  const text = (input.env ?? process.env)[codecKeysEnvironmentVariable]?.trim();
  if (text) return parseCodecKeys({ text });
  const configured = input.config?.codec;
  if (configured === undefined) return undefined;
  const source = input.config?.source ? `config file ${input.config.source}` : 'config';
  return codecKeysFromConfig({ keys: configured.keys, source });
}

/**
 * The environment without the TLS and API-key variables: for a connection to a local dev server
 * this process started, which speaks plaintext on loopback whatever the shell says about the real one.
 */
export function withoutTransportSecurity(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const names = temporalEnvironmentVariables;
  const dropped = new Set<string>([
    names.tls,
    names.tlsCa,
    names.tlsCert,
    names.tlsKey,
    names.tlsServerName,
    names.apiKey,
  ]);
  return Object.fromEntries(Object.entries(env).filter(([name]) => !dropped.has(name)));
}
