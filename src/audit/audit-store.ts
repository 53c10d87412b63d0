import type { CallContext } from '../calls/call-context';
import { openSqliteFile } from './sqlite-file';
import type { SessionStore } from '../sessions/store';
import { sqliteSessionStore } from '../sessions/store';
import { auditedRawArguments } from '../calls/proposal';
import type { RegistryEvent } from '../approver-keys/protocol';
import type { ControlEvent } from '../controls/protocol';
import type { GrantEvent } from '../grants/protocol';
import type { DecisionRecord, EditRecord } from '../calls/protocol';
import type { AdmissionRefusal, DecisionAttempt } from '../shared/temporal';
import type { ToolResult } from '../shared/tool-result';

/** The final record of one run of one call; it outlives Temporal's retention. */
export interface AuditRecord {
  callId: string;
  runId: string;
  session: string;
  caller: string;
  tool: string;
  /** The proposal as the model sent it (raw arguments text). */
  rawArguments: string;
  intentId?: string;
  /** The user's message of the turn, when the harness attached one to the proposal (for mining). */
  userMessage?: string;
  /** On whose behalf the call acted (end user, tenant, channel, claims), when the harness said. */
  context?: CallContext;
  validatedArguments?: Record<string, unknown>;
  riskLevel?: string;
  policyVersion?: string;
  /** Accepted decisions, in order. */
  decisions?: DecisionRecord[];
  /** Approvers' edits of the arguments, in order: who, why, both versions and their digests. */
  edits?: EditRecord[];
  /** The standing grant that approved the call instead of decisions: its id and approvers. */
  grant?: { grantId: string; approvers: string[] };
  code: string;
  ok: boolean;
  effect: ToolResult['effect'];
  result: ToolResult;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
}

/**
 * The audit record of a proposal refused at session admission, or (`stage: 'undelivered'`) of one the
 * client could not deliver (the server refused it for load, or could not be reached). No run of its
 * call exists, so the record's run id is `admission:<proposal id>` (or `undelivered:<proposal id>`):
 * unique per proposal, the same for a retried admission or a retried workflow task (written once),
 * and never a Temporal run id. Nothing ran, so it starts and finishes at the decision.
 */
export function admissionRefusalRecord(
  refusal: AdmissionRefusal & { stage?: 'admission' | 'undelivered' },
): AuditRecord {
  const { proposal, result } = refusal;
  return {
    callId: refusal.callId,
    runId: `${refusal.stage ?? 'admission'}:${refusal.proposalId}`,
    session: refusal.session,
    caller: proposal.caller,
    tool: proposal.tool,
    rawArguments: auditedRawArguments(proposal),
    ...(proposal.intentId !== undefined ? { intentId: proposal.intentId } : {}),
    ...(proposal.context !== undefined ? { context: proposal.context } : {}),
    ...(typeof proposal.userMessage === 'string' ? { userMessage: proposal.userMessage } : {}),
    ...(refusal.policyVersion !== undefined ? { policyVersion: refusal.policyVersion } : {}),
    code: result.code,
    ok: result.ok,
    effect: result.effect,
    result,
    startedAt: refusal.at,
    finishedAt: refusal.at,
    durationMs: 0,
  };
}

/**
 * One webhook delivery of an approval notification: an event to one channel, and how it ended. One
 * row per event and channel: the first outcome recorded is the one that holds.
 */
export type NotificationDelivery = {
  eventId: string;
  channel: string;
  callId: string;
  event: string;
} & (
  | {
      /** `delivered` (a 2xx answer) or `refused` (a 4xx other than 408 and 429: not retried). */
      outcome: 'delivered' | 'refused';
      httpStatus: number;
      attempt: number;
    }
  | {
      /** `failed`: never delivered (retries ran out, its round ended first, the channel is gone). */
      outcome: 'failed';
      reason: string;
      /** The last answer's status, when the channel answered at all. */
      httpStatus?: number;
      /** The last attempt's number, when known. */
      attempt?: number;
    }
);

