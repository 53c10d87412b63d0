import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ToolResult } from 'toolgate';
import type { CaseFileSkeleton, MinedCandidate, MiningReport } from 'toolgate/admin';
import { parseSelectionCases } from 'toolgate';
import { mineCases } from 'toolgate/admin';
import { approvalHelpers } from '../support/approval-helpers';
import { harnessCli } from '../support/cli-runner';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Sessions run against the dev server with one planted finding each (a loop, invalid payloads, a
// denial, a hand-off) and one clean session; mining must find each planted one with the right why,
// and nothing of the clean one.

let harness: ToolGateHarness;
useHarness((started) => (harness = started));
const { decide } = approvalHelpers(() => harness);
const cli = harnessCli(() => harness);

const run = randomUUID();
const sessions = {
  loop: `mine-loop-${run}`,
  invalid: `mine-invalid-${run}`,
  denied: `mine-denied-${run}`,
  handoff: `mine-handoff-${run}`,
  clean: `mine-clean-${run}`,
};
const messages = {
  loop: 'Where is my order ORD-9999?',
  invalid: 'I want my R$ 25,90 back on ORD-1001, it arrived damaged',
  denied: 'Please refund ORD-1001, the box was crushed',
  handoff: 'ORD-1002 was charged twice, I want to talk to a person',
  clean: 'What is the status of ORD-1001?',
};
const invalidArguments = '{"order_id":"ORD-1001","amount_cents":"25.90","currency":"BRL","reason":"damaged"}';
const unparseableArguments = '{"order_id": "ORD-1002"';
const denialReason = 'the customer was already refunded in store';

let since: Date;
let report: MiningReport;
let deniedCall: ToolResult;
let directory: string;

const call = (input: { session: string; tool: string; arguments: string; userMessage: string }) =>
  harness.client.call({ caller: 'support-bot', ...input });

/** Ends a session, signed with its caller's key: the store keeps the reason and when. */
async function endSession(session: string, reason: string): Promise<void> {
  const stats = await harness.client.endSession(session, { reason });
  expect(stats).toMatchObject({ closed: true, closedReason: reason });
}

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'toolgate-mine-'));
  since = new Date(Date.now() - 1_000);

  // A loop: the same read four times; three run (ORDER_NOT_FOUND), the session refuses the fourth.
  const loop = { session: sessions.loop, tool: 'get_order', arguments: '{"order_id":"ORD-9999"}' };
  const loopCodes: string[] = [];
  for (let index = 0; index < 4; index++) {
    loopCodes.push((await call({ ...loop, userMessage: messages.loop })).code);
  }
  expect(loopCodes).toEqual(['ORDER_NOT_FOUND', 'ORDER_NOT_FOUND', 'ORDER_NOT_FOUND', 'LOOP_DETECTED']);

  // Invalid payloads: an amount as a decimal string, and JSON cut short.
  const invalid = await call({
    session: sessions.invalid,
    tool: 'refund_order',
    arguments: invalidArguments,
    userMessage: messages.invalid,
  });
  expect(invalid.code).toBe('INVALID_ARGUMENTS');
  const unparseable = await call({
    session: sessions.invalid,
    tool: 'get_order',
    arguments: unparseableArguments,
    userMessage: messages.invalid,
  });
  expect(unparseable.code).toBe('INVALID_JSON');

  // A denial: a refund that waits for approval, denied by alice with a reason.
  const pending = await call({
    session: sessions.denied,
    tool: 'refund_order',
    arguments: harness.refundArguments(),
    userMessage: messages.denied,
  });
  expect(pending.code).toBe('APPROVAL_PENDING');
  expect(await decide(pending.callId, 'alice', 'deny', denialReason)).toMatchObject({ accepted: true });
  deniedCall = (await harness.client.result(pending.callId))!;
  expect(deniedCall.code).toBe('APPROVAL_DENIED');

  // A hand-off right after a tool call.
  const read = await call({
    session: sessions.handoff,
    tool: 'get_order',
    arguments: '{"order_id":"ORD-1002"}',
    userMessage: messages.handoff,
  });
  expect(read.code).toBe('OK');
  await endSession(sessions.handoff, 'handoff');

  // A clean session: one read that answers the question, ended as resolved.
  const clean = await call({
    session: sessions.clean,
    tool: 'get_order',
    arguments: '{"order_id":"ORD-1001"}',
    userMessage: messages.clean,
  });
  expect(clean.code).toBe('OK');
  await endSession(sessions.clean, 'resolved');

  // Both ends are in the store once endSession answers; mining reads them from there.
  report = await vi.waitFor(
    async () => {
      const mined = await mineCases({
        audit: harness.audit,
        sessions: true,
        since,
      });
      if (!mined.candidates.some((candidate) => candidate.kind === 'handoff')) {
        throw new Error('the hand-off is not visible yet');
      }
      // The clean session ended last: its end may be listed a moment after the hand-off's.
      if ((mined.sessionEnds?.read ?? 0) < 2) throw new Error('the clean session is not visible yet');
      return mined;
    },
    { timeout: 30_000, interval: 500 },
  );
});

afterAll(() => {
  if (directory) rmSync(directory, { recursive: true, force: true });
});

const of = (session: string): MinedCandidate[] =>
  report.candidates.filter((candidate) => candidate.sessions.includes(session));

