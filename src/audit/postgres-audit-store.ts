import { Client, Pool } from 'pg';
import type { PoolConfig } from 'pg';
import { ConfigurationError } from '../policy/load-policy';
import type { RegistryEvent } from '../approver-keys/protocol';
import type { ControlEvent } from '../controls/protocol';
import type { GrantEvent } from '../grants/protocol';
import type { DecisionAttempt } from '../shared/temporal';
import type { AuditRecord, AuditStore, NotificationDelivery } from './audit-store';
import { isGrantEvent, isSwitchEvent } from './audit-store';
import {
  postgresSessionSchema,
  postgresSessionStore,
  postgresSessionTables,
} from '../sessions/postgres-store';

// Any fixed number serves: every store takes the same lock around its DDL, so two workers starting
// at once create the tables one after the other instead of failing on each other's catalog rows.
const schemaLockKey = 7_104_220_113;

// The shape of SQLite's timestamps (`Date.toISOString()`): UTC, milliseconds, `Z`.
const isoRecordedAt = `to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at`;

// Payloads are stored as the JSON text written (not jsonb), so a record reads back exactly as it was
// appended. `sequence` is the insertion order; `recorded_at` is the database's clock, one clock for
// every worker, cut to milliseconds like SQLite's.
const auditTables = [
  'audit_records',
  'decision_attempts',
  'registry_events',
  'notification_deliveries',
  'control_events',
  // Sessions (issue 28): their states are versions appended, never rewritten.
  ...postgresSessionTables,
];
const guardTriggers = auditTables.flatMap((table) => [
  `${table}_no_update_or_delete`,
  `${table}_no_truncate`,
]);

const schema = `
  CREATE TABLE IF NOT EXISTS audit_records (
    sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    call_id text NOT NULL,
    run_id text NOT NULL,
    tool text NOT NULL,
    caller text NOT NULL,
    session text NOT NULL,
    code text NOT NULL,
    effect text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
    record text NOT NULL,
    UNIQUE (call_id, run_id)
  );
  CREATE INDEX IF NOT EXISTS audit_records_by_session ON audit_records (session);
  CREATE INDEX IF NOT EXISTS audit_records_by_recorded_at ON audit_records (recorded_at);
  CREATE TABLE IF NOT EXISTS decision_attempts (
    sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    update_id text NOT NULL,
    source text NOT NULL,
    call_id text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
    attempt text NOT NULL,
    UNIQUE (update_id, source)
  );
  CREATE INDEX IF NOT EXISTS decision_attempts_by_call ON decision_attempts (call_id);
  CREATE TABLE IF NOT EXISTS registry_events (
    sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    update_id text NOT NULL,
    outcome text NOT NULL,
    key_id text,
    invite_id text,
    recorded_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
    event text NOT NULL,
    UNIQUE (update_id, outcome)
  );
  CREATE INDEX IF NOT EXISTS registry_events_by_key ON registry_events (key_id);
  CREATE INDEX IF NOT EXISTS registry_events_by_invite ON registry_events (invite_id);
  CREATE TABLE IF NOT EXISTS notification_deliveries (
    sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL,
    channel text NOT NULL,
    call_id text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
    delivery text NOT NULL,
    UNIQUE (event_id, channel)
  );
  CREATE INDEX IF NOT EXISTS notification_deliveries_by_call ON notification_deliveries (call_id);
  CREATE TABLE IF NOT EXISTS control_events (
    sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    change_id text NOT NULL,
    outcome text NOT NULL,
    tool text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
    event text NOT NULL,
    UNIQUE (change_id, outcome)
  );
  CREATE INDEX IF NOT EXISTS control_events_by_tool ON control_events (tool);
  ${postgresSessionSchema}
  CREATE OR REPLACE FUNCTION toolgate_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'the audit store is append-only'; END
  $$;
  ${auditTables
    .map(
      (table) => `
  CREATE OR REPLACE TRIGGER ${table}_no_update_or_delete BEFORE UPDATE OR DELETE ON ${table}
    FOR EACH ROW EXECUTE FUNCTION toolgate_audit_append_only();
  CREATE OR REPLACE TRIGGER ${table}_no_truncate BEFORE TRUNCATE ON ${table}
    FOR EACH STATEMENT EXECUTE FUNCTION toolgate_audit_append_only();`,
    )
    .join('')}
`;

