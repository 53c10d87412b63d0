// docker-compose.yml's one-shot jobs, run for real without Docker: deploy/temporal/setup.sh (the
// admin-tools image's script) against a real PostgreSQL with the server's own schema tool and the
// Temporal CLI, then `toolgate audit init` (the audit-schema job), then the Temporal server on the
// databases the script made. Starts from an earlier deployment's layout, where the processes' role owned
// the audit tables, and ends with that role able to insert and read only. `npm run test:cluster`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { Client } from 'pg';
import { openPostgresAuditStore, runCli } from 'toolgate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRecord } from '../audit/audit-store-contract';
// The cluster's infrastructure is test tooling (test/support/), not part of toolgate's public entries.
import type { StartedPostgres } from '../support/postgres';
import { startEmbeddedPostgres } from '../support/postgres';
import type { TemporalServer, TemporalServerBinaries } from '../support/temporal-server';
import { resolveTemporalServerBinaries, startTemporalServer } from '../support/temporal-server';

const projectRoot = resolve(__dirname, '..', '..');
const script = join(projectRoot, 'deploy', 'temporal', 'setup.sh');
const log = (line: string): void => {
  process.stderr.write(`[compose-setup] ${line}\n`);
};
// The roles and database of deploy/audit-owner.env.example and deploy/audit.env.example.
const owner = { role: 'toolgate_audit_owner', password: 'owner-secret.1' };
const writer = { role: 'toolgate_audit', password: 'writer-secret.1' };
const auditDatabase = 'toolgate_audit';

const cleanups: (() => unknown)[] = [];
let directory: string;
let postgres: StartedPostgres;
let binaries: TemporalServerBinaries;
let server: TemporalServer | undefined;
const urlAs = (who: { role: string; password: string }) =>
  `postgres://${who.role}:${who.password}@127.0.0.1:${postgres.port}/${auditDatabase}`;

/** Runs setup.sh with the env the compose file gives its job, the schema tool and the CLI on PATH. */
function setup(command: 'schema' | 'namespace', env: Record<string, string>) {
  const run = spawnSync('sh', [script, command], {
    env: {
      PATH: `${dirname(binaries.sqlToolPath)}:${dirname(temporalCli())}:${process.env.PATH ?? ''}`,
      HOME: directory,
      ...env,
    },
    encoding: 'utf8',
    timeout: 240_000,
  });
  log(`setup.sh ${command} exited ${run.status}\n${run.stdout}${run.stderr}`);
  return run;
}

function temporalCli(): string {
  return process.env.TEMPORAL_CLI ?? join(projectRoot, '.toolgate', 'bin', 'temporal');
}

const schemaEnvironment = () => ({
  POSTGRES_SEEDS: '127.0.0.1',
  DB_PORT: String(postgres.port),
  POSTGRES_USER: postgres.user,
  POSTGRES_PASSWORD: postgres.password,
  TEMPORAL_SCHEMA_DIR: binaries.postgresSchemaDirectory,
  TOOLGATE_AUDIT_OWNER_URL: urlAs(owner),
  TOOLGATE_AUDIT_URL: urlAs(writer),
});

