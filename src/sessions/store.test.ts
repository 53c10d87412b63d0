import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import type { CallContext } from '../calls/call-context';
import { capProposal } from '../calls/proposal';
import type { SessionStore } from './store';
import { openSqliteSessionStore } from './store';

// The session store (issue 28): a session's state in SQLite, one transaction per admission and per
// outcome. Real files, real processes: the step budget holds exactly across two of them.
// (Not yet wired into the call workflow: see issue 28.)

const run = promisify(execFile);
const limits = { stepBudget: 25, loopLimit: 3, circuitThreshold: 3, idleTimeoutMs: 60_000 };
const directories: string[] = [];
type OpenStore = SessionStore & { close(): Promise<void> };
const stores: OpenStore[] = [];

afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function storeFile(): string {
  const directory = mkdtempSync(join(tmpdir(), 'toolgate-sessions-'));
  directories.push(directory);
  return join(directory, 'sessions.sqlite');
}

function open(path = storeFile()): OpenStore {
  const store = openSqliteSessionStore({ path });
  stores.push(store);
  return store;
}

let proposals = 0;
function ask(
  store: SessionStore,
  input: {
    session: string;
    caller?: string;
    tool?: string;
    order?: string;
    context?: CallContext;
    signed?: boolean;
    proposalId?: string;
    now?: number;
    limits?: typeof limits;
  },
) {
  const order = input.order ?? 'ORD-1001';
  const tool = input.tool ?? 'get_order';
  const proposal = capProposal({
    session: input.session,
    caller: input.caller ?? 'support-bot',
    tool,
    arguments: JSON.stringify({ order_id: order }),
    ...(input.context ? { context: input.context } : {}),
  });
  return store.admit({
    proposalId: input.proposalId ?? `p-${++proposals}`,
    session: input.session,
    callId: `tc-${tool}-${order}`,
    proposal,
    signed: input.signed ?? true,
    limits: input.limits ?? limits,
    ...(input.now !== undefined ? { now: input.now } : {}),
  });
}

const codeOf = (answer: Awaited<ReturnType<SessionStore['admit']>>) =>
  answer.admitted ? 'ADMITTED' : answer.result.code;

/**
 * One process of the concurrency test, as a script for `node -e`: it opens the SQLite file it is
 * given and asks, all at once, for the admission of `count` proposals of one session, starting at the
 * instant given (so that two processes' transactions interleave); prints the answers' codes as JSON.
 */
function childScript(): string {
  const module = (name: string) => JSON.stringify(join(__dirname, name));
  return `(async () => {
    const { openSqliteSessionStore } = require(${module('store.ts')});
    const { capProposal } = require(${module('../calls/proposal.ts')});
    const [path, session, first, count, budget, startAt] = process.argv.slice(1);
    const store = openSqliteSessionStore({ path });
    const limits = { stepBudget: Number(budget), loopLimit: 3, circuitThreshold: 3, idleTimeoutMs: 60000 };
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(startAt) - Date.now())));
    const answers = await Promise.all(
      Array.from({ length: Number(count) }, async (_, index) => {
        // One admission per turn of the event loop: the other process takes the lock in between.
        await new Promise((resolve) => setImmediate(resolve));
        const order = 'ORD-' + String(Number(first) + index).padStart(4, '0');
        const proposal = capProposal({ session, caller: 'support-bot', tool: 'get_order', arguments: JSON.stringify({ order_id: order }) });
        return store.admit({ proposalId: session + '-' + order, session, callId: 'tc-get_order-' + order, proposal, signed: true, limits });
      }),
    );
    await store.close();
    process.stdout.write(JSON.stringify(answers.map((answer) => (answer.admitted ? 'ADMITTED' : answer.result.code))));
  })();`;
}

describe('the step budget across processes', () => {
  it('admits exactly 25 of 40 proposals sent at once by two processes on one SQLite file', async () => {
    const path = storeFile();
    // Created (and its tables) before the children race for it.
    await openSqliteSessionStore({ path }).close();
    const child = childScript();
    const startAt = String(Date.now() + 2_500);
    const answers = await Promise.all(
      ['1000', '1020'].map(async (first) => {
        const { stdout } = await run(process.execPath, [
          '--import',
          'tsx',
          '--input-type=commonjs',
          '-e',
          child,
          path,
          'parallel-turn',
          first,
          '20',
          '25',
          startAt,
        ]);
        return JSON.parse(stdout) as string[];
      }),
    );
    const all = answers.flat();
    expect(all).toHaveLength(40);
    expect(all.filter((code) => code === 'ADMITTED')).toHaveLength(25);
    expect(all.filter((code) => code === 'STEP_LIMIT')).toHaveLength(15);
    // Both processes were admitted some: their transactions interleaved, not one after the other.
    expect(answers.every((codes) => codes.includes('ADMITTED'))).toBe(true);
    const stats = await open(path).stats({ session: 'parallel-turn', limits });
    expect(stats).toMatchObject({ caller: 'support-bot', steps: 40, codeCounts: { STEP_LIMIT: 15 } });
  }, 60_000);
});

