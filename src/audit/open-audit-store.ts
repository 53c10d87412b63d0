import { existsSync } from 'node:fs';
import { ConfigurationError } from '../policy/load-policy';
import { openSqliteAuditStore } from './audit-store';
import type { AuditStore } from './audit-store';
import type * as PostgresModule from './postgres-audit-store';

/** The config's fields that say where the audit store is (a loaded config has them). */
export interface AuditStoreConfig {
  /** The SQLite file (absolute, or relative to the working directory). */
  auditPath?: string;
  /** A PostgreSQL URL; when set, the store is PostgreSQL and `auditPath` is not used. */
  auditUrl?: string;
  /** The config file, named in errors. */
  source?: string;
  /** Where `TOOLGATE_AUDIT_URL` is read (default: the process's environment). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** The environment variable that names a PostgreSQL audit store; it wins over the config's `auditUrl`. */
export const auditUrlVariable = 'TOOLGATE_AUDIT_URL';

/**
 * Opens the deployment's audit store: PostgreSQL when `TOOLGATE_AUDIT_URL` (in `env`, default the
 * process's) or the config's `auditUrl` names one (the variable wins), else SQLite at `auditPath`.
 * A URL that is not `postgres://` or `postgresql://` throws a `ConfigurationError` saying where it
 * came from; a database that cannot be reached rejects.
 */
export async function openAuditStore(config: AuditStoreConfig): Promise<AuditStore> {
  const url = auditUrlOf(config);
  if (url === undefined) {
    if (config.auditPath === undefined) {
      throw new ConfigurationError(`no audit store named: set auditPath, auditUrl or ${auditUrlVariable}`);
    }
    return openSqliteAuditStore({ path: config.auditPath });
  }
  if (!/^postgres(ql)?:\/\//.test(url)) {
    const where =
      url !== config.auditUrl ? auditUrlVariable : `config file ${config.source ?? '(unnamed)'}: auditUrl`;
    throw new ConfigurationError(
      `${where}: expected a PostgreSQL URL (postgres://user:password@host:5432/database), got "${redacted(url)}"`,
    );
  }
  return openPostgresAuditStore({ url });
}

/**
 * The deployment's audit store for a process that rarely writes to it (a client auditing the proposals
 * it could not deliver): opened on the first append, closed by `close()` if it was opened.
 */
export function auditStoreOnFirstUse(config: AuditStoreConfig): Pick<AuditStore, 'append'> & {
  close(): Promise<void>;
} {
  let opened: Promise<AuditStore> | undefined;
  return {
    append: async (record) => (await (opened ??= openAuditStore(config))).append(record),
    close: async () => {
      if (opened) await (await opened.catch(() => undefined))?.close();
    },
  };
}

/** The PostgreSQL URL the store is at (`TOOLGATE_AUDIT_URL` first, then `auditUrl`); undefined for SQLite. */
export function auditUrlOf(config: AuditStoreConfig): string | undefined {
  return (config.env ?? process.env)[auditUrlVariable] || config.auditUrl || undefined;
}

/** The URL without what could be a password, for an error message. */
function redacted(url: string): string {
  return url.replace(/\/\/[^/@]*@/, '//…@').slice(0, 200);
}

/**
 * Why a command that only reads the audit store should not open it, or undefined: a SQLite file that
 * does not exist (opening it would create an empty store and report nothing). PostgreSQL is never missing.
 */
export function missingAuditStore(config: AuditStoreConfig): string | undefined {
  if (auditUrlOf(config) !== undefined || config.auditPath === undefined || config.auditPath === ':memory:') {
    return undefined;
  }
  return existsSync(config.auditPath)
    ? undefined
    : `no audit store at ${config.auditPath}; check auditPath in your config (a worker writes it)`;
}

/**
 * Opens a PostgreSQL audit store: what several workers on several machines share. Creates its tables
 * when missing (idempotent, serialised by an advisory lock, so workers may start together; needs
 * PostgreSQL 14 or later). Rows can be inserted only: triggers refuse updates, deletes and truncation.
 * An append retried with the same key, from any worker, writes once. Timestamps are the database's
 * clock. Rejects when the database cannot be reached or the tables cannot be created. Its driver loads
 * on the first call, so a worker on SQLite never holds it.
 */
export async function openPostgresAuditStore(
  input: Parameters<typeof PostgresModule.openPostgresAuditStore>[0],
): Promise<AuditStore> {
  return (await loadPostgres()).openPostgresAuditStore(input);
}

/** Built, by `require` (every CommonJS host runs it); from the sources, by `import()` (TypeScript loaders). */
async function loadPostgres(): Promise<typeof PostgresModule> {
  if (!__filename.endsWith('.js')) return import('./postgres-audit-store.js');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the built module is CommonJS
  return require('./postgres-audit-store.js') as typeof PostgresModule;
}