beforeAll(async () => {
  if (spawnSync('psql', ['--version']).status !== 0) {
    throw new Error("setup.sh talks to PostgreSQL through psql: install Debian's postgresql-client.");
  }
  directory = mkdtempSync(join(tmpdir(), 'toolgate-compose-setup-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  binaries = await resolveTemporalServerBinaries({ projectRoot, log });
  postgres = await startEmbeddedPostgres({ directory: join(directory, 'postgres') });
  cleanups.push(() => postgres.stop());
});

afterAll(async () => {
  await server?.stop();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe("docker-compose.yml's set-up jobs, against a real PostgreSQL and Temporal server", () => {
  const earlier = auditRecord();

  it('refuses an audit URL whose role is the owner, naming the file to fix', () => {
    const refused = setup('schema', { ...schemaEnvironment(), TOOLGATE_AUDIT_URL: urlAs({ ...owner }) });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      "schema: TOOLGATE_AUDIT_URL (deploy/audit.env): role toolgate_audit_owner is the owner's",
    );
  });

  it("takes over an earlier deployment's audit tables for the owner, keeps their records, and is idempotent", async () => {
    // The earlier layout: the processes' role owned the database and made the tables.
    const superuser = new Client({ connectionString: postgres.url });
    await superuser.connect();
    try {
      await superuser.query(`CREATE ROLE ${writer.role} LOGIN PASSWORD '${writer.password}'`);
      await superuser.query(`CREATE DATABASE ${auditDatabase} OWNER ${writer.role}`);
    } finally {
      await superuser.end();
    }
    const before = await openPostgresAuditStore({ url: urlAs(writer) });
    expect(await before.append(earlier)).toBe(true);
    await before.close();

    for (const round of [1, 2]) {
      const run = setup('schema', schemaEnvironment());
      expect([round, run.status]).toEqual([round, 0]);
      expect(run.stdout).toContain(
        `schema: database ${auditDatabase} owned by ${owner.role}; ${writer.role} may connect`,
      );
      expect(run.stdout).toContain('schema: done');
    }
  });

  it('`toolgate audit init` (the audit-schema job) leaves the processes insert and read only', async () => {
    const saved = { owner: process.env.TOOLGATE_AUDIT_OWNER_URL, writer: process.env.TOOLGATE_AUDIT_URL };
    process.env.TOOLGATE_AUDIT_OWNER_URL = urlAs(owner);
    process.env.TOOLGATE_AUDIT_URL = urlAs(writer);
    let out = '';
    try {
      expect(await runCli(['audit', 'init'], { out: (text) => (out += text), error: log })).toBe(0);
    } finally {
      for (const [name, value] of [
        ['TOOLGATE_AUDIT_OWNER_URL', saved.owner],
        ['TOOLGATE_AUDIT_URL', saved.writer],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(out).toContain(
      `tables and guards owned by ${owner.role}; ${writer.role} may insert and read only`,
    );

    const store = await openPostgresAuditStore({ url: urlAs(writer) });
    const next = auditRecord();
    try {
      expect(await store.recordsOf(earlier.callId)).toEqual([earlier]);
      expect(await store.append(next)).toBe(true);
    } finally {
      await store.close();
    }
    const app = new Client({ connectionString: urlAs(writer) });
    await app.connect();
    try {
      await expect(app.query('DELETE FROM audit_records')).rejects.toThrow(/permission denied/);
      await expect(
        app.query('ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_or_delete'),
      ).rejects.toThrow(/must be owner/);
      await expect(app.query('DROP FUNCTION toolgate_audit_append_only() CASCADE')).rejects.toThrow(
        /must be owner/,
      );
      const { rows } = await app.query<{ owner: string }>(
        `SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class
          WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'`,
      );
      expect(rows).toEqual([{ owner: owner.role }]);
      expect((await app.query('SELECT count(*)::int AS n FROM audit_records')).rows).toEqual([{ n: 2 }]);
    } finally {
      await app.end();
    }
    // Temporal's databases: no role but the superuser may connect.
    const outsider = new Client({
      connectionString: `postgres://${writer.role}:${writer.password}@127.0.0.1:${postgres.port}/temporal`,
    });
    await expect(outsider.connect()).rejects.toThrow(/permission denied for database "temporal"/);
  });

  it('the server runs on the databases the schema job made, and the namespace job registers its namespace', async () => {
    server = await startTemporalServer({
      binaries,
      directory: join(directory, 'temporal'),
      postgres: { host: '127.0.0.1', port: postgres.port, user: postgres.user, password: postgres.password },
      log,
    });
    for (const round of [1, 2]) {
      const run = setup('namespace', {
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_NAMESPACE: 'orders-prod',
        TEMPORAL_NAMESPACE_RETENTION: '240h',
      });
      expect([round, run.status]).toEqual([round, 0]);
      expect(run.stdout).toContain('namespace: done');
    }
    const connection = await Connection.connect({ address: server.address });
    try {
      const described = await connection.workflowService.describeNamespace({ namespace: 'orders-prod' });
      expect(Number(described.config?.workflowExecutionRetentionTtl?.seconds)).toBe(240 * 3600);
      const listed = await connection.operatorService.listSearchAttributes({ namespace: 'orders-prod' });
      expect(Object.keys(listed.customAttributes ?? {}).sort()).toEqual(
        ['ApprovalState', 'Caller', 'RiskLevel', 'SessionId', 'ToolCode', 'ToolName'].sort(),
      );
    } finally {
      await connection.close();
    }
  });
});