/**
 * Opens a PostgreSQL audit store: what several workers on several machines share. Creates its tables
 * when missing (idempotent, serialised by an advisory lock, so workers may start together; needs
 * PostgreSQL 14 or later). Rows can be inserted only: triggers refuse updates, deletes and truncation.
 * An append retried with the same key, from any worker, writes once. Timestamps are the database's
 * clock. Rejects when the database cannot be reached or the tables cannot be created.
 */
export async function openPostgresAuditStore(input: {
  /** `postgres://user:password@host:port/database` (a `?sslmode=...` is honoured). */
  url: string;
  /** Pool options other than the URL (size, timeouts, TLS). */
  pool?: Omit<PoolConfig, 'connectionString'>;
}): Promise<AuditStore> {
  // A database that stops answering must not hold a worker forever (the audit sinks are awaited while
  // a workflow activation completes): connecting, each statement and each query are bounded, and
  // TCP keepalive notices a peer that vanished. Each can be overridden through `pool`.
  const pool = new Pool({
    connectionTimeoutMillis: 10_000,
    query_timeout: 15_000,
    statement_timeout: 10_000,
    keepAlive: true,
    ...input.pool,
    connectionString: input.url,
  });
  // An idle connection the server dropped: the pool discards it and the next query opens another.
  pool.on('error', () => undefined);
  try {
    await createSchema(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  let ended: Promise<void> | undefined;
  const inserted = async (sql: string, values: unknown[]): Promise<boolean> =>
    (await pool.query(sql, values)).rowCount === 1;
  const rows = async <Row>(sql: string, values: unknown[] = []): Promise<Row[]> =>
    (await pool.query(sql, values)).rows as Row[];
  const records = async (sql: string, values: unknown[]): Promise<AuditRecord[]> =>
    (await rows<{ record: string }>(sql, values)).map((row) => JSON.parse(row.record) as AuditRecord);
  const readRegistryEvents = async (sql: string, values: unknown[] = []) =>
    (await rows<{ event: string; recorded_at: string }>(sql, values)).map((row) => ({
      ...(JSON.parse(row.event) as RegistryEvent),
      recordedAt: row.recorded_at,
    }));
  const readControlEvents = async (sql: string, values: unknown[] = []) =>
    (await rows<{ event: string; recorded_at: string }>(sql, values)).map((row) => ({
      ...(JSON.parse(row.event) as ControlEvent | GrantEvent),
      recordedAt: row.recorded_at,
    }));
  return {
    sessions: postgresSessionStore(pool),
    append: (record) =>
      inserted(
        `INSERT INTO audit_records (call_id, run_id, tool, caller, session, code, effect, record)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (call_id, run_id) DO NOTHING`,
        [
          record.callId,
          record.runId,
          record.tool,
          record.caller,
          record.session,
          record.code,
          record.effect,
          JSON.stringify(record),
        ],
      ),
    recordsOf: (callId) =>
      records('SELECT record FROM audit_records WHERE call_id = $1 ORDER BY sequence', [callId]),
    // A negative limit means none, as in SQLite.
    recent: (options) => {
      const limit = options?.limit ?? 50;
      return records('SELECT record FROM audit_records ORDER BY sequence DESC LIMIT $1', [
        limit < 0 ? null : limit,
      ]);
    },
    recordsBetween: ({ since, until }) =>
      records(
        `SELECT record FROM audit_records WHERE recorded_at >= $1::timestamptz AND recorded_at < $2::timestamptz
         ORDER BY sequence`,
        [since, until],
      ),
    recordsOfSession: (session, options = {}) =>
      options.limit === undefined
        ? records('SELECT record FROM audit_records WHERE session = $1 ORDER BY sequence', [session])
        : records(
            'SELECT record FROM (SELECT record, sequence FROM audit_records WHERE session = $1 ORDER BY sequence DESC LIMIT $2) AS newest ORDER BY sequence',
            [session, Math.max(0, Math.floor(options.limit))],
          ),
    deniedInSession: ({ session, tool }) =>
      records(
        `SELECT record FROM audit_records WHERE session = $1 AND tool = $2 AND code = 'APPROVAL_DENIED' ORDER BY sequence`,
        [session, tool],
      ),
    deniedForEndUser: ({ caller, endUser, tenant, tool, since }) =>
      records(
        `SELECT record FROM audit_records WHERE caller = $1 AND tool = $2 AND code = 'APPROVAL_DENIED'
           AND recorded_at >= $3 AND (record::jsonb)->'context'->>'onBehalfOf' = $4
           AND coalesce((record::jsonb)->'context'->>'tenant', '') = $5 ORDER BY sequence`,
        [caller, tool, since, endUser, tenant ?? ''],
      ),
    appendDecisionAttempt: (attempt) =>
      inserted(
        `INSERT INTO decision_attempts (update_id, source, call_id, attempt)
         VALUES ($1, $2, $3, $4) ON CONFLICT (update_id, source) DO NOTHING`,
        [attempt.updateId, attempt.source, attempt.callId, JSON.stringify(attempt)],
      ),
    decisionAttemptsOf: async (callId) =>
      (
        await rows<{ attempt: string; recorded_at: string }>(
          `SELECT attempt, ${isoRecordedAt} FROM decision_attempts WHERE call_id = $1 ORDER BY sequence`,
          [callId],
        )
      ).map((row) => ({ ...(JSON.parse(row.attempt) as DecisionAttempt), recordedAt: row.recorded_at })),
    appendRegistryEvent: (event) =>
      inserted(
        `INSERT INTO registry_events (update_id, outcome, key_id, invite_id, event)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (update_id, outcome) DO NOTHING`,
        [event.updateId, event.outcome, event.keyId ?? null, event.inviteId ?? null, JSON.stringify(event)],
      ),
    registryEvents: () =>
      readRegistryEvents(`SELECT event, ${isoRecordedAt} FROM registry_events ORDER BY sequence`),
    // Refused attempts are left out in SQL: anyone may send them, so there can be many.
    acceptedRegistryEventsAbout: ({ keyId, inviteId }) =>
      readRegistryEvents(
        `SELECT event, ${isoRecordedAt} FROM registry_events
         WHERE outcome = 'accepted' AND (key_id = $1 OR invite_id = $2)
         ORDER BY sequence`,
        [keyId ?? null, inviteId ?? null],
      ),
    appendNotificationDelivery: (delivery) =>
      inserted(
        `INSERT INTO notification_deliveries (event_id, channel, call_id, delivery)
         VALUES ($1, $2, $3, $4) ON CONFLICT (event_id, channel) DO NOTHING`,
        [delivery.eventId, delivery.channel, delivery.callId, JSON.stringify(delivery)],
      ),
    notificationDeliveriesOf: async (callId) =>
      (
        await rows<{ delivery: string; recorded_at: string }>(
          `SELECT delivery, ${isoRecordedAt} FROM notification_deliveries WHERE call_id = $1 ORDER BY sequence`,
          [callId],
        )
      ).map((row) => ({
        ...(JSON.parse(row.delivery) as NotificationDelivery),
        recordedAt: row.recorded_at,
      })),
    appendControlEvent: (event) =>
      inserted(
        `INSERT INTO control_events (change_id, outcome, tool, event)
         VALUES ($1, $2, $3, $4) ON CONFLICT (change_id, outcome) DO NOTHING`,
        [event.changeId, event.outcome, event.tool, JSON.stringify(event)],
      ),
    controlEvents: async (input) =>
      (input?.tool !== undefined
        ? await readControlEvents(
            `SELECT event, ${isoRecordedAt} FROM control_events WHERE tool = $1 ORDER BY sequence`,
            [input.tool],
          )
        : await readControlEvents(`SELECT event, ${isoRecordedAt} FROM control_events ORDER BY sequence`)
      ).filter(isSwitchEvent),
    grantEvents: async (input) =>
      (
        await readControlEvents(`SELECT event, ${isoRecordedAt} FROM control_events ORDER BY sequence`)
      ).filter((event): event is GrantEvent & { recordedAt: string } => isGrantEvent(event, input?.grantId)),
    // Closing twice is harmless, as with SQLite.
    close: () => (ended ??= pool.end()),
  };
}

/** Creates the tables, indexes and triggers that are missing, in one transaction, under the lock. */
async function createSchema(pool: Pool): Promise<void> {
  // Tables and guards in place: nothing to create. Workers may then connect as a role that can only
  // INSERT and SELECT (the tables' owner, who can drop a trigger, sets them up once). A database an
  // earlier version made lacks a newer table's guards: its owner's next open (or `toolgate audit init`)
  // creates what is missing, and keeps every row already written.
  const { rows } = await pool.query<{ guards: number }>(
    `SELECT count(*)::int AS guards FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($1) AND t.tgname = ANY($2)`,
    [auditTables, guardTriggers],
  );
  if (rows[0]?.guards === guardTriggers.length) return;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [schemaLockKey]);
    await client.query(schema);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Sets a PostgreSQL audit store up as the owner of its tables, once, before any worker starts: creates
 * the tables and their guards (as `openPostgresAuditStore` would), then lets each writer role connect,
 * insert and read, and nothing else. The writers (the role of every worker's, console's and MCP
 * server's TOOLGATE_AUDIT_URL) can then neither delete a record nor drop or disable a guard: only the
 * owner can, and no toolgate process holds the owner's password. Idempotent: run it on every deploy.
 * Rejects with a `ConfigurationError` when a writer role does not exist or is the owner itself.
 */
export async function initPostgresAuditStore(input: {
  /** The owner's URL: `postgres://owner:password@host:port/database`. */
  url: string;
  /** Roles that may only insert and read. */
  writers: readonly string[];
  pool?: Omit<PoolConfig, 'connectionString'>;
}): Promise<{ database: string; owner: string; writers: string[] }> {
  const store = await openPostgresAuditStore({ url: input.url, ...(input.pool ? { pool: input.pool } : {}) });
  await store.close();
  const client = new Client({ connectionString: input.url, connectionTimeoutMillis: 10_000, ...input.pool });
  await client.connect();
  try {
    const { rows } = await client.query<{ owner: string; database: string; schema: string }>(
      'SELECT current_user AS owner, current_database() AS database, current_schema() AS schema',
    );
    const { owner, database, schema: tablesSchema } = rows[0]!;
    for (const writer of input.writers) {
      const found = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [writer]);
      if (found.rowCount !== 1) {
        throw new ConfigurationError(
          `the audit store's writer role "${writer}" does not exist: create it (CREATE ROLE ... LOGIN) before toolgate audit init`,
        );
      }
      if (writer === owner) {
        throw new ConfigurationError(
          `the writer role "${writer}" is the owner of the audit tables, who can drop their guards: give the toolgate processes a role of their own`,
        );
      }
      // A role that could still remove a guard, or make the processes write to tables of its own.
      const { rows: powers } = await client.query<{
        superuser: boolean;
        member: boolean;
        owns_database: boolean;
        creates_in: string | null;
        settings: string | null;
      }>(
        `SELECT r.rolsuper AS superuser,
                pg_has_role($1, $2, 'MEMBER') AS member,
                pg_has_role($1, d.datdba, 'MEMBER') AS owns_database,
                (SELECT string_agg(n.nspname, ', ' ORDER BY n.nspname) FROM pg_namespace n
                  WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
                    AND has_schema_privilege($1, n.oid, 'CREATE')) AS creates_in,
                (SELECT string_agg(array_to_string(s.setconfig, ', '), '; ') FROM pg_db_role_setting s
                  WHERE s.setrole = r.oid AND s.setdatabase IN (0, d.oid)) AS settings
           FROM pg_roles r, pg_database d WHERE r.rolname = $1 AND d.datname = current_database()`,
        [writer, owner],
      );
      const power = powers[0]!;
      const problem = power.superuser
        ? 'is a superuser'
        : power.member
          ? `is a member of the owner ${owner}`
          : power.owns_database
            ? 'owns the database (and so its public schema)'
            : power.creates_in
              ? `may create tables in schema(s) ${power.creates_in} (a table of its own could take the audit tables' place)`
              : power.settings
                ? `has settings of its own (${power.settings}), e.g. a search_path that leads its sessions elsewhere; reset them with ALTER ROLE ... RESET ALL`
                : undefined;
      if (problem !== undefined) {
        throw new ConfigurationError(
          `the writer role "${writer}" ${problem}: it could remove the audit store's guards or divert its records; ` +
            'give the toolgate processes a role that may only connect, insert and read',
        );
      }
    }
    await client.query('BEGIN');
    for (const writer of input.writers) {
      const role = client.escapeIdentifier(writer);
      await client.query(`GRANT CONNECT ON DATABASE ${client.escapeIdentifier(database)} TO ${role}`);
      await client.query(`GRANT USAGE ON SCHEMA ${client.escapeIdentifier(tablesSchema)} TO ${role}`);
      for (const table of auditTables) {
        // Exactly these two, whatever an earlier grant added.
        await client.query(`REVOKE ALL ON ${table} FROM ${role}`);
        await client.query(`GRANT INSERT, SELECT ON ${table} TO ${role}`);
      }
    }
    await client.query('COMMIT');
    return { database, owner, writers: [...input.writers] };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}