/**
 * An append-only store of audit records, shared by the workers and the admin side. Two
 * implementations: SQLite (`openSqliteAuditStore`, one machine) and PostgreSQL
 * (`openPostgresAuditStore`, several workers on several machines); `openAuditStore` picks one from
 * the config. Both refuse updates and deletes in the database itself, and both write an append
 * retried with the same key once. A method whose store cannot be reached rejects.
 */
export interface AuditStore {
  /** Every session's state (issue 28): what a call's admission and its outcome change, in this store. */
  readonly sessions: SessionStore;
  /** Appends a record; appending the same (call id, run id) again changes nothing. Resolves whether it was new. */
  append(record: AuditRecord): Promise<boolean>;
  /** Every record of a call, oldest first. */
  recordsOf(callId: string): Promise<AuditRecord[]>;
  /** The newest records, newest first. */
  recent(input?: { limit?: number }): Promise<AuditRecord[]>;
  /**
   * The records written from `since` (inclusive) to `until` (exclusive), ISO 8601 instants, oldest
   * first: what mining (`toolgate mine`) reads. Never changes anything.
   */
  recordsBetween(input: { since: string; until: string }): Promise<AuditRecord[]>;
  /**
   * Every record of a session (its calls and its admission refusals), oldest first; with `limit`, only
   * the newest `limit` of them (still oldest first), so a page can bound what it reads.
   */
  recordsOfSession(session: string, options?: { limit?: number }): Promise<AuditRecord[]>;
  /** A session's records of one tool that ended `APPROVAL_DENIED`, oldest first (the denial memory reads them). */
  deniedInSession(input: { session: string; tool: string }): Promise<AuditRecord[]>;
  /**
   * The `APPROVAL_DENIED` records of `caller`'s calls of `tool` for one end user (the context's `onBehalfOf`, and its
   * `tenant`, absent as absent) recorded at or after `since` (ISO), in any session, oldest first: the
   * denial memory a policy's `rememberDenials.acrossSessions` reads.
   */
  deniedForEndUser(input: {
    caller: string;
    endUser: string;
    tenant?: string;
    tool: string;
    since: string;
  }): Promise<AuditRecord[]>;
  /** Appends a decision attempt, accepted or refused; the same (update id, source) twice writes once. */
  appendDecisionAttempt(attempt: DecisionAttempt): Promise<boolean>;
  /** Every decision attempt on a call, oldest first. */
  decisionAttemptsOf(callId: string): Promise<(DecisionAttempt & { recordedAt: string })[]>;
  /** Appends a change attempted on the approver-key registry; the same (update id, outcome) twice writes once. */
  appendRegistryEvent(event: RegistryEvent): Promise<boolean>;
  /** Registry changes attempted, oldest first. */
  registryEvents(): Promise<(RegistryEvent & { recordedAt: string })[]>;
  /**
   * The registry changes accepted that name `keyId` or `inviteId` (either may be omitted), oldest
   * first: what the key lookups cross-check the registry's answer against. Never changes anything.
   */
  acceptedRegistryEventsAbout(input: { keyId?: string; inviteId?: string }): Promise<
    (RegistryEvent & {
      recordedAt: string;
    })[]
  >;
  /** Appends a webhook delivery (an event to a channel: delivered, refused or failed); the same (event id, channel) twice writes once. */
  appendNotificationDelivery(delivery: NotificationDelivery): Promise<boolean>;
  /** Every webhook delivery of a call, oldest first. */
  notificationDeliveriesOf(callId: string): Promise<(NotificationDelivery & { recordedAt: string })[]>;
  /**
   * Appends an operating control's event: a kill-switch change or a standing grant's (added,
   * revoked, used, released), accepted or refused; the same (change id, outcome) twice writes once.
   */
  appendControlEvent(event: ControlEvent | GrantEvent): Promise<boolean>;
  /** Kill-switch changes attempted, oldest first; with `tool`, only that tool's. */
  controlEvents(input?: { tool?: string }): Promise<(ControlEvent & { recordedAt: string })[]>;
  /** Standing grants' events, oldest first; with `grantId`, only that grant's. */
  grantEvents(input?: { grantId?: string }): Promise<(GrantEvent & { recordedAt: string })[]>;
  /** Closes the store (its file, or its pool of connections); a store is not used after. */
  close(): Promise<void>;
}

