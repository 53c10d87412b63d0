import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAuditStore, openPostgresAuditStore } from 'toolgate';
import { runCliCapturing } from '../support/cli-runner';
// The PostgreSQL server is test tooling (test/support/), not part of toolgate's public entries.
import type { StartedPostgres } from '../support/postgres';
import { startEmbeddedPostgres } from '../support/postgres';
import type { AuditStoreBacking } from './audit-store-contract';
import { auditRecord, controlEvent, describeAuditStoreContract } from './audit-store-contract';

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
        'control_events',
      ]) {
        await expect(raw.query(`TRUNCATE ${table}`)).rejects.toThrow(/append-only/);
      }
      expect(await store.recordsOf(record.callId)).toEqual([record]);
    } finally {
      await raw.end();
      await store.close();
    }
  });

  it("is set up by `toolgate audit init` as the owner, so the processes' role may only insert and read", async () => {
    if (!postgres) throw new Error('PostgreSQL did not start');
    const suffix = `${process.pid}_${++databases}`;
    const [owner, writer, database] = [
      `audit_owner_${suffix}`,
      `audit_app_${suffix}`,
      `audit_init_${suffix}`,
    ];
    const superuser = new Client({ connectionString: postgres.urlOf('postgres') });
    await superuser.connect();
    const saved = {
      TOOLGATE_AUDIT_OWNER_URL: process.env.TOOLGATE_AUDIT_OWNER_URL,
      TOOLGATE_AUDIT_URL: process.env.TOOLGATE_AUDIT_URL,
    };
    const as = (role: string) => postgres!.urlOf(database).replace(/\/\/[^@]+@/, `//${role}:${role}-secret@`);
    try {
      await superuser.query(`CREATE ROLE ${owner} LOGIN PASSWORD '${owner}-secret'`);
      await superuser.query(`CREATE ROLE ${writer} LOGIN PASSWORD '${writer}-secret'`);
      await superuser.query(`CREATE DATABASE ${database} OWNER ${owner}`);

      // Without the owner's URL, and with the owner as its own writer: refused, nothing created.
      delete process.env.TOOLGATE_AUDIT_OWNER_URL;
      process.env.TOOLGATE_AUDIT_URL = as(writer);
      const unset = await runCliCapturing(['audit', 'init']);
      expect([unset.code, unset.error]).toEqual([
        2,
        expect.stringContaining('AUDIT_INIT_REFUSED: set TOOLGATE_AUDIT_OWNER_URL'),
      ]);
      process.env.TOOLGATE_AUDIT_OWNER_URL = as(owner);
      const itself = await runCliCapturing(['audit', 'init', '--writer', owner]);
      expect([itself.code, itself.error]).toEqual([
        2,
        expect.stringContaining('is the owner of the audit tables'),
      ]);
      const missing = await runCliCapturing(['audit', 'init', '--writer', 'nobody_here']);
      expect([missing.code, missing.error]).toEqual([
        2,
        expect.stringContaining('"nobody_here" does not exist'),
      ]);

      // Twice: a deploy runs it every time.
      for (const run of [1, 2]) {
        const done = await runCliCapturing(['audit', 'init']);
        expect([run, done.code, done.out]).toEqual([
          run,
          0,
          `audit store ready in database ${database}: tables and guards owned by ${owner}; ${writer} may insert and read only\n`,
        ]);
      }

      const store = await openPostgresAuditStore({ url: as(writer) });
      const record = auditRecord();
      const change = controlEvent();
      try {
        expect(await store.append(record)).toBe(true);
        expect(await store.append(record)).toBe(false);
        expect(await store.recordsOf(record.callId)).toEqual([record]);
        expect(await store.appendControlEvent(change)).toBe(true);
        expect(await store.appendControlEvent(change)).toBe(false);
        expect(await store.controlEvents()).toMatchObject([change]);
      } finally {
        await store.close();
      }
      const app = new Client({ connectionString: as(writer) });
      await app.connect();
      try {
        await expect(app.query('DELETE FROM audit_records')).rejects.toThrow(/permission denied/);
        await expect(app.query('UPDATE registry_events SET event = event')).rejects.toThrow(
          /permission denied/,
        );
        await expect(app.query('DELETE FROM control_events')).rejects.toThrow(/permission denied/);
        await expect(app.query('UPDATE control_events SET event = event')).rejects.toThrow(
          /permission denied/,
        );
        await expect(
          app.query('ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_or_delete'),
        ).rejects.toThrow(/must be owner/);
        await expect(app.query('DROP TABLE decision_attempts')).rejects.toThrow(/must be owner/);
        await expect(app.query('CREATE TABLE audit_records_copy (x int)')).rejects.toThrow(
          /permission denied/,
        );
        expect((await app.query('SELECT count(*)::int AS n FROM audit_records')).rows).toEqual([{ n: 1 }]);
        const { rows } = await app.query<{ owner: string }>(
          'SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relname = ANY($1)',
          [
            [
              'audit_records',
              'decision_attempts',
              'registry_events',
              'notification_deliveries',
              'control_events',
            ],
          ],
        );
        expect(rows).toEqual([{ owner }]);
      } finally {
        await app.end();
      }
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await superuser.end();
    }
  });

  it('upgrades a database an earlier `toolgate audit init` set up: the writer cannot make control_events, the next init does', async () => {
    if (!postgres) throw new Error('PostgreSQL did not start');
    const suffix = `${process.pid}_${++databases}`;
    const [owner, writer, database] = [
      `audit_owner_${suffix}`,
      `audit_app_${suffix}`,
      `audit_upgrade_${suffix}`,
    ];
    const superuser = new Client({ connectionString: postgres.urlOf('postgres') });
    await superuser.connect();
    const saved = {
      TOOLGATE_AUDIT_OWNER_URL: process.env.TOOLGATE_AUDIT_OWNER_URL,
      TOOLGATE_AUDIT_URL: process.env.TOOLGATE_AUDIT_URL,
    };
    const as = (role: string) => postgres!.urlOf(database).replace(/\/\/[^@]+@/, `//${role}:${role}-secret@`);
    try {
      await superuser.query(`CREATE ROLE ${owner} LOGIN PASSWORD '${owner}-secret'`);
      await superuser.query(`CREATE ROLE ${writer} LOGIN PASSWORD '${writer}-secret'`);
      await superuser.query(`CREATE DATABASE ${database} OWNER ${owner}`);
      process.env.TOOLGATE_AUDIT_OWNER_URL = as(owner);
      process.env.TOOLGATE_AUDIT_URL = as(writer);
      expect((await runCliCapturing(['audit', 'init'])).code).toBe(0);
      const record = auditRecord();
      const before = await openPostgresAuditStore({ url: as(writer) });
      try {
        expect(await before.append(record)).toBe(true);
      } finally {
        await before.close();
      }
      // What an earlier version's init left: four tables and their guards, granted; no control_events.
      const asOwner = new Client({ connectionString: as(owner) });
      await asOwner.connect();
      try {
        await asOwner.query('DROP TABLE control_events');
      } finally {
        await asOwner.end();
      }

      // The writer may not create a table nor a guard: it cannot open until the owner upgrades.
      await expect(openPostgresAuditStore({ url: as(writer) })).rejects.toThrow(
        /permission denied|must be owner/,
      );
      const done = await runCliCapturing(['audit', 'init']);
      expect([done.code, done.error]).toEqual([0, '']);

      const store = await openPostgresAuditStore({ url: as(writer) });
      const change = controlEvent();
      try {
        expect(await store.recordsOf(record.callId)).toEqual([record]);
        expect(await store.appendControlEvent(change)).toBe(true);
        expect(await store.controlEvents({ tool: change.tool })).toMatchObject([change]);
      } finally {
        await store.close();
      }
      const app = new Client({ connectionString: as(writer) });
      await app.connect();
      try {
        await expect(app.query('DELETE FROM control_events')).rejects.toThrow(/permission denied/);
        await expect(
          app.query('ALTER TABLE control_events DISABLE TRIGGER control_events_no_update_or_delete'),
        ).rejects.toThrow(/must be owner/);
        const { rows } = await app.query<{ owner: string }>(
          "SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relname = 'control_events'",
        );
        expect(rows).toEqual([{ owner }]);
      } finally {
        await app.end();
      }
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await superuser.end();
    }
  });

  it('runs as a role that may only insert and read once the owner set the tables up: it cannot drop a guard or delete', async () => {
    const url = await freshDatabase();
    const owner = await openPostgresAuditStore({ url });
    await owner.close();
    const raw = new Client({ connectionString: url });
    await raw.connect();
    const role = `audit_writer_${process.pid}_${databases}`;
    try {
      await raw.query(`CREATE ROLE ${role} LOGIN PASSWORD 'writer'`);
      await raw.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
      await raw.query(`GRANT INSERT, SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);
      const writerUrl = url.replace(/\/\/[^@]+@/, `//${role}:writer@`);
      const writer = await openPostgresAuditStore({ url: writerUrl });
      const record = auditRecord();
      try {
        expect(await writer.append(record)).toBe(true);
        expect(await writer.append(record)).toBe(false);
        expect(await writer.recordsOf(record.callId)).toEqual([record]);
      } finally {
        await writer.close();
      }
      const asWriter = new Client({ connectionString: writerUrl });
      await asWriter.connect();
      try {
        await expect(
          asWriter.query('ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_or_delete'),
        ).rejects.toThrow(/must be owner/);
        await expect(asWriter.query('DELETE FROM audit_records')).rejects.toThrow(/permission denied/);
        await expect(
          asWriter.query(
            'CREATE OR REPLACE FUNCTION toolgate_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$',
          ),
        ).rejects.toThrow(/must be owner|permission denied/);
      } finally {
        await asWriter.end();
      }
    } finally {
      await raw.end();
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

describe('the PostgreSQL audit store when the database stops answering', () => {
  /** A TCP relay to PostgreSQL that can start swallowing every byte both ways (a partition, a hung host). */
  async function swallowingRelay(targetPort: number) {
    let swallowing = false;
    const sockets: Socket[] = [];
    const relay = createServer((client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      sockets.push(client, upstream);
      client.on('data', (chunk) => swallowing || upstream.write(chunk));
      upstream.on('data', (chunk) => swallowing || client.write(chunk));
      client.on('error', () => undefined);
      upstream.on('error', () => undefined);
    });
    await new Promise<void>((listening) => relay.listen(0, '127.0.0.1', listening));
    return {
      port: (relay.address() as AddressInfo).port,
      swallow: () => (swallowing = true),
      close: () => {
        for (const socket of sockets) socket.destroy();
        relay.close();
      },
    };
  }

  it('rejects an append and a new store within its timeouts, never holding a worker forever', async () => {
    const url = await freshDatabase();
    const relay = await swallowingRelay(postgres!.port);
    const relayed = url.replace(`:${postgres!.port}/`, `:${relay.port}/`);
    // The defaults are 10 s to connect and 15 s per query; a second each keeps the test short.
    const pool = { connectionTimeoutMillis: 1_000, query_timeout: 1_000 };
    const store = await openPostgresAuditStore({ url: relayed, pool });
    try {
      expect(await store.append(auditRecord({ callId: 'tc-before-the-partition' }))).toBe(true);
      relay.swallow();
      const started = Date.now();
      await expect(store.append(auditRecord({ callId: 'tc-during-the-partition' }))).rejects.toThrow(
        /timeout/i,
      );
      await expect(openPostgresAuditStore({ url: relayed, pool })).rejects.toThrow(/timeout/i);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      relay.close();
      await store.close();
    }
    // Nothing was written during the partition.
    const direct = await openPostgresAuditStore({ url });
    expect(await direct.recordsOf('tc-during-the-partition')).toEqual([]);
    expect(await direct.recordsOf('tc-before-the-partition')).toHaveLength(1);
    await direct.close();
  }, 30_000);
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
