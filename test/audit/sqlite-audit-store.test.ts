import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigurationError, openAuditStore, openSqliteAuditStore } from 'toolgate';
import type { AuditStoreBacking } from './audit-store-contract';
import { auditRecord, describeAuditStoreContract } from './audit-store-contract';

const directory = mkdtempSync(join(tmpdir(), 'toolgate-sqlite-audit-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

let databases = 0;

/** A new SQLite file; the suite's direct statements go through a connection of their own. */
async function sqliteBacking(): Promise<AuditStoreBacking> {
  const path = join(directory, `audit-${++databases}.sqlite`);
  let raw: Database.Database | undefined;
  const direct = () => (raw ??= new Database(path));
  return {
    open: async () => openSqliteAuditStore({ path }),
    execute: async (sql) => {
      direct().exec(sql);
    },
    recordedAtOf: async (callId) =>
      (
        direct().prepare('SELECT recorded_at FROM audit_records WHERE call_id = ?').get(callId) as {
          recorded_at: string;
        }
      ).recorded_at,
    dispose: async () => {
      raw?.close();
    },
  };
}

describeAuditStoreContract({ name: 'SQLite', backing: sqliteBacking });

describe('openAuditStore without a PostgreSQL URL', () => {
  it('opens the SQLite store at auditPath, creating it, when neither auditUrl nor TOOLGATE_AUDIT_URL is set', async () => {
    const auditPath = join(directory, 'chosen', 'audit.sqlite');
    const store = await openAuditStore({ auditPath, env: {} });
    try {
      const record = auditRecord();
      expect(await store.append(record)).toBe(true);
      expect(existsSync(auditPath)).toBe(true);
    } finally {
      await store.close();
    }
    const reopened = openSqliteAuditStore({ path: auditPath });
    expect(await reopened.recent()).toHaveLength(1);
    await reopened.close();
  });

  it('refuses a URL that is not PostgreSQL, naming where it came from', async () => {
    await expect(
      openAuditStore({ auditPath: ':memory:', env: { TOOLGATE_AUDIT_URL: 'mysql://audit@db/toolgate' } }),
    ).rejects.toThrow(/TOOLGATE_AUDIT_URL: expected a PostgreSQL URL/);
    const fromConfig = openAuditStore({
      auditPath: ':memory:',
      auditUrl: 'sqlite:./audit.sqlite',
      source: '/project/toolgate.config.ts',
      env: {},
    });
    await expect(fromConfig).rejects.toBeInstanceOf(ConfigurationError);
    await expect(fromConfig).rejects.toThrow('config file /project/toolgate.config.ts: auditUrl');
  });
});
