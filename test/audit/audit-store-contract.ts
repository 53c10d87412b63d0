// The audit store's contract, one suite for every implementation: each test file runs it against
// its own database (SQLite file, PostgreSQL database), so both stores answer the same cases the same way.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { capProposal } from 'toolgate/protocol';
import type { AuditRecord, AuditStore, DecisionAttempt, NotificationDelivery } from 'toolgate';
import type { ControlEvent, GrantEvent, RegistryEvent } from 'toolgate/protocol';

/** A kill-switch change attempt, as the store takes it. */

/** One empty database the suite opens stores on, and reaches past them. */
export interface AuditStoreBacking {
  /** Opens a store on this database; a second call is a second worker sharing it. */
  open(): Promise<AuditStore>;
  /** Runs one statement directly against the database, as anyone holding its credentials could. */
  execute(sql: string): Promise<void>;
  /** The `recorded_at` of a call's audit record, in the store's ISO 8601 form (for the window's bounds). */
  recordedAtOf(callId: string): Promise<string>;
  /** Releases the backing's own connection (the suite closes the stores it opened). */
  dispose(): Promise<void>;
}

const isoInstant = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A final record of one run of a call; `overrides` set what a test cares about. */
export function auditRecord(overrides: Partial<AuditRecord> = {}): AuditRecord {
  const callId = overrides.callId ?? `tc-${randomUUID()}`;
  const at = new Date().toISOString();
  return {
    callId,
    runId: randomUUID(),
    session: `session-${randomUUID()}`,
    caller: 'support-bot',
    tool: 'refund_order',
    rawArguments: '{"order_id":"ORD-1001","amount_cents":2590}',
    code: 'OK',
    ok: true,
    effect: 'applied',
    result: { ok: true, tool: 'refund_order', code: 'OK', message: 'refunded', effect: 'applied', callId },
    startedAt: at,
    finishedAt: at,
    durationMs: 12,
    ...overrides,
  };
}

function decisionAttempt(overrides: Partial<DecisionAttempt> = {}): DecisionAttempt {
  return {
    updateId: randomUUID(),
    callId: `tc-${randomUUID()}`,
    runId: randomUUID(),
    approver: 'alice',
    decision: 'approve',
    outcome: 'accepted',
    source: 'admin',
    envelope: { nonce: 'n-1', decision: 'approve' },
    ...overrides,
  };
}

function registryEvent(overrides: Partial<RegistryEvent> = {}): RegistryEvent {
  return {
    updateId: randomUUID(),
    action: 'enrolKey',
    outcome: 'accepted',
    operator: 'olivia',
    approver: 'alice',
    inviteId: `invite-${randomUUID()}`,
    keyId: `key-${randomUUID()}`,
    detail: 'laptop',
    at: new Date().toISOString(),
    ...overrides,
  };
}

/** A kill-switch change attempt; `overrides` set what a test cares about. */
export function controlEvent(overrides: Partial<ControlEvent> = {}): ControlEvent {
  return {
    changeId: randomUUID(),
    action: 'disable',
    tool: 'refund_order',
    caller: 'support-bot',
    operator: 'olivia',
    reason: 'refunds misfiring',
    issuedAt: new Date().toISOString(),
    outcome: 'accepted',
    ...overrides,
  };
}

function delivery(overrides: Partial<NotificationDelivery> = {}): NotificationDelivery {
  return {
    eventId: `event-${randomUUID()}`,
    channel: 'approvers',
    callId: `tc-${randomUUID()}`,
    event: 'approval-requested',
    outcome: 'delivered',
    httpStatus: 200,
    attempt: 1,
    ...overrides,
  } as NotificationDelivery;
}

/** A moment strictly after every timestamp already written (they are cut to milliseconds). */
async function nextMillisecond(): Promise<void> {
  const now = Date.now();
  while (Date.now() <= now) await sleep(1);
}

