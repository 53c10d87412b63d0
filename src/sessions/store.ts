/**
 * Sessions as state in the audit store (issue 28): every admission and every outcome is one
 * transaction that reads the session's latest state, applies `session-rules.ts` and appends the next
 * state, so the step budget, the loop guard and the circuit breaker are exact under concurrency:
 * parallel tool calls of one turn, two workers, two processes on one SQLite file. Append-only like
 * the rest of the audit store: a session's states are versions, never rewritten, so a worker's role
 * needs to insert and read only. An admission is idempotent by proposal: asked again (a retried
 * local activity, a replayed task), it answers what it answered, and counts nothing twice; an outcome
 * counts once per run of its call.
 */
import type Database from 'better-sqlite3';
import type { Proposal } from '../calls/proposal';
import type { CallOutcome, OpenCircuit, SessionStats, SessionSummary } from './session';
import type { SessionAdmission, SessionLimits, SessionReset, SessionState } from './rules';
import {
  admitInSession,
  closedAt,
  countOutcomeInSession,
  emptySessionState,
  endSession,
  resetCircuits,
  revivedSessionState,
  statsOfSession,
} from './rules';
import { notSessionOwnerMessage } from '../shared/model-messages';
import { rejection } from '../shared/tool-result';
import { openSqliteFile } from '../audit/sqlite-file';

/** One admission to decide: the proposal, its call id, whether its signature held, and the caller's limits. */
export interface SessionAdmissionRequest {
  /** Unique per proposal: the same id asked again gets the same answer. */
  proposalId: string;
  session: string;
  callId: string;
  proposal: Proposal;
  signed: boolean;
  limits: SessionLimits;
  /** The decision's instant (ms since the epoch); default now. */
  now?: number;
}

/** Why ending a session was refused: it belongs to another caller. */
export type SessionEndAnswer = { ended: true; stats: SessionStats } | { ended: false; owner: string };

/** The store of every session's state. Both implementations (SQLite, PostgreSQL) keep the same rules. */
export interface SessionStore {
  /** Decides an admission in one transaction; asked again with the same proposal id, answers the same. */
  admit(request: SessionAdmissionRequest): Promise<SessionAdmission>;
  /**
   * Counts a call's final outcome in its session, once per (call id, run id). Resolves with the circuit
   * it opened, if it opened one.
   */
  countOutcome(input: CallOutcome & { session: string; now?: number }): Promise<{ opened?: OpenCircuit }>;
  /** The session's stats; a session nothing happened in answers empty ones. */
  stats(input: { session: string; limits?: SessionLimits }): Promise<SessionStats>;
  /**
   * Ends a session for `caller`: every later proposal is `SESSION_CLOSED`. A session nothing happened in
   * is ended as `caller`'s; another caller's session is not ended.
   */
  end(input: { session: string; caller: string; reason?: string; now?: number }): Promise<SessionEndAnswer>;
  /** Closes the open circuits of one tool (or all); `by` (the operator's reset) is kept with the state. */
  reset(input: { session: string; tool?: string; by?: SessionReset; now?: number }): Promise<SessionStats>;
  /** The sessions most recently active, newest first (at most `limit`, default 50). */
  list(input?: { limit?: number }): Promise<SessionSummary[]>;
  /** The sessions closed from `since` (inclusive) to `until` (exclusive), ISO instants: what mining reads. */
  closedBetween(input: { since: string; until: string }): Promise<SessionSummary[]>;
}

/** The tables a session store keeps, in SQLite's dialect; PostgreSQL's are the same columns. */
export const sqliteSessionSchema = `
  CREATE TABLE IF NOT EXISTS session_states (
    session TEXT NOT NULL,
    version INTEGER NOT NULL,
    caller TEXT,
    closed_at TEXT,
    recorded_at TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (session, version)
  );
  CREATE INDEX IF NOT EXISTS session_states_by_recorded_at ON session_states (recorded_at);
  CREATE INDEX IF NOT EXISTS session_states_by_closed_at ON session_states (closed_at);
  CREATE TABLE IF NOT EXISTS session_admissions (
    session TEXT NOT NULL,
    proposal_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    admission TEXT NOT NULL,
    PRIMARY KEY (session, proposal_id)
  );
  CREATE TABLE IF NOT EXISTS session_outcomes (
    call_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    session TEXT NOT NULL,
    code TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (call_id, run_id)
  );
  ${['session_states', 'session_admissions', 'session_outcomes']
    .map(
      (table) => `
  CREATE TRIGGER IF NOT EXISTS ${table}_no_update BEFORE UPDATE ON ${table}
    BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
  CREATE TRIGGER IF NOT EXISTS ${table}_no_delete BEFORE DELETE ON ${table}
    BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;`,
    )
    .join('')}
`;