/**
 * Opens (creating when missing) a SQLite audit store: the embedded default, for workers on one
 * machine. Rows can be inserted only: triggers refuse updates and deletes, so a record, once written,
 * stays as written. Its timestamps are the writing process's clock.
 */
export function openSqliteAuditStore(input: { path: string }): AuditStore {
  const database = openSqliteFile({ path: input.path, busyTimeoutMs: 5000 });
  database.exec(`
    CREATE TABLE IF NOT EXISTS audit_records (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      call_id TEXT NOT NULL,
      run_id TEXT NOT NULL,
      tool TEXT NOT NULL,
      caller TEXT NOT NULL,
      session TEXT NOT NULL,
      code TEXT NOT NULL,
      effect TEXT NOT NULL,
      recorded_at TEXT NOT NULL,
      record TEXT NOT NULL,
      UNIQUE (call_id, run_id)
    );
    CREATE INDEX IF NOT EXISTS audit_records_by_session ON audit_records (session);
    CREATE INDEX IF NOT EXISTS audit_records_by_recorded_at ON audit_records (recorded_at);
    CREATE TABLE IF NOT EXISTS decision_attempts (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      update_id TEXT NOT NULL,
      source TEXT NOT NULL,
      call_id TEXT NOT NULL,
      recorded_at TEXT NOT NULL,
      attempt TEXT NOT NULL,
      UNIQUE (update_id, source)
    );
    CREATE INDEX IF NOT EXISTS decision_attempts_by_call ON decision_attempts (call_id);
    CREATE TABLE IF NOT EXISTS registry_events (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      update_id TEXT NOT NULL,
      outcome TEXT NOT NULL,
      recorded_at TEXT NOT NULL,
      event TEXT NOT NULL,
      UNIQUE (update_id, outcome)
    );
    CREATE INDEX IF NOT EXISTS registry_events_by_key ON registry_events (json_extract(event, '$.keyId'));
    CREATE INDEX IF NOT EXISTS registry_events_by_invite ON registry_events (json_extract(event, '$.inviteId'));
    CREATE TABLE IF NOT EXISTS notification_deliveries (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      event_id TEXT NOT NULL,
      channel TEXT NOT NULL,
      call_id TEXT NOT NULL,
      recorded_at TEXT NOT NULL,
      delivery TEXT NOT NULL,
      UNIQUE (event_id, channel)
    );
    CREATE INDEX IF NOT EXISTS notification_deliveries_by_call ON notification_deliveries (call_id);
    CREATE TABLE IF NOT EXISTS control_events (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      change_id TEXT NOT NULL,
      outcome TEXT NOT NULL,
      tool TEXT NOT NULL,
      recorded_at TEXT NOT NULL,
      event TEXT NOT NULL,
      UNIQUE (change_id, outcome)
    );
    CREATE INDEX IF NOT EXISTS control_events_by_tool ON control_events (tool);
    CREATE TRIGGER IF NOT EXISTS control_events_no_update BEFORE UPDATE ON control_events
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS control_events_no_delete BEFORE DELETE ON control_events
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS notification_deliveries_no_update BEFORE UPDATE ON notification_deliveries
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS notification_deliveries_no_delete BEFORE DELETE ON notification_deliveries
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS registry_events_no_update BEFORE UPDATE ON registry_events
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS registry_events_no_delete BEFORE DELETE ON registry_events
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS decision_attempts_no_update BEFORE UPDATE ON decision_attempts
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS decision_attempts_no_delete BEFORE DELETE ON decision_attempts
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS audit_records_no_update BEFORE UPDATE ON audit_records
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS audit_records_no_delete BEFORE DELETE ON audit_records
      BEGIN SELECT RAISE(ABORT, 'the audit store is append-only'); END;
  `);
  const sessions = sqliteSessionStore(database);
  const insert = database.prepare(`
    INSERT OR IGNORE INTO audit_records (call_id, run_id, tool, caller, session, code, effect, recorded_at, record)
    VALUES (@callId, @runId, @tool, @caller, @session, @code, @effect, @recordedAt, @record)`);
  const byCall = database.prepare('SELECT record FROM audit_records WHERE call_id = ? ORDER BY sequence');
  const newest = database.prepare('SELECT record FROM audit_records ORDER BY sequence DESC LIMIT ?');
  // recorded_at is an ISO 8601 instant in UTC (toISOString), so text order is time order.
  const written = database.prepare(
    'SELECT record FROM audit_records WHERE recorded_at >= ? AND recorded_at < ? ORDER BY sequence',
  );
  const bySession = database.prepare('SELECT record FROM audit_records WHERE session = ? ORDER BY sequence');
  const newestOfSession = database.prepare(
    'SELECT record FROM (SELECT record, sequence FROM audit_records WHERE session = ? ORDER BY sequence DESC LIMIT ?) ORDER BY sequence',
  );
  const deniedOfSession = database.prepare(
    "SELECT record FROM audit_records WHERE session = ? AND tool = ? AND code = 'APPROVAL_DENIED' ORDER BY sequence",
  );
  const deniedOfEndUser = database.prepare(
    `SELECT record FROM audit_records WHERE caller = @caller AND tool = @tool AND code = 'APPROVAL_DENIED' AND recorded_at >= @since
       AND json_extract(record, '$.context.onBehalfOf') = @endUser
       AND coalesce(json_extract(record, '$.context.tenant'), '') = @tenant ORDER BY sequence`,
  );
  const insertAttempt = database.prepare(`
    INSERT OR IGNORE INTO decision_attempts (update_id, source, call_id, recorded_at, attempt)
    VALUES (@updateId, @source, @callId, @recordedAt, @attempt)`);
  const attemptsByCall = database.prepare(
    'SELECT attempt, recorded_at FROM decision_attempts WHERE call_id = ? ORDER BY sequence',
  );
  const insertRegistryEvent = database.prepare(`
    INSERT OR IGNORE INTO registry_events (update_id, outcome, recorded_at, event)
    VALUES (@updateId, @outcome, @recordedAt, @event)`);
  const allRegistryEvents = database.prepare(
    'SELECT event, recorded_at FROM registry_events ORDER BY sequence',
  );
  // Refused attempts are left out in SQL: anyone may send them, so there can be many.
  const acceptedRegistryEvents = database.prepare(`
    SELECT event, recorded_at FROM registry_events
    WHERE outcome = 'accepted'
      AND (json_extract(event, '$.keyId') = @keyId OR json_extract(event, '$.inviteId') = @inviteId)
    ORDER BY sequence`);
  const insertDelivery = database.prepare(`
    INSERT OR IGNORE INTO notification_deliveries (event_id, channel, call_id, recorded_at, delivery)
    VALUES (@eventId, @channel, @callId, @recordedAt, @delivery)`);
  const deliveriesByCall = database.prepare(
    'SELECT delivery, recorded_at FROM notification_deliveries WHERE call_id = ? ORDER BY sequence',
  );
  const insertControlEvent = database.prepare(`
    INSERT OR IGNORE INTO control_events (change_id, outcome, tool, recorded_at, event)
    VALUES (@changeId, @outcome, @tool, @recordedAt, @event)`);
  const allControlEvents = database.prepare(
    'SELECT event, recorded_at FROM control_events ORDER BY sequence',
  );
  const controlEventsOfTool = database.prepare(
    'SELECT event, recorded_at FROM control_events WHERE tool = ? ORDER BY sequence',
  );
  const parseControlEvent = (row: unknown): (ControlEvent | GrantEvent) & { recordedAt: string } => {
    const { event, recorded_at: recordedAt } = row as { event: string; recorded_at: string };
    return { ...(JSON.parse(event) as ControlEvent | GrantEvent), recordedAt };
  };
  const parseRegistryEvent = (row: unknown): RegistryEvent & { recordedAt: string } => {
    const { event, recorded_at: recordedAt } = row as { event: string; recorded_at: string };
    return { ...(JSON.parse(event) as RegistryEvent), recordedAt };
  };
  const parse = (rows: unknown[]): AuditRecord[] =>
    rows.map((row) => JSON.parse((row as { record: string }).record) as AuditRecord);
  // better-sqlite3 is synchronous: each method runs its statement at once, and a failure rejects.
  return {
    sessions,
    append: async (record) =>
      insert.run({
        callId: record.callId,
        runId: record.runId,
        tool: record.tool,
        caller: record.caller,
        session: record.session,
        code: record.code,
        effect: record.effect,
        recordedAt: new Date().toISOString(),
        record: JSON.stringify(record),
      }).changes === 1,
    recordsOf: async (callId) => parse(byCall.all(callId)),
    recent: async (options) => parse(newest.all(options?.limit ?? 50)),
    recordsBetween: async ({ since, until }) => parse(written.all(since, until)),
    recordsOfSession: async (session, options = {}) =>
      parse(
        options.limit === undefined
          ? bySession.all(session)
          : newestOfSession.all(session, Math.max(0, Math.floor(options.limit))),
      ),
    deniedInSession: async ({ session, tool }) => parse(deniedOfSession.all(session, tool)),
    deniedForEndUser: async ({ caller, endUser, tenant, tool, since }) =>
      parse(deniedOfEndUser.all({ caller, endUser, tenant: tenant ?? '', tool, since })),
    appendDecisionAttempt: async (attempt) =>
      insertAttempt.run({
        updateId: attempt.updateId,
        source: attempt.source,
        callId: attempt.callId,
        recordedAt: new Date().toISOString(),
        attempt: JSON.stringify(attempt),
      }).changes === 1,
    decisionAttemptsOf: async (callId) =>
      attemptsByCall.all(callId).map((row) => {
        const { attempt, recorded_at: recordedAt } = row as { attempt: string; recorded_at: string };
        return { ...(JSON.parse(attempt) as DecisionAttempt), recordedAt };
      }),
    appendRegistryEvent: async (event) =>
      insertRegistryEvent.run({
        updateId: event.updateId,
        outcome: event.outcome,
        recordedAt: new Date().toISOString(),
        event: JSON.stringify(event),
      }).changes === 1,
    registryEvents: async () => allRegistryEvents.all().map(parseRegistryEvent),
    acceptedRegistryEventsAbout: async ({ keyId, inviteId }) =>
      acceptedRegistryEvents
        .all({ keyId: keyId ?? null, inviteId: inviteId ?? null })
        .map(parseRegistryEvent),
    appendNotificationDelivery: async (delivery) =>
      insertDelivery.run({
        eventId: delivery.eventId,
        channel: delivery.channel,
        callId: delivery.callId,
        recordedAt: new Date().toISOString(),
        delivery: JSON.stringify(delivery),
      }).changes === 1,
    notificationDeliveriesOf: async (callId) =>
      deliveriesByCall.all(callId).map((row) => {
        const { delivery, recorded_at: recordedAt } = row as { delivery: string; recorded_at: string };
        return { ...(JSON.parse(delivery) as NotificationDelivery), recordedAt };
      }),
    appendControlEvent: async (event) =>
      insertControlEvent.run({
        changeId: event.changeId,
        outcome: event.outcome,
        tool: event.tool,
        recordedAt: new Date().toISOString(),
        event: JSON.stringify(event),
      }).changes === 1,
    controlEvents: async (input) =>
      (input?.tool !== undefined ? controlEventsOfTool.all(input.tool) : allControlEvents.all())
        .map(parseControlEvent)
        .filter(isSwitchEvent),
    grantEvents: async (input) =>
      allControlEvents
        .all()
        .map(parseControlEvent)
        .filter((event): event is GrantEvent & { recordedAt: string } => isGrantEvent(event, input?.grantId)),
    close: async () => {
      database.close();
    },
  };
}

/** A kill-switch change, among the control events (the table holds the grants' events too). */
export function isSwitchEvent<T extends ControlEvent | GrantEvent>(event: T): event is T & ControlEvent {
  return event.action === 'disable' || event.action === 'enable';
}

/** A standing grant's event (of `grantId`, when given), among the control events. */
export function isGrantEvent(event: ControlEvent | GrantEvent, grantId?: string): event is GrantEvent {
  return !isSwitchEvent(event) && (grantId === undefined || event.grantId === grantId);
}
