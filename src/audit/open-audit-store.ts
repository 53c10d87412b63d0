import { existsSync } from 'node:fs';
import { ConfigurationError } from '../policy/load-policy';
import { openSqliteAuditStore } from './audit-store';
import type { AuditStore } from './audit-store';
import type { PoolConfig } from 'pg';

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
 * An audit store in PostgreSQL (see `postgres-audit-store.ts`). Its driver loads on the first call, so a
 * worker on SQLite never holds it.
 */
export async function openPostgresAuditStore(input: {
  /** `postgres://user:password@host:port/database` (a `?sslmode=...` is honoured). */
  url: string;
  /** Pool options other than the URL (size, timeouts, TLS). */
  pool?: Omit<PoolConfig, 'connectionString'>;
}): Promise<AuditStore> {
  const postgres = await import('./postgres-audit-store.js');
  return postgres.openPostgresAuditStore(input);
}
