import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAuditStore, openPostgresAuditStore } from 'toolgate';
// The PostgreSQL server is dev tooling in src/dev/, not part of toolgate's public entries.
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import type { StartedPostgres } from '../../src/dev/postgres';
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import { startEmbeddedPostgres } from '../../src/dev/postgres';
import type { AuditStoreBacking } from './audit-store-contract';
import { auditRecord, describeAuditStoreContract } from './audit-store-contract';

// A real PostgreSQL server for this file alone, on loopback; each test gets a database of its own.
const directory = mkdtempSync(join(tmpdir(), 'toolgate-postgres-audit-'));
let postgres: StartedPostgres | undefined;

beforeAll(async () => {
  postgres = await startEmbeddedPostgres({ directory: join(directory, 'cluster') });
});
afterAll(async () => {
  try {
    await postgres?.stop();
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

let databases = 0;

/** A new database on the server (so the tables start missing), with its URL. */
async function freshDatabase(): Promise<string> {
  if (!postgres) throw new Error('PostgreSQL did not start');
  const name = `audit_${process.pid}_${++databases}`;
  await postgres.createDatabase(name);
  return postgres.urlOf(name);
}

/** A new database; the suite's direct statements go through a connection of their own. */
async function postgresBacking(): Promise<AuditStoreBacking> {
  const url = await freshDatabase();
  let raw: Client | undefined;
  const direct = async () => {
    if (!raw) {
      raw = new Client({ connectionString: url });
      await raw.connect();
    }
    return raw;
  };
  return {
    open: () => openPostgresAuditStore({ url }),
    execute: async (sql) => {
      await (await direct()).query(sql);
    },
    recordedAtOf: async (callId) => {
      const { rows } = await (
        await direct()
      ).query<{ recorded_at: string }>(
        `SELECT to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at
         FROM audit_records WHERE call_id = $1`,
        [callId],
      );
      return rows[0]!.recorded_at;
    },
    dispose: async () => {
      await raw?.end();
    },
  };
}

describeAuditStoreContract({ name: 'PostgreSQL', backing: postgresBacking });

describe('the PostgreSQL audit store, beyond the shared contract', () => {
  it('refuses a TRUNCATE issued directly against the database', async () => {
    const url = await freshDatabase();
    const store = await openPostgresAuditStore({ url });
    const raw = new Client({ connectionString: url });
    await raw.connect();
    try {
      const record = auditRecord();
      await store.append(record);
      for (const table of [
        'audit_records',
        'decision_attempts',
        'registry_events',
        'notification_deliveries',
      ]) {
        await expect(raw.query(`TRUNCATE ${table}`)).rejects.toThrow(/append-only/);
      }
      expect(await store.recordsOf(record.callId)).toEqual([record]);
    } finally {
      await raw.end();
      await store.close();
    }
  });

  it('rejects at open when the database cannot be reached, and leaves nothing open', async () => {
    if (!postgres) throw new Error('PostgreSQL did not start');
    await expect(
      openPostgresAuditStore({
        url: postgres.urlOf('no_such_database'),
        pool: { connectionTimeoutMillis: 5_000 },
      }),
    ).rejects.toThrow(/no_such_database/);
  });
});

describe('openAuditStore with a PostgreSQL URL', () => {
  it('opens PostgreSQL when the config has auditUrl, and never touches auditPath', async () => {
    const url = await freshDatabase();
    const auditPath = join(directory, 'unused', 'audit.sqlite');
    const store = await openAuditStore({ auditPath, auditUrl: url, env: {} });
    const record = auditRecord();
    try {
      expect(await store.append(record)).toBe(true);
    } finally {
      await store.close();
    }
    expect(existsSync(auditPath)).toBe(false);
    const direct = await openPostgresAuditStore({ url });
    expect(await direct.recordsOf(record.callId)).toEqual([record]);
    await direct.close();
  });

  it('takes TOOLGATE_AUDIT_URL over the config: the variable wins', async () => {
    const url = await freshDatabase();
    const store = await openAuditStore({
      auditPath: join(directory, 'unused-too', 'audit.sqlite'),
      auditUrl: 'postgres://nobody@127.0.0.1:1/nothing',
      env: { TOOLGATE_AUDIT_URL: url },
    });
    const record = auditRecord();
    try {
      expect(await store.append(record)).toBe(true);
    } finally {
      await store.close();
    }
    const direct = await openPostgresAuditStore({ url });
    expect(await direct.recordsOf(record.callId)).toEqual([record]);
    await direct.close();
  });
});
