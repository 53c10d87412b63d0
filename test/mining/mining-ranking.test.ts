import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditRecord, AuditStore } from 'toolgate';
import type { MiningReport, SessionEnd } from 'toolgate/admin';
import { openSqliteAuditStore, parseSelectionCases } from 'toolgate';
import { caseFileSkeleton, mineCases } from 'toolgate/admin';

// Mining's rules on records written straight into an audit store, without a server: what is picked,
// how it is ranked, what is folded and merged, and the case file a person completes.

let audit: AuditStore;
let since: Date;
let clock: number;

beforeEach(() => {
  audit = openSqliteAuditStore({ path: ':memory:' });
  since = new Date(Date.now() - 1_000);
  clock = Date.now() - 60_000;
});
afterEach(() => audit.close());

/** Appends one record of a call: each record starts a second after the one before. */
async function recorded(
  input: Partial<AuditRecord> & { session: string; tool: string; code: string },
): Promise<AuditRecord> {
  clock += 1_000;
  const at = new Date(clock).toISOString();
  const callId = input.callId ?? `tc-${randomUUID()}`;
  const record: AuditRecord = {
    callId,
    runId: randomUUID(),
    caller: 'support-bot',
    rawArguments: '{"order_id":"ORD-1001"}',
    ok: input.code === 'OK',
    effect: 'none',
    result: {
      ok: input.code === 'OK',
      tool: input.tool,
      code: input.code,
      message: `${input.code} message`,
      effect: 'none',
      callId,
    },
    startedAt: at,
    finishedAt: at,
    durationMs: 0,
    ...input,
  };
  await audit.append(record);
  return record;
}

const mine = (input: { sessionEnds?: SessionEnd[]; limit?: number } = {}): Promise<MiningReport> =>
  mineCases({ audit, since, until: new Date(Date.now() + 1_000), ...input });

