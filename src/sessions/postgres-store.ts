/**
 * The session store inside a PostgreSQL audit store (issue 28): what several workers on several
 * machines share. Each change is one transaction that takes the session's advisory lock, reads its
 * latest state, decides by `sessionChanges` and appends the next version, so two workers never decide
 * on the same state; the tables are append-only like the audit's, so a worker's role inserts and reads
 * only. The primary keys are the last guard: a version appended twice fails the transaction.
 */
import type { Pool, PoolClient } from 'pg';
import type { SessionState } from './rules';
import { emptySessionState, revivedSessionState } from './rules';
import type { SessionDecision, SessionNeeds, SessionReads, SessionStore, SessionWrite } from './store';
import { sessionStoreOver } from './store';

/** The session tables, in PostgreSQL's dialect (guards and grants come with the audit's tables). */
export const postgresSessionSchema = `
  CREATE TABLE IF NOT EXISTS session_states (
    session TEXT NOT NULL,
    version INTEGER NOT NULL,
    caller TEXT,
    closed_at TEXT,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    state TEXT NOT NULL,
    PRIMARY KEY (session, version)
  );
  CREATE INDEX IF NOT EXISTS session_states_by_recorded_at ON session_states (recorded_at);
  CREATE INDEX IF NOT EXISTS session_states_by_closed_at ON session_states (closed_at);
  CREATE TABLE IF NOT EXISTS session_admissions (
    session TEXT NOT NULL,
    proposal_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    admission TEXT NOT NULL,
    PRIMARY KEY (session, proposal_id)
  );
  CREATE TABLE IF NOT EXISTS session_outcomes (
    call_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    session TEXT NOT NULL,
    code TEXT NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (call_id, run_id)
  );
`;

/** The session tables, guarded append-only and granted like the audit's. */
export const postgresSessionTables = ['session_states', 'session_admissions', 'session_outcomes'];

/** The advisory lock class of sessions (the schema's lock is a single key, so they never meet). */
const sessionLockClass = 7_104;

/** The session store on the audit store's pool. */
export function postgresSessionStore(pool: Pool): SessionStore {
  const load = async (client: Pool | PoolClient, session: string) => {
    const { rows } = await client.query<{ version: number; state: string }>(
      'SELECT version, state FROM session_states WHERE session = $1 ORDER BY version DESC LIMIT 1',
      [session],
    );
    const row = rows[0];
    return row
      ? { version: row.version, state: revivedSessionState(JSON.parse(row.state) as SessionState) }
      : { version: 0, state: emptySessionState() };
  };
  const write = async (client: PoolClient, row: SessionWrite): Promise<void> => {
    switch (row.table) {
      case 'state':
        await client.query(
          'INSERT INTO session_states (session, version, caller, closed_at, state) VALUES ($1, $2, $3, $4, $5)',
          [
            row.session,
            row.version,
            row.state.caller ?? null,
            row.state.closedAt ?? null,
            JSON.stringify(row.state),
          ],
        );
        return;
      case 'admission':
        await client.query(
          'INSERT INTO session_admissions (session, proposal_id, call_id, admission) VALUES ($1, $2, $3, $4)',
          [row.session, row.proposalId, row.callId, JSON.stringify(row.admission)],
        );
        return;
      case 'outcome':
        await client.query(
          'INSERT INTO session_outcomes (call_id, run_id, session, code) VALUES ($1, $2, $3, $4)',
          [row.callId, row.runId, row.session, row.code],
        );
        return;
    }
  };
  const transact = async <T>(
    needs: SessionNeeds,
    decide: (reads: SessionReads, now: number) => SessionDecision<T>,
  ): Promise<T> => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [sessionLockClass, needs.session]);
      const recorded =
        needs.proposalId !== undefined
          ? (
              await client.query<{ call_id: string; admission: string }>(
                'SELECT call_id, admission FROM session_admissions WHERE session = $1 AND proposal_id = $2',
                [needs.session, needs.proposalId],
              )
            ).rows[0]
          : undefined;
      const outcomeSeen = needs.outcome
        ? (
            await client.query('SELECT 1 FROM session_outcomes WHERE call_id = $1 AND run_id = $2', [
              needs.outcome.callId,
              needs.outcome.runId,
            ])
          ).rowCount === 1
        : undefined;
      const reads: SessionReads = {
        current: await load(client, needs.session),
        ...(recorded ? { recorded: { callId: recorded.call_id, admission: recorded.admission } } : {}),
        ...(outcomeSeen !== undefined ? { outcomeSeen } : {}),
      };
      const decided = decide(reads, Date.now());
      for (const row of decided.writes) await write(client, row);
      await client.query('COMMIT');
      return decided.answer;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };
  const latest = `SELECT DISTINCT ON (session) session, state, recorded_at, closed_at FROM session_states
    ORDER BY session, version DESC`;
  const rowsOf = async (sql: string, values: unknown[]) =>
    (await pool.query<{ session: string; state: string }>(sql, values)).rows;
  return sessionStoreOver({
    transact,
    latest: (session) => load(pool, session),
    recent: (limit) =>
      rowsOf(`SELECT session, state FROM (${latest}) latest ORDER BY recorded_at DESC LIMIT $1`, [limit]),
    closed: (since, until) =>
      rowsOf(
        `SELECT session, state FROM (${latest}) latest WHERE closed_at >= $1 AND closed_at < $2 ORDER BY closed_at`,
        [since, until],
      ),
  });
}