/** Defines the contract's tests for the stores `backing` opens; each test gets a fresh, empty backing. */
export function describeAuditStoreContract(input: {
  name: string;
  backing: () => Promise<AuditStoreBacking>;
}) {
  describe(`the ${input.name} audit store`, () => {
    const opened: { backing: AuditStoreBacking; stores: AuditStore[] }[] = [];
    afterEach(async () => {
      for (const { backing, stores } of opened.splice(0)) {
        for (const store of stores) await store.close();
        await backing.dispose();
      }
    });
    /** A fresh, empty backing; `another()` opens a store on it (one more worker). */
    const emptyBacking = async () => {
      const backing = await input.backing();
      const entry = { backing, stores: [] as AuditStore[] };
      opened.push(entry);
      const another = async () => {
        const store = await backing.open();
        entry.stores.push(store);
        return store;
      };
      return { backing, another };
    };
    /** A fresh backing and a first store on it. */
    const fresh = async () => {
      const { backing, another } = await emptyBacking();
      return { backing, store: await another(), another };
    };

    it('writes a record once: the same call id and run id again changes nothing and says so', async () => {
      const { store } = await fresh();
      const record = auditRecord();
      expect(await store.append(record)).toBe(true);
      expect(await store.append(record)).toBe(false);
      // A retry that carries other content under the same key does not overwrite the first.
      expect(await store.append({ ...record, code: 'INTERNAL_ERROR', ok: false })).toBe(false);
      expect(await store.recordsOf(record.callId)).toEqual([record]);
      // Another run of the same call is another record.
      const second = auditRecord({ callId: record.callId, code: 'APPROVAL_DENIED', ok: false });
      expect(await store.append(second)).toBe(true);
      expect(await store.recordsOf(record.callId)).toEqual([record, second]);
    });

    it('reads a record back exactly as it was appended, optional fields and odd text included', async () => {
      const { store } = await fresh();
      const record = auditRecord({
        rawArguments: '{"note":"nul \u0000, lone \ud800, emoji 💸, quote \\" and ü"}',
        intentId: 'intent-1',
        userMessage: 'refund ORD-1001 — it arrived broken',
        validatedArguments: { order_id: 'ORD-1001', amount_cents: 2590, nested: { list: [1, null, 'x'] } },
        riskLevel: 'irreversible',
        policyVersion: 'test-1@0123456789ab',
        decisions: [
          {
            approver: 'alice',
            decision: 'approve',
            reason: 'ok',
            round: 1,
            outcome: 'accepted',
            at: new Date().toISOString(),
          },
        ],
      });
      await store.append(record);
      const [read] = await store.recordsOf(record.callId);
      expect(read).toEqual(record);
      expect(JSON.stringify(read)).toBe(JSON.stringify(record));
    });

    it('lists a call oldest first in the order appended, and recent() newest first within its limit', async () => {
      const { store } = await fresh();
      const callId = `tc-${randomUUID()}`;
      // Appended in this order, whatever their own start times say.
      const runs = [
        auditRecord({ callId, startedAt: '2030-01-01T00:00:00.000Z' }),
        auditRecord({ callId, startedAt: '2020-01-01T00:00:00.000Z' }),
        auditRecord({ callId, startedAt: '2025-01-01T00:00:00.000Z' }),
      ];
      for (const run of runs) await store.append(run);
      const other = auditRecord();
      await store.append(other);
      expect((await store.recordsOf(callId)).map((record) => record.runId)).toEqual(
        runs.map((run) => run.runId),
      );
      expect(await store.recent({ limit: 2 })).toEqual([other, runs[2]]);
      expect(await store.recent()).toEqual([other, ...[...runs].reverse()]);
      expect(await store.recordsOf('tc-nobody')).toEqual([]);
    });

    it('gives the records written in a window: from since (inclusive) to until (exclusive), oldest first', async () => {
      const { store, backing } = await fresh();
      const before = auditRecord();
      await store.append(before);
      await nextMillisecond();
      const inside = auditRecord();
      await store.append(inside);
      await nextMillisecond();
      const after = auditRecord();
      await store.append(after);
      const insideAt = await backing.recordedAtOf(inside.callId);
      const afterAt = await backing.recordedAtOf(after.callId);
      expect(insideAt).toMatch(isoInstant);
      expect(insideAt < afterAt).toBe(true);

      expect(await store.recordsBetween({ since: insideAt, until: afterAt })).toEqual([inside]);
      expect(await store.recordsBetween({ since: insideAt, until: insideAt })).toEqual([]);
      expect(await store.recordsBetween({ since: '2000-01-01T00:00:00.000Z', until: insideAt })).toEqual([
        before,
      ]);
      expect(await store.recordsBetween({ since: insideAt, until: '2999-01-01T00:00:00.000Z' })).toEqual([
        inside,
        after,
      ]);
      expect(
        await store.recordsBetween({ since: '2999-01-01T00:00:00.000Z', until: '2999-01-02T00:00:00.000Z' }),
      ).toEqual([]);
    });

    it("gives a session's records, its calls and its admission refusals, oldest first, and no other session's", async () => {
      const { store } = await fresh();
      const session = `session-${randomUUID()}`;
      const call = auditRecord({ session });
      const refusal = auditRecord({
        session,
        runId: `admission:${randomUUID()}`,
        code: 'STEP_LIMIT',
        ok: false,
        effect: 'none',
        durationMs: 0,
      });
      const later = auditRecord({ session, tool: 'get_order' });
      await store.append(call);
      await store.append(auditRecord());
      await store.append(refusal);
      await store.append(later);
      expect(await store.recordsOfSession(session)).toEqual([call, refusal, later]);
      expect(await store.recordsOfSession('session-nobody')).toEqual([]);
      // A page bounds what it reads: the newest records, still oldest first.
      expect(await store.recordsOfSession(session, { limit: 2 })).toEqual([refusal, later]);
      expect(await store.recordsOfSession(session, { limit: 0 })).toEqual([]);
    });

    it("gives a session's denials of one tool, oldest first, and nothing else", async () => {
      const { store } = await fresh();
      const session = `session-${randomUUID()}`;
      const denial = (overrides: Partial<AuditRecord> = {}) =>
        auditRecord({ session, code: 'APPROVAL_DENIED', ok: false, effect: 'none', ...overrides });
      const first = denial();
      const second = denial({ validatedArguments: { order_id: 'ORD-1001', amount_cents: 2000 } });
      await store.append(first);
      await store.append(auditRecord({ session }));
      await store.append(denial({ tool: 'cancel_order' }));
      await store.append(denial({ session: `session-${randomUUID()}` }));
      await store.append(auditRecord({ session, code: 'APPROVAL_EXPIRED', ok: false, effect: 'none' }));
      await store.append(second);
      expect(await store.deniedInSession({ session, tool: 'refund_order' })).toEqual([first, second]);
      expect(await store.deniedInSession({ session, tool: 'get_order' })).toEqual([]);
    });

    it("gives an end user's denials of one tool since a time, in any session, and nothing else", async () => {
      const { store } = await fresh();
      const endUser = `CUS-${randomUUID()}`;
      const since = new Date(Date.now() - 1_000).toISOString();
      const denial = (overrides: Partial<AuditRecord> = {}) =>
        auditRecord({
          session: `session-${randomUUID()}`,
          code: 'APPROVAL_DENIED',
          ok: false,
          effect: 'none',
          context: { onBehalfOf: endUser },
          ...overrides,
        });
      const first = denial();
      const inTenant = denial({ context: { onBehalfOf: endUser, tenant: 'shop-2' } });
      const second = denial();
      await store.append(first);
      await store.append(inTenant);
      await store.append(denial({ context: { onBehalfOf: `CUS-${randomUUID()}` } }));
      await store.append(denial({ tool: 'cancel_order' }));
      await store.append(denial({ code: 'APPROVAL_EXPIRED' }));
      await store.append(denial({ caller: 'other-bot' }));
      await store.append(auditRecord({ context: { onBehalfOf: endUser } }));
      await store.append(second);
      expect(
        await store.deniedForEndUser({ caller: 'support-bot', endUser, tool: 'refund_order', since }),
      ).toEqual([first, second]);
      expect(
        await store.deniedForEndUser({
          caller: 'support-bot',
          endUser,
          tenant: 'shop-2',
          tool: 'refund_order',
          since,
        }),
      ).toEqual([inTenant]);
      const future = new Date(Date.now() + 60_000).toISOString();
      expect(
        await store.deniedForEndUser({ caller: 'support-bot', endUser, tool: 'refund_order', since: future }),
      ).toEqual([]);
    });

    it('writes a decision attempt once per update id and source, and lists a call’s attempts oldest first', async () => {
      const { store } = await fresh();
      const callId = `tc-${randomUUID()}`;
      const startedAt = Date.now();
      const admin = decisionAttempt({ callId, outcome: 'SELF_APPROVAL' });
      expect(await store.appendDecisionAttempt(admin)).toBe(true);
      expect(await store.appendDecisionAttempt({ ...admin, outcome: 'accepted' })).toBe(false);
      // The workflow's record of the same update is its own.
      const workflow = { ...admin, source: 'workflow' as const };
      expect(await store.appendDecisionAttempt(workflow)).toBe(true);
      const keyed = decisionAttempt({ callId, keyId: 'key-1', envelope: null });
      await store.appendDecisionAttempt(keyed);
      await store.appendDecisionAttempt(decisionAttempt());

      const attempts = await store.decisionAttemptsOf(callId);
      expect(attempts.map(({ recordedAt: _recordedAt, ...attempt }) => attempt)).toEqual([
        admin,
        workflow,
        keyed,
      ]);
      for (const { recordedAt } of attempts) {
        expect(recordedAt).toMatch(isoInstant);
        expect(Date.parse(recordedAt)).toBeGreaterThanOrEqual(startedAt - 1_000);
        expect(Date.parse(recordedAt)).toBeLessThanOrEqual(Date.now() + 1_000);
      }
      expect(await store.decisionAttemptsOf('tc-nobody')).toEqual([]);
    });

    it('writes a registry event once per update id and outcome, and finds the accepted ones about a key or an invite', async () => {
      const { store } = await fresh();
      const enrolled = registryEvent();
      const refused = registryEvent({
        keyId: enrolled.keyId,
        action: 'revokeKey',
        outcome: 'SIGNATURE_INVALID',
        detail: 'not signed by olivia',
      });
      const revoked = registryEvent({ keyId: enrolled.keyId, action: 'revokeKey', detail: 'laptop stolen' });
      const { keyId: _keyId, ...invite } = registryEvent({
        action: 'addInvite',
        inviteId: enrolled.inviteId,
      });
      expect(await store.appendRegistryEvent(invite)).toBe(true);
      expect(await store.appendRegistryEvent(enrolled)).toBe(true);
      expect(await store.appendRegistryEvent(enrolled)).toBe(false);
      expect(await store.appendRegistryEvent(refused)).toBe(true);
      // The same update with another outcome (the admin side's view and the worker's) is another row.
      expect(await store.appendRegistryEvent({ ...revoked, outcome: 'KEY_UNKNOWN' })).toBe(true);
      expect(await store.appendRegistryEvent(revoked)).toBe(true);
      const unrelated = registryEvent();
      await store.appendRegistryEvent(unrelated);

      const all = await store.registryEvents();
      expect(all.map(({ recordedAt: _recordedAt, ...event }) => event)).toEqual([
        invite,
        enrolled,
        refused,
        { ...revoked, outcome: 'KEY_UNKNOWN' },
        revoked,
        unrelated,
      ]);
      for (const { recordedAt } of all) expect(recordedAt).toMatch(isoInstant);
      const about = async (query: { keyId?: string; inviteId?: string }) =>
        (await store.acceptedRegistryEventsAbout(query)).map(
          ({ recordedAt: _recordedAt, ...event }) => event,
        );
      expect(await about({ keyId: enrolled.keyId! })).toEqual([enrolled, revoked]);
      expect(await about({ inviteId: enrolled.inviteId! })).toEqual([invite, enrolled]);
      expect(await about({ keyId: enrolled.keyId!, inviteId: enrolled.inviteId! })).toEqual([
        invite,
        enrolled,
        revoked,
      ]);
      expect(await about({})).toEqual([]);
      expect(await about({ keyId: 'key-nobody' })).toEqual([]);
    });

    it('writes a notification delivery once per event and channel: the first outcome holds', async () => {
      const { store } = await fresh();
      const callId = `tc-${randomUUID()}`;
      const delivered = delivery({ callId });
      expect(await store.appendNotificationDelivery(delivered)).toBe(true);
      expect(
        await store.appendNotificationDelivery({
          eventId: delivered.eventId,
          channel: delivered.channel,
          callId,
          event: delivered.event,
          outcome: 'failed',
          reason: 'its round ended first',
        }),
      ).toBe(false);
      const onCall = delivery({
        callId,
        eventId: delivered.eventId,
        channel: 'on-call',
        outcome: 'refused',
        httpStatus: 404,
      });
      expect(await store.appendNotificationDelivery(onCall)).toBe(true);
      const failed = delivery({
        callId,
        outcome: 'failed',
        reason: 'retries ran out',
        httpStatus: 503,
        attempt: 5,
      });
      await store.appendNotificationDelivery(failed);
      await store.appendNotificationDelivery(delivery());

      const deliveries = await store.notificationDeliveriesOf(callId);
      expect(deliveries.map(({ recordedAt: _recordedAt, ...rest }) => rest)).toEqual([
        delivered,
        onCall,
        failed,
      ]);
      for (const { recordedAt } of deliveries) expect(recordedAt).toMatch(isoInstant);
      expect(await store.notificationDeliveriesOf('tc-nobody')).toEqual([]);
    });

    it('writes a kill-switch change once per change id and outcome, and lists them oldest first, or one tool’s', async () => {
      const { store } = await fresh();
      const startedAt = Date.now();
      const disabled = controlEvent();
      expect(await store.appendControlEvent(disabled)).toBe(true);
      expect(await store.appendControlEvent(disabled)).toBe(false);
      // A retry that carries other content under the same key does not overwrite the first.
      expect(await store.appendControlEvent({ ...disabled, reason: 'something else' })).toBe(false);
      // The same change refused (the admin side's view and the worker's) is another row.
      const refused = { ...disabled, outcome: 'SIGNATURE_INVALID' };
      expect(await store.appendControlEvent(refused)).toBe(true);
      expect(await store.appendControlEvent(refused)).toBe(false);
      // No caller: the switch of every caller; it reads back without one.
      const { caller: _caller, ...everyone } = controlEvent({
        tool: 'delete_account',
        reason: 'incident 42',
      });
      expect(await store.appendControlEvent(everyone)).toBe(true);
      const enabled = controlEvent({ action: 'enable', reason: 'fixed' });
      expect(await store.appendControlEvent(enabled)).toBe(true);

      const all = await store.controlEvents();
      expect(all.map(({ recordedAt: _recordedAt, ...event }) => event)).toEqual([
        disabled,
        refused,
        everyone,
        enabled,
      ]);
      for (const { recordedAt } of all) {
        expect(recordedAt).toMatch(isoInstant);
        expect(Date.parse(recordedAt)).toBeGreaterThanOrEqual(startedAt - 1_000);
        expect(Date.parse(recordedAt)).toBeLessThanOrEqual(Date.now() + 1_000);
      }
      expect('caller' in all[2]!).toBe(false);
      expect(JSON.stringify(all[2]!)).toBe(JSON.stringify({ ...everyone, recordedAt: all[2]!.recordedAt }));
      expect(await store.controlEvents({})).toEqual(all);

      const ofTool = async (tool: string) =>
        (await store.controlEvents({ tool })).map(({ recordedAt: _recordedAt, ...event }) => event);
      expect(await ofTool('refund_order')).toEqual([disabled, refused, enabled]);
      expect(await ofTool('delete_account')).toEqual([everyone]);
      expect(await ofTool('get_order')).toEqual([]);
    });

    it("keeps standing grants' events beside the switches, each read back by its own method, once per id", async () => {
      const { store } = await fresh();
      const switched = controlEvent();
      const grantId = randomUUID();
      const grantEvent = (overrides: Partial<GrantEvent>): GrantEvent => ({
        changeId: grantId,
        action: 'grant',
        grantId,
        tool: 'refund_order',
        caller: 'support-bot',
        outcome: 'accepted',
        ...overrides,
      });
      const added = grantEvent({ reason: 'small refunds' });
      const used = grantEvent({
        changeId: `${grantId}:1`,
        action: 'use-grant',
        reservationId: 'tc-1',
        callId: 'tc-1',
        amount: 500,
      });
      const other = grantEvent({ changeId: 'other', grantId: 'other', action: 'grant' });
      expect(await store.appendControlEvent(switched)).toBe(true);
      expect(await store.appendControlEvent(added)).toBe(true);
      expect(await store.appendControlEvent(used)).toBe(true);
      expect(await store.appendControlEvent(used)).toBe(false);
      expect(await store.appendControlEvent(other)).toBe(true);
      const strip = <T extends { recordedAt: string }>(events: T[]) =>
        events.map(({ recordedAt: _recordedAt, ...event }) => event);
      expect(strip(await store.controlEvents())).toEqual([switched]);
      expect(strip(await store.grantEvents())).toEqual([added, used, other]);
      expect(strip(await store.grantEvents({ grantId }))).toEqual([added, used]);
    });

    it('refuses an UPDATE or a DELETE issued directly against the database, on every table', async () => {
      const { store, backing } = await fresh();
      const record = auditRecord();
      const attempt = decisionAttempt({ callId: record.callId });
      const event = registryEvent();
      const sent = delivery({ callId: record.callId });
      const change = controlEvent();
      await store.append(record);
      await store.appendDecisionAttempt(attempt);
      await store.appendRegistryEvent(event);
      await store.appendNotificationDelivery(sent);
      await store.appendControlEvent(change);

      const statements = [
        "UPDATE audit_records SET code = 'OK', record = '{}'",
        'DELETE FROM audit_records',
        "UPDATE decision_attempts SET attempt = '{}'",
        'DELETE FROM decision_attempts',
        "UPDATE registry_events SET outcome = 'accepted'",
        'DELETE FROM registry_events',
        "UPDATE notification_deliveries SET delivery = '{}'",
        'DELETE FROM notification_deliveries',
        "UPDATE control_events SET outcome = 'SIGNATURE_INVALID'",
        "UPDATE control_events SET event = '{}'",
        'DELETE FROM control_events',
      ];
      for (const statement of statements) {
        await expect(backing.execute(statement), statement).rejects.toThrow(/append-only/);
      }
      expect(await store.recordsOf(record.callId)).toEqual([record]);
      expect(await store.decisionAttemptsOf(record.callId)).toMatchObject([attempt]);
      expect(await store.registryEvents()).toMatchObject([event]);
      expect(await store.notificationDeliveriesOf(record.callId)).toMatchObject([sent]);
      expect(await store.controlEvents()).toMatchObject([change]);
    });

    it("shares one database between two workers: each sees the other's records, and a record both append is written once", async () => {
      const { store: first, another } = await fresh();
      const second = await another();
      const record = auditRecord();
      expect(await first.append(record)).toBe(true);
      expect(await second.recordsOf(record.callId)).toEqual([record]);
      expect(await second.append(record)).toBe(false);

      // The same records, appended at once by both workers, many times: each written once.
      const records = Array.from({ length: 10 }, () => auditRecord());
      const appended = await Promise.all(
        records.flatMap((each) => [first, second, first, second].map((store) => store.append(each))),
      );
      expect(appended.filter(Boolean)).toHaveLength(records.length);
      const attempt = decisionAttempt();
      const event = registryEvent();
      const sent = delivery();
      const change = controlEvent();
      const written = await Promise.all(
        [first, second].flatMap((store) => [
          store.appendDecisionAttempt(attempt),
          store.appendRegistryEvent(event),
          store.appendNotificationDelivery(sent),
          store.appendControlEvent(change),
        ]),
      );
      expect(written.filter(Boolean)).toHaveLength(4);
      for (const each of records) expect(await first.recordsOf(each.callId)).toEqual([each]);
      expect(await first.decisionAttemptsOf(attempt.callId)).toHaveLength(1);
      expect(await second.registryEvents()).toHaveLength(1);
      expect(await second.notificationDeliveriesOf(sent.callId)).toHaveLength(1);
      expect(await first.controlEvents()).toHaveLength(1);
      expect(await second.recent({ limit: 100 })).toHaveLength(records.length + 1);
    });

    it("keeps sessions' state: exactly 25 of 40 admissions at once across two workers, once per proposal, append-only", async () => {
      const { store: first, another, backing } = await fresh();
      const second = await another();
      const session = `session-${randomUUID()}`;
      const limits = { stepBudget: 25, loopLimit: 3, circuitThreshold: 3, idleTimeoutMs: 60_000 };
      const admit = (store: AuditStore, index: number) => {
        const order = `ORD-${2000 + index}`;
        return store.sessions.admit({
          proposalId: `${session}-${index}`,
          session,
          callId: `tc-${order}`,
          proposal: capProposal({
            session,
            caller: 'support-bot',
            tool: 'get_order',
            arguments: JSON.stringify({ order_id: order }),
          }),
          signed: true,
          limits,
        });
      };
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, index) => admit(index % 2 === 0 ? first : second, index)),
      );
      expect(answers.filter((answer) => answer.admitted)).toHaveLength(25);
      expect(
        answers.filter((answer) => !answer.admitted && answer.result.code === 'STEP_LIMIT'),
      ).toHaveLength(15);
      // Asked again, from the other worker: the same answers, nothing counted twice.
      const again = await Promise.all(
        Array.from({ length: 40 }, (_, index) => admit(index % 2 === 0 ? second : first, index)),
      );
      expect(again).toEqual(answers);
      expect(await first.sessions.stats({ session })).toMatchObject({
        caller: 'support-bot',
        steps: 40,
        codeCounts: { STEP_LIMIT: 15 },
      });
      // An outcome counts once per run, whichever worker reports it.
      const outcome = {
        session,
        callId: 'tc-ORD-2000',
        runId: 'run-1',
        tool: 'get_order',
        code: 'OK',
        ok: true,
      };
      await Promise.all([first.sessions.countOutcome(outcome), second.sessions.countOutcome(outcome)]);
      expect((await second.sessions.stats({ session })).codeCounts).toEqual({ STEP_LIMIT: 15, OK: 1 });
      expect(await first.sessions.list()).toMatchObject([{ session, steps: 40, closed: false }]);
      for (const statement of [
        "UPDATE session_states SET state = '{}'",
        'DELETE FROM session_states',
        "UPDATE session_admissions SET admission = '{}'",
        'DELETE FROM session_outcomes',
      ]) {
        await expect(backing.execute(statement), statement).rejects.toThrow(/append-only/);
      }
    });

    it('makes its tables once when workers start together on an empty database, and keeps them on the next start', async () => {
      const { another } = await emptyBacking();
      const [first, ...others] = await Promise.all(Array.from({ length: 8 }, another));
      const record = auditRecord();
      expect(await first!.append(record)).toBe(true);
      for (const store of others) expect(await store.recordsOf(record.callId)).toEqual([record]);
      // A worker started later finds the tables and what they hold.
      const later = await another();
      expect(await later.recordsOf(record.callId)).toEqual([record]);
      expect(await later.append(record)).toBe(false);
      // A worker's shutdown may close its store twice (its own closers, then the caller's).
      await later.close();
      await expect(later.close()).resolves.toBeUndefined();
      expect(await first!.recordsOf(record.callId)).toEqual([record]);
    });

    it('upgrades a database made before control events: the next open creates their table and guards, and keeps every row', async () => {
      const { store: earlier, backing, another } = await fresh();
      const record = auditRecord();
      const event = registryEvent();
      await earlier.append(record);
      await earlier.appendRegistryEvent(event);
      await earlier.close();
      // What an earlier version left: the four other tables, no control_events (nor its guards).
      await backing.execute('DROP TABLE control_events');

      const store = await another();
      expect(await store.recordsOf(record.callId)).toEqual([record]);
      expect(await store.registryEvents()).toMatchObject([event]);
      expect(await store.controlEvents()).toEqual([]);
      const change = controlEvent();
      expect(await store.appendControlEvent(change)).toBe(true);
      expect(await store.appendControlEvent(change)).toBe(false);
      for (const statement of ["UPDATE control_events SET event = '{}'", 'DELETE FROM control_events']) {
        await expect(backing.execute(statement), statement).rejects.toThrow(/append-only/);
      }
      expect(await store.controlEvents({ tool: change.tool })).toMatchObject([change]);
      // And the next start finds it all in place.
      const later = await another();
      expect(await later.controlEvents()).toMatchObject([change]);
      expect(await later.appendControlEvent(change)).toBe(false);
    });
  });
}