describe('admission', () => {
  it('answers a proposal asked again with the same answer, counting its step once', async () => {
    const store = open();
    const first = await ask(store, { session: 's', proposalId: 'again' });
    const second = await ask(store, { session: 's', proposalId: 'again' });
    expect(first).toEqual({ admitted: true, step: 1 });
    expect(second).toEqual(first);
    expect((await store.stats({ session: 's' })).steps).toBe(1);
    // The same proposal id for another call is not that proposal: refused, nothing counted.
    const other = await ask(store, { session: 's', proposalId: 'again', order: 'ORD-1002' });
    expect(codeOf(other)).toBe('UNAUTHENTICATED_CALLER');
    expect((await store.stats({ session: 's' })).steps).toBe(1);
  });

  it('refuses what is not the owner’s, or not signed, using no step and fixing nothing', async () => {
    const store = open();
    expect(codeOf(await ask(store, { session: 's', signed: false }))).toBe('UNAUTHENTICATED_CALLER');
    expect(await store.stats({ session: 's' })).not.toHaveProperty('caller');
    expect(codeOf(await ask(store, { session: 's', caller: 'support-bot' }))).toBe('ADMITTED');
    expect(codeOf(await ask(store, { session: 's', caller: 'readonly-bot', order: 'ORD-1002' }))).toBe(
      'UNAUTHENTICATED_CALLER',
    );
    expect(await store.stats({ session: 's' })).toMatchObject({
      caller: 'support-bot',
      steps: 1,
      codeCounts: {},
    });
  });

  it('fixes the context at the first admission: another end user is CONTEXT_MISMATCH, a hostile one CONTEXT_INVALID', async () => {
    const store = open();
    const hostile = JSON.parse('{"onBehalfOf":"CUS-1","claims":{"__proto__":"x"}}') as CallContext;
    expect(codeOf(await ask(store, { session: 's', context: hostile }))).toBe('CONTEXT_INVALID');
    const cus1 = { onBehalfOf: 'CUS-1', channel: 'end-user-chat' };
    expect(codeOf(await ask(store, { session: 's', context: cus1 }))).toBe('ADMITTED');
    expect(codeOf(await ask(store, { session: 's', context: { ...cus1, onBehalfOf: 'CUS-2' } }))).toBe(
      'CONTEXT_MISMATCH',
    );
    expect(await store.stats({ session: 's' })).toMatchObject({ steps: 1, context: cus1 });
  });

  it('guards loops per call id and closes an idle session at its next admission', async () => {
    const store = open();
    const codes = [];
    for (let index = 0; index < 4; index++)
      codes.push(codeOf(await ask(store, { session: 's', now: 1_000 })));
    expect(codes).toEqual(['ADMITTED', 'ADMITTED', 'ADMITTED', 'LOOP_DETECTED']);
    // 60 s of idle timeout: a proposal 61 s after the last one finds the session closed.
    expect(codeOf(await ask(store, { session: 's', order: 'ORD-1002', now: 62_001 }))).toBe('SESSION_CLOSED');
    expect(await store.stats({ session: 's' })).toMatchObject({
      closed: true,
      closedReason: 'idle',
      steps: 4,
    });
  });
});

describe('outcomes', () => {
  it('opens a circuit at three consecutive failures of one code, counting each run once, until a reset', async () => {
    const store = open();
    await ask(store, { session: 's', tool: 'constructor' });
    const fail = (runId: string) =>
      store.countOutcome({
        session: 's',
        callId: 'tc-1',
        runId,
        tool: 'constructor',
        code: 'INVALID_ARGUMENTS',
        ok: false,
      });
    expect(await fail('r1')).toEqual({});
    expect(await fail('r1')).toEqual({}); // the same run reported again
    expect(await fail('r2')).toEqual({});
    expect((await fail('r3')).opened).toMatchObject({ code: 'INVALID_ARGUMENTS', count: 3 });
    expect(codeOf(await ask(store, { session: 's', tool: 'constructor', order: 'ORD-1003' }))).toBe(
      'CIRCUIT_OPEN',
    );
    expect((await store.stats({ session: 's' })).codeCounts).toEqual({
      INVALID_ARGUMENTS: 3,
      CIRCUIT_OPEN: 1,
    });
    await store.reset({ session: 's', tool: 'constructor' });
    expect(codeOf(await ask(store, { session: 's', tool: 'constructor', order: 'ORD-1004' }))).toBe(
      'ADMITTED',
    );
  });

  it('records the untrusted text a call read, and an ended session refuses what follows', async () => {
    const store = open();
    await ask(store, { session: 's' });
    await store.countOutcome({
      session: 's',
      callId: 'tc-get_order-ORD-1001',
      runId: 'r1',
      tool: 'get_order',
      code: 'OK',
      ok: true,
      untrusted: ['get_order.note'],
      now: Date.parse('2026-12-07T14:02:00Z'),
    });
    const admitted = await ask(store, { session: 's', order: 'ORD-1002' });
    expect(admitted).toMatchObject({
      admitted: true,
      untrusted: [
        { source: 'get_order.note', callId: 'tc-get_order-ORD-1001', at: '2026-12-07T14:02:00.000Z' },
      ],
    });
    expect(await store.end({ session: 's', caller: 'intruder' })).toEqual({
      ended: false,
      owner: 'support-bot',
    });
    expect(await store.end({ session: 's', caller: 'support-bot' })).toMatchObject({
      ended: true,
      stats: { closed: true, closedReason: 'ended' },
    });
    expect(await store.list()).toMatchObject([{ session: 's', closed: true, closedReason: 'ended' }]);
    expect(codeOf(await ask(store, { session: 's', order: 'ORD-1003' }))).toBe('SESSION_CLOSED');
  });
});