describe('mining sessions run against the dev server', () => {
  it('finds the hand-off, with the call the session was handed off right after', () => {
    const [handoff, ...others] = of(sessions.handoff);
    expect(others).toEqual([]);
    expect(handoff).toMatchObject({ kind: 'handoff', tool: 'get_order', code: 'OK', caller: 'support-bot' });
    expect(handoff!.rawArguments).toBe('{"order_id":"ORD-1002"}');
    expect(handoff!.why[0]).toMatch(
      /^the session was handed off to a human \d+ (ms|s) after this call \(get_order, OK\)$/,
    );
    expect(handoff!.handoff!.afterMs).toBeLessThan(60_000);
  });

  it("finds the denial, with the approver's reason and the payload that was denied", () => {
    const [denial, ...others] = of(sessions.denied);
    expect(others).toEqual([]);
    expect(denial).toMatchObject({
      kind: 'denial',
      tool: 'refund_order',
      code: 'APPROVAL_DENIED',
      rawArguments: harness.refundArguments(),
      callIds: [deniedCall.callId],
      denial: { approver: 'alice', reason: denialReason },
      why: [`alice denied the approval: "${denialReason}"`],
    });
  });

  it('finds the loop, with every code it got and the user message the session kept', () => {
    const [loop, ...others] = of(sessions.loop);
    expect(others).toEqual([]);
    expect(loop).toMatchObject({
      kind: 'loop',
      tool: 'get_order',
      rawArguments: '{"order_id":"ORD-9999"}',
      loop: { times: 4, inARow: 4, codes: { ORDER_NOT_FOUND: 3, LOOP_DETECTED: 1 }, distinctArguments: 1 },
      // The fourth proposal, refused at admission, keeps the proposal's user message in its record.
      userMessage: messages.loop,
    });
    expect(loop!.why).toEqual([
      'get_order was proposed 4 times in one session (4 in a row; ORDER_NOT_FOUND x3, LOOP_DETECTED x1; the same arguments each time)',
    ]);
  });

  it('finds each invalid payload, raw as the model sent it, with its code', () => {
    const found = of(sessions.invalid).map((candidate) => [
      candidate.kind,
      candidate.tool,
      candidate.code,
      candidate.rawArguments,
    ]);
    expect(found).toEqual(
      expect.arrayContaining([
        ['rejected-arguments', 'refund_order', 'INVALID_ARGUMENTS', invalidArguments],
        ['rejected-arguments', 'get_order', 'INVALID_JSON', unparseableArguments],
      ]),
    );
    expect(found).toHaveLength(2);
    const invalid = of(sessions.invalid).find((candidate) => candidate.code === 'INVALID_ARGUMENTS')!;
    expect(invalid.why[0]).toMatch(/^rejected with INVALID_ARGUMENTS: .*amount_cents/);
  });

  it('finds nothing in the clean session, although it read its end', () => {
    expect(of(sessions.clean)).toEqual([]);
    expect(report.sessionEnds!.read).toBeGreaterThanOrEqual(2);
    expect(report.sessionEnds!.handoffs).toBe(1);
  });

  it('ranks the hand-off and the denial before the loop, and the loop before the invalid payloads', () => {
    expect(report.candidates.map((candidate) => candidate.kind)).toEqual([
      'handoff',
      'denial',
      'loop',
      'rejected-arguments',
      'rejected-arguments',
    ]);
  });

  it("keeps the user message of a call that ran in the call's audit record", async () => {
    const [record] = await harness.audit.recordsOfSession(sessions.handoff);
    expect(record?.userMessage).toBe(messages.handoff);
    expect(of(sessions.handoff)[0]!.userMessage).toBe(messages.handoff);
    expect(of(sessions.denied)[0]!.userMessage).toBe(messages.denied);
  });

  it('writes the case file skeleton with `toolgate mine --out`, and lists the candidates with why', async () => {
    cli.useHarnessFiles();
    // The worker's own audit store, next to the harness's keys.
    process.env.TOOLGATE_TEST_AUDIT = join(harness.keysDirectory, '..', 'audit.sqlite');
    const out = join(directory, 'mined.json');

    const mined = await cli.run('mine', '--since', since.toISOString(), '--out', out);

    expect(mined.error).toBe('');
    expect(mined.code).toBe(0);
    expect(mined.out).toContain('1. [handoff] get_order -> OK (support-bot)');
    expect(mined.out).toContain(`why:       alice denied the approval: "${denialReason}"`);
    expect(mined.out).toContain(`wrote 5 case(s) to label to ${out}`);
    const skeleton = JSON.parse(readFileSync(out, 'utf8')) as CaseFileSkeleton;
    expect(skeleton.caller).toBe('support-bot');
    expect(skeleton.cases.map((entry) => entry.tags)).toEqual([
      ['mined', 'handoff'],
      ['mined', 'denial'],
      ['mined', 'loop'],
      ['mined', 'rejected-arguments'],
      ['mined', 'rejected-arguments'],
    ]);
    expect(skeleton.cases.map((entry) => entry.id)).toEqual(
      report.candidates.map((candidate) => `mined-${candidate.id}`),
    );
    for (const entry of skeleton.cases) {
      expect(entry.expectedTool).toBe('TODO: a tool name, or null when no tool should be called');
      expect(entry.criticalArguments).toEqual({});
    }
    expect(skeleton.cases[1]!.note).toContain(denialReason);
    expect(skeleton.cases[2]!.userMessage).toBe(messages.loop);
    // In the selection suite's format as it is.
    expect(parseSelectionCases({ source: out, value: skeleton }).cases).toHaveLength(5);

    const again = await cli.run('mine', '--since', since.toISOString(), '--out', out);
    expect(again.code).toBe(2);
    expect(again.error).toContain('OUTPUT_EXISTS');

    const json = await cli.run('mine', '--since', since.toISOString(), '--json');
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.out) as MiningReport;
    expect(parsed.candidates.map((candidate) => candidate.id)).toEqual(
      report.candidates.map((candidate) => candidate.id),
    );
  });
});