interface StateRow {
  version: number;
  state: string;
}

/** A session's latest state and its version (0: nothing happened in it yet). */
export interface VersionedState {
  version: number;
  state: SessionState;
}

/** What a change reads, inside its transaction, before it decides. */
export interface SessionReads {
  current: VersionedState;
  /** The answer recorded for the change's proposal id, when it asks for one. */
  recorded?: { callId: string; admission: string };
  /** Whether the change's (call id, run id) outcome was counted before, when it asks. */
  outcomeSeen?: boolean;
}

/** A row a change appends; nothing is ever rewritten. */
export type SessionWrite =
  | { table: 'state'; session: string; version: number; state: SessionState }
  | { table: 'admission'; session: string; proposalId: string; callId: string; admission: SessionAdmission }
  | { table: 'outcome'; session: string; callId: string; runId: string; code: string };

/** A change's answer and the rows it appends. */
export interface SessionDecision<T> {
  answer: T;
  writes: SessionWrite[];
}

/** What a change needs read besides the session's state. */
export interface SessionNeeds {
  session: string;
  proposalId?: string;
  outcome?: { callId: string; runId: string };
}

/**
 * The rules of each change, the same for both stores: pure decisions over what the transaction read,
 * so SQLite runs them synchronously and PostgreSQL between its reads and its writes.
 */
export const sessionChanges = {
  admit(
    reads: SessionReads,
    request: SessionAdmissionRequest,
    now: number,
  ): SessionDecision<SessionAdmission> {
    if (reads.recorded) return { answer: answeredBefore({ request, recorded: reads.recorded }), writes: [] };
    const { current } = reads;
    const decided = admitInSession(current.state, { ...request, now });
    // A refusal that changed nothing (not the owner's, a context it cannot take) is not recorded: the
    // proposal id stays free for the genuine proposal, and the answer is the same if asked again.
    if (!decided.admission.admitted && !decided.admission.counted)
      return { answer: decided.admission, writes: [] };
    return {
      answer: decided.admission,
      writes: [
        { table: 'state', session: request.session, version: current.version + 1, state: decided.state },
        {
          table: 'admission',
          session: request.session,
          proposalId: request.proposalId,
          callId: request.callId,
          admission: decided.admission,
        },
      ],
    };
  },
  countOutcome(
    reads: SessionReads,
    input: CallOutcome & { session: string },
    now: number,
  ): SessionDecision<{ opened?: OpenCircuit }> {
    // Older calls report no run id: each report of theirs counts.
    if (reads.outcomeSeen) return { answer: {}, writes: [] };
    const { current } = reads;
    const counted = countOutcomeInSession(current.state, { ...input, now });
    const writes: SessionWrite[] =
      input.runId !== undefined
        ? [
            {
              table: 'outcome',
              session: input.session,
              callId: input.callId,
              runId: input.runId,
              code: input.code,
            },
          ]
        : [];
    if (counted.state !== current.state) {
      writes.push({
        table: 'state',
        session: input.session,
        version: current.version + 1,
        state: counted.state,
      });
    }
    return { answer: counted.opened ? { opened: counted.opened } : {}, writes };
  },
  end(
    reads: SessionReads,
    input: { session: string; caller: string; reason?: string },
    now: number,
  ): SessionDecision<SessionEndAnswer> {
    const { current } = reads;
    if (current.state.caller !== undefined && current.state.caller !== input.caller) {
      return { answer: { ended: false, owner: current.state.caller }, writes: [] };
    }
    const next = endSession(
      { ...current.state, caller: current.state.caller ?? input.caller },
      input.reason,
      now,
    );
    return {
      answer: { ended: true, stats: statsOfSession({ session: input.session, state: next }) },
      writes:
        next.closed && current.state.closed
          ? []
          : [{ table: 'state', session: input.session, version: current.version + 1, state: next }],
    };
  },
  reset(
    reads: SessionReads,
    input: { session: string; tool?: string; by?: SessionReset },
  ): SessionDecision<SessionStats> {
    const { current } = reads;
    const next = resetCircuits(current.state, input.tool, input.by);
    return {
      answer: statsOfSession({ session: input.session, state: next }),
      writes: [{ table: 'state', session: input.session, version: current.version + 1, state: next }],
    };
  },
};

