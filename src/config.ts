import { existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { z } from 'zod';
import { defaultFixturesDirectoryName } from './contracts/contract-fixtures';
import { defaultMaxFixtureAge, parseAge } from './contracts/contract-warnings';
import type { NotificationsConfig } from './notifications/notification-config';
import type { MetricsEndpointOptions } from './observability/metrics-server';
import type { TracingConfig } from './observability/tracing';
import { ConfigurationError } from './policy/load-policy';
import type { ImplementedTool } from './tools/define-tool-implementation';
import type { ExecutionRetry, ToolContract, ToolInputSchema } from './tools/define-tool';

/** A deployment of toolgate: your tools, named once, and your policy file. */
export interface ToolGateConfig {
  /** The tool contracts: what the model sees, what the worker validates and classifies. */
  tools: readonly ToolContract<ToolInputSchema, z.ZodType>[];
  /** Your policy file (JSON), relative to the config file. */
  policyPath: string;
  /** Builds the tools' implementations; called by workers only, so clients never open backends. */
  implementations: () => readonly ImplementedTool[] | Promise<readonly ImplementedTool[]>;
  /** The SQLite audit store, relative to the config file (default `.toolgate/audit.sqlite`). */
  auditPath?: string;
  /**
   * A PostgreSQL URL (`postgres://user:password@host:5432/database`); when set, the audit store is
   * PostgreSQL, shared by every worker, and `auditPath` is not used. `TOOLGATE_AUDIT_URL` overrides it.
   */
  auditUrl?: string;
  /** Where key files are, relative to the config file (default `.toolgate/keys`); the policy's key paths are relative to it. */
  keysDirectory?: string;
  /**
   * Where and how to reach Temporal (each field is overridden by its environment variable: see
   * docs/connections-and-encryption.md): address, namespace, task queue, TLS or mTLS, a Temporal Cloud API key.
   */
  temporal?: TemporalConfig;
  /**
   * Payload encryption (AES-256-GCM) for every client and worker: `keys` in base64, the active one
   * first, older ones after it so what they encrypted still reads. `TOOLGATE_CODEC_KEYS` overrides it.
   */
  codec?: CodecConfig;
  /** Retry of business checks and execution, unless a tool overrides it. */
  retry?: Partial<ExecutionRetry>;
  /**
   * The MCP server over HTTP (`toolgate mcp http`): its bearer tokens file, relative to the config file
   * (default `.toolgate/mcp-tokens.json`), the browser origins it accepts (default: its own), where it
   * listens (default 127.0.0.1:4200).
   */
  mcp?: { tokensPath?: string; allowedOrigins?: string[]; host?: string; port?: number };
  /**
   * Approval notifications (workers only): webhooks told when a call waits, escalated to after a
   * delay, and told how it ended. Checked at a worker's start-up; secrets come from the environment.
   */
  notifications?: NotificationsConfig;
  /**
   * The contract checks (`toolgate contract`, `toolgate eval`): the committed snapshot (default
   * `toolgate.contracts.json`) and the recorded answers (default `contract-fixtures/`), relative to the
   * config file, and the age past which `contract check` and `contract test` warn that a fixture must
   * be recorded again (`12h`, `30d`, `2w`; default `30d`). A command's flag overrides each.
   */
  contracts?: ContractsConfig;
  /**
   * The worker's Prometheus endpoint (GET /metrics): off unless a port is set here, by
   * `toolgate worker --metrics-port` or by `TOOLGATE_METRICS_PORT`; host 127.0.0.1 unless set.
   */
  metrics?: MetricsEndpointOptions;
  /**
   * OpenTelemetry traces over OTLP HTTP: off unless an endpoint is set here or by
   * `OTEL_EXPORTER_OTLP_ENDPOINT` (see docs/audit-and-observability.md, "Traces").
   */
  tracing?: TracingConfig;
}

/** The Temporal connection a config names; `TEMPORAL_*` and `TOOLGATE_TASK_QUEUE` override each field. */
export interface TemporalConfig {
  address?: string;
  namespace?: string;
  taskQueue?: string;
  /**
   * TLS to the frontend: `true` for the system's root CAs, or PEM files relative to the config file
   * (`caPath` the server's CA; `certPath` and `keyPath` this client's pair, for mTLS) and the name
   * the server's certificate must carry when it is not the address's host.
   */
  tls?: boolean | { caPath?: string; certPath?: string; keyPath?: string; serverName?: string };
  /** A Temporal Cloud API key (prefer `TEMPORAL_API_KEY`: a config file is often committed); implies TLS. */
  apiKey?: string;
}

/** The payload codec's keys: an id and 32 bytes in base64 each, the active key first. */
export interface CodecConfig {
  keys: readonly { id: string; key: string }[];
}

/** Where the contract checks keep their files, and how old a recorded answer may grow. */
export interface ContractsConfig {
  snapshotPath?: string;
  fixturesDirectory?: string;
  maxFixtureAge?: string;
}

/** Declares a config with its types checked; returns it unchanged. */
export function defineConfig(config: ToolGateConfig): ToolGateConfig {
  return config;
}

/** A config with every path made absolute. */
export interface LoadedConfig extends ToolGateConfig {
  source: string;
  auditPath: string;
  keysDirectory: string;
  mcp: { tokensPath: string; allowedOrigins?: string[]; host?: string; port?: number };
  contracts: Required<ContractsConfig>;
}

/**
 * Loads a config module (TypeScript or JavaScript, its default export). A missing file or field
 * throws a `ConfigurationError` naming the file, the field and the fix.
 */
export function loadConfig(input: { path: string }): LoadedConfig {
  const source = resolve(input.path);
  if (!existsSync(source)) {
    throw new ConfigurationError(
      `config file ${source}: not found; pass --config <file> or set TOOLGATE_CONFIG (see docs/your-own-tools.md)`,
    );
  }
  const loaded = requireConfig(source) as { default?: ToolGateConfig } & ToolGateConfig;
  const config = loaded.default ?? loaded;
  return resolveConfig({ config, source });
}

/** Makes a config's paths absolute against the folder of `source` (its file), and checks its fields. */
export function resolveConfig(input: { config: ToolGateConfig; source: string }): LoadedConfig {
  const { config, source } = input;
  const missing = (['tools', 'policyPath', 'implementations'] as const).filter(
    (field) => config[field] === undefined,
  );
  if (missing.length) {
    throw new ConfigurationError(
      `config file ${source}: missing ${missing.join(', ')}; export default defineConfig({ tools, policyPath, implementations })`,
    );
  }
  if (typeof config.implementations !== 'function') {
    throw new ConfigurationError(
      `config file ${source}: implementations must be a function returning the implementations`,
    );
  }
  const maxFixtureAge = config.contracts?.maxFixtureAge ?? defaultMaxFixtureAge;
  const age = parseAge(maxFixtureAge);
  if (!age.ok) throw new ConfigurationError(`config file ${source}: contracts.maxFixtureAge: ${age.message}`);
  const base = dirname(source);
  const absolute = (path: string): string => (isAbsolute(path) ? path : resolve(base, path));
  return {
    ...config,
    source,
    policyPath: absolute(config.policyPath),
    auditPath: absolute(config.auditPath ?? '.toolgate/audit.sqlite'),
    keysDirectory: absolute(config.keysDirectory ?? '.toolgate/keys'),
    mcp: { ...config.mcp, tokensPath: absolute(config.mcp?.tokensPath ?? '.toolgate/mcp-tokens.json') },
    contracts: {
      snapshotPath: absolute(config.contracts?.snapshotPath ?? 'toolgate.contracts.json'),
      fixturesDirectory: absolute(config.contracts?.fixturesDirectory ?? defaultFixturesDirectoryName),
      maxFixtureAge,
    },
  };
}

/**
 * Loads a config module: JavaScript (`.js`, `.cjs`) with Node's own loader; TypeScript (`.ts`,
 * `.mts`, `.cts`) through tsx, an optional peer dependency that only a TypeScript config needs.
 */
function requireConfig(source: string): unknown {
  // A config is loaded at run time, by path: require is the loader here.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!/\.[mc]?ts$/.test(source)) return require(source);
  let tsx: { require: (id: string, from: string) => unknown };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- tsx is an optional peer dependency
    tsx = require('tsx/cjs/api') as typeof tsx;
  } catch {
    throw new ConfigurationError(
      `config file ${source}: a TypeScript config needs tsx (npm install --save-dev tsx), or write it as .js`,
    );
  }
  // tsx loads a TypeScript config (and what it imports) wherever this runs: the CLI, a test, a script.
  return tsx.require(source, __filename);
}
