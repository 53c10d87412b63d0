import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Client as PgClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresAuditStore } from 'toolgate';
import { auditRecord } from '../audit/audit-store-contract';
import { runCliCapturing } from '../support/cli-runner';

// The PostgreSQL server and the Temporal schema tool are test tooling (test/support/), not public entries.
import type { StartedPostgres } from '../support/postgres';
import { startEmbeddedPostgres } from '../support/postgres';
import { resolveTemporalServerBinaries } from '../support/temporal-server';

// Attacks on the PostgreSQL audit store's set-up, `toolgate audit init` and deploy/temporal/setup.sh,
// from a review: each test failed while the defect it names was there, and guards its fix. In the
// cluster suite, since setup.sh needs the server's schema tool.
describe('`toolgate audit init` and setup.sh, attacked', () => {
  const directory = mkdtempSync(join(tmpdir(), 'toolgate-audit-review-'));
  let postgres: StartedPostgres;
  let databases = 0;

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

  const secretOf = (role: string) => `${role}-secret`;
  const urlAs = (database: string, role: string) =>
    postgres.urlOf(database).replace(/\/\/[^@]+@/, `//${role}:${secretOf(role)}@`);

  /** Runs `sql` on `database` as the superuser, or as `role`; answers the rows or the error's message. */
  async function query(input: { database: string; sql: string; role?: string }): Promise<unknown> {
    const url = input.role ? urlAs(input.database, input.role) : postgres.urlOf(input.database);
    const client = new PgClient({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(input.sql)).rows;
    } catch (error) {
      return `error: ${(error as Error).message}`;
    } finally {
      await client.end();
    }
  }

  /** Fresh owner and writer roles (login, with their passwords) and a database name for one test. */
  async function freshRoles(): Promise<{ owner: string; writer: string; database: string }> {
    const suffix = `${process.pid}_${++databases}`;
    const names = { owner: `rv_owner_${suffix}`, writer: `rv_app_${suffix}`, database: `rv_audit_${suffix}` };
    for (const role of [names.owner, names.writer]) {
      await query({ database: 'postgres', sql: `CREATE ROLE ${role} LOGIN PASSWORD '${secretOf(role)}'` });
    }
    return names;
  }

  /** `toolgate audit init` as the owner, the writer named by TOOLGATE_AUDIT_URL. */
  async function auditInit(input: { database: string; owner: string; writer: string }) {
    const saved = {
      TOOLGATE_AUDIT_OWNER_URL: process.env.TOOLGATE_AUDIT_OWNER_URL,
      TOOLGATE_AUDIT_URL: process.env.TOOLGATE_AUDIT_URL,
    };
    process.env.TOOLGATE_AUDIT_OWNER_URL = urlAs(input.database, input.owner);
    process.env.TOOLGATE_AUDIT_URL = urlAs(input.database, input.writer);
    try {
      return await runCliCapturing(['audit', 'init']);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  }

  /**
   * Whether the writer, after `audit init` said it "may insert and read only", can still remove a
   * guard or the tables: `refused` (init said no), `powerless`, or what it managed to do.
   */
  async function writerPowers(input: { database: string; owner: string; writer: string }): Promise<string> {
    const init = await auditInit(input);
    if (init.code !== 0) return 'refused';
    const as = { database: input.database, role: input.writer };
    const disabled = await query({
      ...as,
      sql: 'ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_or_delete',
    });
    if (!String(disabled).startsWith('error')) return 'disabled a guard';
    const dropped = await query({ ...as, sql: 'DROP SCHEMA public CASCADE' });
    if (!String(dropped).startsWith('error')) return 'dropped every audit table';
    return 'powerless';
  }

  // The defect this once reproduced: audit init accepts writer roles that can still drop the guards (a member of the owner, a superuser, the database owner).
  it('refuses in audit init writer roles that could drop the guards (a member of the owner, a superuser, the database owner)', async () => {
    const outcomes: Record<string, string> = {};

    const member = await freshRoles();
    await query({ database: 'postgres', sql: `CREATE DATABASE ${member.database} OWNER ${member.owner}` });
    await query({ database: 'postgres', sql: `GRANT ${member.owner} TO ${member.writer}` });
    outcomes.memberOfOwner = await writerPowers(member);

    const superuser = await freshRoles();
    await query({
      database: 'postgres',
      sql: `CREATE DATABASE ${superuser.database} OWNER ${superuser.owner}`,
    });
    await query({ database: 'postgres', sql: `ALTER ROLE ${superuser.writer} SUPERUSER` });
    outcomes.superuser = await writerPowers(superuser);

    // The processes' role owns the database (so its public schema); the owner was let create there.
    const databaseOwner = await freshRoles();
    await query({
      database: 'postgres',
      sql: `CREATE DATABASE ${databaseOwner.database} OWNER ${databaseOwner.writer}`,
    });
    await query({
      database: databaseOwner.database,
      role: databaseOwner.writer,
      sql: `GRANT CREATE ON SCHEMA public TO ${databaseOwner.owner}`,
    });
    outcomes.databaseOwner = await writerPowers(databaseOwner);

    const safe = (outcome: string | undefined) => outcome === 'refused' || outcome === 'powerless';
    expect(
      Object.entries(outcomes).filter(([, outcome]) => !safe(outcome)),
      'refused by audit init, or powerless after it',
    ).toEqual([]);
  });

  // The defect this once reproduced: a schema and search_path the earlier deployment's role planted survive setup.sh and audit init, so the workers' records land in tables that role can empty.
  it("clears a schema and search_path an earlier deployment's role planted, so the workers' records never land in tables that role can empty", async () => {
    const projectRoot = resolve(__dirname, '..', '..');
    const binaries = await resolveTemporalServerBinaries({ projectRoot, log: () => undefined });
    const { owner, writer, database } = await freshRoles();
    // The earlier layout (as in the cluster test): the processes' role owns the database and the tables.
    await query({ database: 'postgres', sql: `CREATE DATABASE ${database} OWNER ${writer}` });
    const earlier = await openPostgresAuditStore({ url: urlAs(database, writer) });
    await earlier.close();
    // What that role (compromised before the upgrade) leaves behind: a schema anyone may write in,
    // first on its own search_path.
    for (const sql of [
      'CREATE SCHEMA shadow',
      'GRANT ALL ON SCHEMA shadow TO PUBLIC',
      'ALTER ROLE CURRENT_USER SET search_path = shadow, public',
    ]) {
      expect(await query({ database, role: writer, sql })).toEqual([]);
    }

    // docker-compose's temporal-schema job, then its audit-schema job.
    const setup = spawnSync('sh', [join(projectRoot, 'deploy', 'temporal', 'setup.sh'), 'schema'], {
      env: {
        PATH: `${dirname(binaries.sqlToolPath)}:${process.env.PATH ?? ''}`,
        HOME: directory,
        POSTGRES_SEEDS: '127.0.0.1',
        DB_PORT: String(postgres.port),
        POSTGRES_USER: postgres.user,
        POSTGRES_PASSWORD: postgres.password,
        DBNAME: `${database}_temporal`,
        VISIBILITY_DBNAME: `${database}_visibility`,
        TEMPORAL_SCHEMA_DIR: binaries.postgresSchemaDirectory,
        TOOLGATE_AUDIT_OWNER_URL: urlAs(database, owner),
        TOOLGATE_AUDIT_URL: urlAs(database, writer),
      },
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect(setup.status, setup.stderr.slice(-2_000)).toBe(0);
    expect((await auditInit({ database, owner, writer })).code).toBe(0);

    // A worker after the upgrade, as the processes' role, appends one record.
    const store = await openPostgresAuditStore({ url: urlAs(database, writer) });
    const record = auditRecord();
    try {
      expect(await store.append(record)).toBe(true);
    } finally {
      await store.close();
    }
    // It must be in the owner's guarded table, out of the processes' role's reach.
    expect(
      await query({
        database,
        sql: `SELECT count(*)::int AS n FROM public.audit_records WHERE call_id = '${record.callId}'`,
      }),
    ).toEqual([{ n: 1 }]);
  }, 300_000);
});