describe('mining recorded traffic', () => {
  it('ranks hand-offs and denials first, then loops, then rejected arguments', async () => {
    await recorded({
      session: 's-rejected',
      tool: 'refund_order',
      code: 'INVALID_ARGUMENTS',
      rawArguments: '{"amount_cents":"25.90"}',
    });
    for (let index = 0; index < 3; index++) {
      await recorded({
        session: 's-loop',
        tool: 'get_order',
        code: 'ORDER_NOT_FOUND',
        rawArguments: '{"order_id":"ORD-9999"}',
      });
    }
    await recorded({
      session: 's-denied',
      tool: 'refund_order',
      code: 'APPROVAL_DENIED',
      decisions: [
        {
          approver: 'alice',
          decision: 'deny',
          reason: 'already refunded in store',
          round: 1,
          outcome: 'accepted',
          at: new Date().toISOString(),
        },
      ],
    });
    const last = await recorded({ session: 's-handoff', tool: 'get_order', code: 'OK' });
    const endedAt = new Date(Date.parse(last.startedAt) + 4_000).toISOString();

    const report = await mine({ sessionEnds: [{ session: 's-handoff', reason: 'handoff', endedAt }] });

    expect(report.candidates.map((candidate) => [candidate.kind, candidate.sessions[0]])).toEqual([
      ['handoff', 's-handoff'],
      ['denial', 's-denied'],
      ['loop', 's-loop'],
      ['rejected-arguments', 's-rejected'],
    ]);
    const [handoff, denial, loop, rejected] = report.candidates;
    expect(handoff).toMatchObject({
      tool: 'get_order',
      code: 'OK',
      callIds: [last.callId],
      handoff: { endedAt, afterMs: 4_000 },
      why: ['the session was handed off to a human 4 s after this call (get_order, OK)'],
    });
    expect(denial).toMatchObject({
      denial: { approver: 'alice', reason: 'already refunded in store' },
      why: ['alice denied the approval: "already refunded in store"'],
    });
    expect(loop).toMatchObject({
      loop: { times: 3, inARow: 3, codes: { ORDER_NOT_FOUND: 3 }, distinctArguments: 1 },
      why: [
        'get_order was proposed 3 times in one session (3 in a row; ORDER_NOT_FOUND x3; the same arguments each time)',
      ],
    });
    expect(rejected).toMatchObject({
      code: 'INVALID_ARGUMENTS',
      rawArguments: '{"amount_cents":"25.90"}',
      why: ['rejected with INVALID_ARGUMENTS: INVALID_ARGUMENTS message'],
    });
  });

  it('folds rejected payloads that are part of a loop into the loop: one turn is one case, with both reasons', async () => {
    for (let index = 0; index < 3; index++) {
      await recorded({
        session: 's-1',
        tool: 'refund_order',
        code: 'INVALID_ARGUMENTS',
        rawArguments: '{"amount_cents":25.9}',
      });
    }

    const { candidates } = await mine();

    expect(candidates).toHaveLength(1);
    expect(candidates[0]).toMatchObject({ kind: 'loop', occurrences: 1 });
    expect(candidates[0]!.why).toEqual([
      'refund_order was proposed 3 times in one session (3 in a row; INVALID_ARGUMENTS x3; the same arguments each time)',
      'rejected with INVALID_ARGUMENTS: INVALID_ARGUMENTS message',
    ]);
  });

  it('sees no loop in calls of one tool that all succeeded on arguments of their own, and one where they repeat or fail', async () => {
    // A user who asked about three orders: three good reads, nothing to learn.
    for (const order of ['ORD-1001', 'ORD-1002', 'ORD-1003']) {
      await recorded({
        session: 's-three-orders',
        tool: 'get_order',
        code: 'OK',
        rawArguments: `{"order_id":"${order}"}`,
      });
    }
    // The same read three times, each a success: the model did not take the answer in.
    for (let index = 0; index < 3; index++) {
      await recorded({
        session: 's-same-order',
        tool: 'get_order',
        code: 'OK',
        rawArguments: '{"order_id":"ORD-1005"}',
      });
    }
    // Three orders, one of them not found: a failure in the run.
    for (const [order, code] of [
      ['ORD-1001', 'OK'],
      ['ORD-9999', 'ORDER_NOT_FOUND'],
      ['ORD-1002', 'OK'],
    ] as const) {
      await recorded({
        session: 's-one-failed',
        tool: 'get_order',
        code,
        rawArguments: `{"order_id":"${order}"}`,
      });
    }

    const { candidates } = await mine();

    expect(candidates.map((candidate) => [candidate.kind, candidate.sessions])).toEqual([
      ['loop', ['s-one-failed']],
      ['loop', ['s-same-order']],
    ]);
  });

  it('counts the same payload once whatever its whitespace and key order, and keeps another user message apart', async () => {
    await recorded({
      session: 's-1',
      tool: 'refund_order',
      code: 'INVALID_JSON',
      rawArguments: '{"a":1,"b":2}',
      userMessage: 'refund it',
    });
    await recorded({
      session: 's-2',
      tool: 'refund_order',
      code: 'INVALID_JSON',
      rawArguments: '{ "b": 2, "a": 1 }',
      userMessage: 'refund it',
    });
    await recorded({
      session: 's-3',
      tool: 'refund_order',
      code: 'INVALID_JSON',
      rawArguments: '{"a":1,"b":2}',
      userMessage: 'money back please',
    });

    const { candidates } = await mine();

    expect(
      candidates.map((candidate) => [candidate.userMessage, candidate.occurrences, candidate.sessions]),
    ).toEqual([
      ['refund it', 2, ['s-2', 's-1']],
      ['money back please', 1, ['s-3']],
    ]);
  });

  it('takes the call proposed last before a hand-off, and finds nothing in a hand-off without calls', async () => {
    await recorded({ session: 's-1', tool: 'get_order', code: 'OK' });
    const last = await recorded({
      session: 's-1',
      tool: 'refund_order',
      code: 'APPROVAL_PENDING',
      userMessage: 'refund ORD-1001',
    });
    const endedAt = new Date(Date.parse(last.startedAt) + 500).toISOString();
    // A proposal after the end, refused: not what the hand-off followed.
    clock += 5_000;
    await recorded({ session: 's-1', tool: 'get_order', code: 'SESSION_CLOSED' });

    const { candidates, sessionEnds } = await mine({
      sessionEnds: [
        { session: 's-1', reason: 'handoff', endedAt },
        { session: 's-without-calls', reason: 'handoff', endedAt },
        { session: 's-1-idle', reason: 'idle', endedAt },
      ],
    });

    expect(sessionEnds).toEqual({ read: 3, handoffs: 2 });
    expect(candidates).toEqual([
      expect.objectContaining({
        kind: 'handoff',
        tool: 'refund_order',
        userMessage: 'refund ORD-1001',
        callIds: [last.callId],
      }),
    ]);
  });

  it('keeps the most valuable candidates within the limit, and says how many there were', async () => {
    await recorded({ session: 's-1', tool: 'get_order', code: 'UNKNOWN_TOOL', rawArguments: '{}' });
    await recorded({ session: 's-2', tool: 'refund_order', code: 'APPROVAL_DENIED' });

    const report = await mine({ limit: 1 });

    expect(report.found).toBe(2);
    expect(report.candidates.map((candidate) => candidate.kind)).toEqual(['denial']);
    expect(report.sessionEnds).toBeNull();
  });

  it('writes a case file skeleton in the selection suite format, with nothing labelled', async () => {
    await recorded({
      session: 's-1',
      caller: 'support-bot',
      tool: 'refund_order',
      code: 'INVALID_ARGUMENTS',
      rawArguments: '{"order_id":"ORD-1001","amount_cents":"25.90"}',
      userMessage: 'I want R$ 25,90 back on ORD-1001',
    });
    await recorded({
      session: 's-2',
      caller: 'support-bot',
      tool: 'get_orders',
      code: 'UNKNOWN_TOOL',
      rawArguments: '{}',
    });
    const report = await mine();

    const skeleton = caseFileSkeleton({ report });

    expect(skeleton.caller).toBe('support-bot');
    expect(skeleton.cases).toEqual([
      {
        id: `mined-${report.candidates[0]!.id}`,
        userMessage: 'I want R$ 25,90 back on ORD-1001',
        expectedTool: 'TODO: a tool name, or null when no tool should be called',
        criticalArguments: {},
        tags: ['mined', 'rejected-arguments'],
        note:
          'Mined (rejected-arguments): rejected with INVALID_ARGUMENTS: INVALID_ARGUMENTS message. ' +
          'Observed: support-bot called refund_order with {"order_id":"ORD-1001","amount_cents":"25.90"}, ' +
          `answered INVALID_ARGUMENTS (call ${report.candidates[0]!.callIds[0]}, session s-1).`,
      },
      expect.objectContaining({
        userMessage: 'TODO: the user message (none was attached to the call)',
        expectedTool: 'TODO: a tool name, or null when no tool should be called',
        tags: ['mined', 'rejected-arguments'],
      }),
    ]);
    // The selection suite reads it as it is; its expected tool is offered by no endpoint until labelled.
    const parsed = parseSelectionCases({ source: 'mined.json', value: JSON.parse(JSON.stringify(skeleton)) });
    expect(parsed.cases.map((entry) => entry.id)).toEqual(skeleton.cases.map((entry) => entry.id));
  });
});
