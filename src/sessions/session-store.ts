/**
 * Sessions as state in a store (issue 28): every admission and every outcome is one transaction that
 * reads the session's state, applies `session-rules.ts` and writes it back, so the step budget, the
 * loop guard and the circuit breaker are exact under concurrency: parallel tool calls of one turn,
 * two workers, two processes on one SQLite file. An admission is idempotent by proposal: asked again
 * (a retried local activity, a replayed task), it answers what it answered, and counts nothing twice;
 * an outcome counts once per run of its call.
 */
import { openSqliteFile } from '../audit/sqlite-file';
import type { Proposal } from '../shared/proposal';
import type { CallOutcome, OpenCircuit, SessionStats } from '../shared/session';
import type { SessionAdmission, SessionLimits, SessionState } from './session-rules';
import {
  admitInSession,
  countOutcomeInSession,
  emptySessionState,
  endSession,
  resetCircuits,
  revivedSessionState,
  statsOfSession,
} from './session-rules';
import { notSessionOwnerMessage } from '../shared/model-messages';
import { rejection } from '../shared/tool-result';

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

/** The store of every session's state. Both implementations keep the same rules. */
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
  /** Ends a session: every later proposal is `SESSION_CLOSED`. */
  end(input: { session: string; reason?: string }): Promise<SessionStats>;
  /** Closes the open circuits of one tool (or all). */
  reset(input: { session: string; tool?: string }): Promise<SessionStats>;
  close(): Promise<void>;
}

interface Row {
  state: string;
}

/**
 * Opens (creating when missing) a SQLite session store: one file shared by the processes of one
 * machine. Each change is an `IMMEDIATE` transaction: the writer lock is taken before the state is
 * read, so two processes never decide on the same state.
 */
export function openSqliteSessionStore(input: { path: string }): SessionStore {
  const database = openSqliteFile({ path: input.path, busyTimeoutMs: 10_000 });
  database.exec(`
    CREATE TABLE IF NOT EXISTS sessions (
      session TEXT PRIMARY KEY,
      state TEXT NOT NULL,
      updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS session_admissions (
      session TEXT NOT NULL,
      proposal_id TEXT NOT NULL,
      call_id TEXT NOT NULL,
      admission TEXT NOT NULL,
      recorded_at TEXT NOT NULL,
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
  `);
  const selectState = database.prepare<[string], Row>('SELECT state FROM sessions WHERE session = ?');
  const upsertState = database.prepare<[string, string, string]>(
    `INSERT INTO sessions (session, state, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (session) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
  );
  const selectAdmission = database.prepare<[string, string], { call_id: string; admission: string }>(
    'SELECT call_id, admission FROM session_admissions WHERE session = ? AND proposal_id = ?',
  );
  const insertAdmission = database.prepare<[string, string, string, string, string]>(
    'INSERT INTO session_admissions (session, proposal_id, call_id, admission, recorded_at) VALUES (?, ?, ?, ?, ?)',
  );
  const insertOutcome = database.prepare<[string, string, string, string, string]>(
    'INSERT OR IGNORE INTO session_outcomes (call_id, run_id, session, code, recorded_at) VALUES (?, ?, ?, ?, ?)',
  );
  const load = (session: string): SessionState => {
    const row = selectState.get(session);
    return row ? revivedSessionState(JSON.parse(row.state) as SessionState) : emptySessionState();
  };
  const save = (session: string, state: SessionState, now: number): void => {
    upsertState.run(session, JSON.stringify(state), new Date(now).toISOString());
  };

  const admit = database.transaction((request: SessionAdmissionRequest): SessionAdmission => {
    const now = request.now ?? Date.now();
    const recorded = selectAdmission.get(request.session, request.proposalId);
    if (recorded) return answeredBefore({ request, recorded });
    const decided = admitInSession(load(request.session), { ...request, now });
    // A refusal that changed nothing (not the owner's, a context it cannot take) is not recorded: the
    // proposal id stays free for the genuine proposal, and the answer is the same if asked again.
    if (decided.admission.admitted || decided.admission.counted) {
      save(request.session, decided.state, now);
      insertAdmission.run(
        request.session,
        request.proposalId,
        request.callId,
        JSON.stringify(decided.admission),
        new Date(now).toISOString(),
      );
    }
    return decided.admission;
  });

  const countOutcome = database.transaction(
    (input: CallOutcome & { session: string; now?: number }): { opened?: OpenCircuit } => {
      const now = input.now ?? Date.now();
      // Older calls report no run id: each report of theirs counts (as the workflow counted them).
      if (input.runId !== undefined) {
        const inserted = insertOutcome.run(
          input.callId,
          input.runId,
          input.session,
          input.code,
          new Date(now).toISOString(),
        );
        if (inserted.changes === 0) return {};
      }
      const counted = countOutcomeInSession(load(input.session), { ...input, now });
      save(input.session, counted.state, now);
      return counted.opened ? { opened: counted.opened } : {};
    },
  );

  const change = (session: string, apply: (state: SessionState) => SessionState): SessionStats =>
    database
      .transaction(() => {
        const next = apply(load(session));
        save(session, next, Date.now());
        return statsOfSession({ session, state: next });
      })
      .immediate();

  return {
    admit: (request) => Promise.resolve().then(() => admit.immediate(request)),
    countOutcome: (input) => Promise.resolve().then(() => countOutcome.immediate(input)),
    stats: (input) =>
      Promise.resolve().then(() =>
        statsOfSession({
          session: input.session,
          state: load(input.session),
          ...(input.limits ? { limits: input.limits } : {}),
        }),
      ),
    end: (input) =>
      Promise.resolve().then(() => change(input.session, (state) => endSession(state, input.reason))),
    reset: (input) =>
      Promise.resolve().then(() => change(input.session, (state) => resetCircuits(state, input.tool))),
    close: () => Promise.resolve().then(() => void database.close()),
  };
}

/**
 * The answer recorded for a proposal id, when it is asked again. A proposal id is the client's, so
 * another call under a recorded id is not that proposal: it is refused and changes nothing.
 */
function answeredBefore(input: {
  request: SessionAdmissionRequest;
  recorded: { call_id: string; admission: string };
}): SessionAdmission {
  const { request, recorded } = input;
  if (recorded.call_id !== request.callId) {
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