/** A session's summary from its latest state, for lists. */
export function summaryOf(session: string, state: SessionState, now = Date.now()): SessionSummary {
  const closed = closedAt(state, now);
  return {
    session,
    ...(state.caller !== undefined ? { caller: state.caller } : {}),
    ...closed,
    steps: state.steps,
    ...(state.openedAt !== undefined ? { openedAt: new Date(state.openedAt).toISOString() } : {}),
    ...(state.lastActivityAt !== undefined
      ? { lastActivityAt: new Date(state.lastActivityAt).toISOString() }
      : {}),
    openCircuits: Object.keys(state.openCircuits).length,
  };
}

/**
 * The session store inside a SQLite audit store's database: one file shared by the processes of one
 * machine. Each change is an `IMMEDIATE` transaction: the writer lock is taken before the state is
 * read, so two processes never decide on the same state.
 */
export function sqliteSessionStore(database: Database.Database): SessionStore {
  database.exec(sqliteSessionSchema);
  const selectState = database.prepare<[string], StateRow>(
    'SELECT version, state FROM session_states WHERE session = ? ORDER BY version DESC LIMIT 1',
  );
  const insertState = database.prepare<[string, number, string | null, string | null, string, string]>(
    `INSERT INTO session_states (session, version, caller, closed_at, recorded_at, state) VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const selectAdmission = database.prepare<[string, string], { call_id: string; admission: string }>(
    'SELECT call_id, admission FROM session_admissions WHERE session = ? AND proposal_id = ?',
  );
  const insertAdmission = database.prepare<[string, string, string, string, string]>(
    'INSERT INTO session_admissions (session, proposal_id, call_id, recorded_at, admission) VALUES (?, ?, ?, ?, ?)',
  );
  const insertOutcome = database.prepare<[string, string, string, string, string]>(
    'INSERT INTO session_outcomes (call_id, run_id, session, code, recorded_at) VALUES (?, ?, ?, ?, ?)',
  );
  // The latest state of each session: its highest version.
  const latest = `SELECT s.session, s.state FROM session_states s
    JOIN (SELECT session, MAX(version) AS version FROM session_states GROUP BY session) m
      ON m.session = s.session AND m.version = s.version`;
  const recentSessions = database.prepare<[number], { session: string; state: string }>(
    `${latest} ORDER BY s.recorded_at DESC LIMIT ?`,
  );
  const closedSessions = database.prepare<[string, string], { session: string; state: string }>(
    `${latest} WHERE s.closed_at >= ? AND s.closed_at < ? ORDER BY s.closed_at`,
  );
  const load = (session: string): VersionedState => {
    const row = selectState.get(session);
    return row
      ? { version: row.version, state: revivedSessionState(JSON.parse(row.state) as SessionState) }
      : { version: 0, state: emptySessionState() };
  };
  const selectOutcome = database.prepare<[string, string], { code: string }>(
    'SELECT code FROM session_outcomes WHERE call_id = ? AND run_id = ?',
  );
  const write = (row: SessionWrite, at: string): void => {
    switch (row.table) {
      case 'state':
        insertState.run(
          row.session,
          row.version,
          row.state.caller ?? null,
          row.state.closedAt ?? null,
          at,
          JSON.stringify(row.state),
        );
        return;
      case 'admission':
        insertAdmission.run(row.session, row.proposalId, row.callId, at, JSON.stringify(row.admission));
        return;
      case 'outcome':
        insertOutcome.run(row.callId, row.runId, row.session, row.code, at);
        return;
    }
  };
  /** Reads, decides and appends in one IMMEDIATE transaction: the writer lock is held from the first read. */
  const transact = <T>(
    needs: SessionNeeds,
    decide: (reads: SessionReads, now: number) => SessionDecision<T>,
  ): Promise<T> =>
    Promise.resolve().then(() =>
      database
        .transaction(() => {
          const now = Date.now();
          const recorded =
            needs.proposalId !== undefined ? selectAdmission.get(needs.session, needs.proposalId) : undefined;
          const reads: SessionReads = {
            current: load(needs.session),
            ...(recorded ? { recorded: { callId: recorded.call_id, admission: recorded.admission } } : {}),
            ...(needs.outcome
              ? { outcomeSeen: selectOutcome.get(needs.outcome.callId, needs.outcome.runId) !== undefined }
              : {}),
          };
          const decided = decide(reads, now);
          const at = new Date(now).toISOString();
          for (const row of decided.writes) write(row, at);
          return decided.answer;
        })
        .immediate(),
    );
  return sessionStoreOver({
    transact,
    latest: (session) => Promise.resolve().then(() => load(session)),
    recent: (limit) => Promise.resolve().then(() => recentSessions.all(limit)),
    closed: (since, until) => Promise.resolve().then(() => closedSessions.all(since, until)),
  });
}

/** What a database gives a session store: one transaction per change, and its reads. */
export interface SessionBackend {
  /** Reads what `needs` names, decides and appends the decision's rows, in one transaction. */
  transact<T>(
    needs: SessionNeeds,
    decide: (reads: SessionReads, now: number) => SessionDecision<T>,
  ): Promise<T>;
  /** A session's latest state. */
  latest(session: string): Promise<VersionedState>;
  /** The latest state of the sessions most recently changed, newest first. */
  recent(limit: number): Promise<{ session: string; state: string }[]>;
  /** The latest state of the sessions closed in [since, until). */
  closed(since: string, until: string): Promise<{ session: string; state: string }[]>;
}

/** The session store both databases share: every change is `sessionChanges`' rule in one transaction. */
export function sessionStoreOver(backend: SessionBackend): SessionStore {
  const transact: SessionBackend['transact'] = (needs, decide) => backend.transact(needs, decide);
  const summaries = (rows: { session: string; state: string }[]) =>
    rows.map((row) => summaryOf(row.session, revivedSessionState(JSON.parse(row.state) as SessionState)));
  return {
    admit: (request) =>
      transact({ session: request.session, proposalId: request.proposalId }, (reads, now) =>
        sessionChanges.admit(reads, request, request.now ?? now),
      ),
    countOutcome: (input) =>
      transact(
        {
          session: input.session,
          ...(input.runId !== undefined ? { outcome: { callId: input.callId, runId: input.runId } } : {}),
        },
        (reads, now) => sessionChanges.countOutcome(reads, input, input.now ?? now),
      ),
    end: (input) =>
      transact({ session: input.session }, (reads, now) =>
        sessionChanges.end(reads, input, input.now ?? now),
      ),
    reset: (input) => transact({ session: input.session }, (reads) => sessionChanges.reset(reads, input)),
    stats: async (input) =>
      statsOfSession({
        session: input.session,
        state: (await backend.latest(input.session)).state,
        ...(input.limits ? { limits: input.limits } : {}),
      }),
    list: async (input) => summaries(await backend.recent(input?.limit ?? 50)),
    closedBetween: async ({ since, until }) => summaries(await backend.closed(since, until)),
  };
}

/** A SQLite session store of its own file (tests, and tools that keep sessions apart from the audit). */
export function openSqliteSessionStore(input: { path: string }): SessionStore & { close(): Promise<void> } {
  const database = openSqliteFile({ path: input.path, busyTimeoutMs: 10_000 });
  return {
    ...sqliteSessionStore(database),
    close: () => Promise.resolve().then(() => void database.close()),
  };
}

/**
 * The answer recorded for a proposal id, when it is asked again. A proposal id is the client's, so
 * another call under a recorded id is not that proposal: it is refused and changes nothing.
 */
function answeredBefore(input: {
  request: SessionAdmissionRequest;
  recorded: { callId: string; admission: string };
}): SessionAdmission {
  const { request, recorded } = input;
  if (recorded.callId !== request.callId) {
    return {
      admitted: false,
      counted: false,
      result: rejection({
        tool: request.proposal.tool,
        callId: request.callId,
        code: 'UNAUTHENTICATED_CALLER',
        message: notSessionOwnerMessage(request.proposal),
      }),
    };
  }
  return JSON.parse(recorded.admission) as SessionAdmission;
}
