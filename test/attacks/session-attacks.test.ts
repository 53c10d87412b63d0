import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ordersContracts } from '../../examples/orders/orders-contracts';
import type { ToolResult } from 'toolgate';
import type { Proposal, ProposeRequest } from 'toolgate/protocol';
import { keyPaths, readPrivateKey, ToolGateClient } from 'toolgate';
import { capProposal, deriveCallId, proposeUpdate, signValue, toolCallWorkflowType } from 'toolgate/protocol';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Attacks on session admission and on the proposal's signature: proposals unsigned, signed by the
// wrong caller, edited after signing, sent into someone else's session or call, sent after the
// session ended, or rewritten to slip past the loop guard. Each asserts the refusal code and the
// orders service's count of applied refunds (the backend's truth), and, where it matters, that the
// session spent no step on it.

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const appliedRefunds = () => harness.orders.api.refundCount();
const stats = (session: string) => harness.client.sessionStats(session);

const callerKey = (caller: string): KeyObject =>
  readPrivateKey(
    keyPaths({ directory: harness.keysDirectory, owner: { kind: 'caller', name: caller } }).privateKey,
  );

/** A client of the same deployment whose harness signs every proposal with `key` (none: unsigned). */
const clientSigningWith = (key: () => KeyObject | undefined): ToolGateClient =>
  new ToolGateClient({
    client: harness.temporal,
    tools: ordersContracts,
    taskQueue: harness.taskQueue,
    callerKey: key,
  });

const refundContract = ordersContracts.find((contract) => contract.name === 'refund_order')!;

/** A proposal built as the client builds it, with the call id it maps to. */
function proposalOf(input: { session: string; caller: string; tool?: string; arguments?: string }): {
  proposal: Proposal;
  callId: string;
} {
  const proposal = capProposal({
    session: input.session,
    caller: input.caller,
    tool: input.tool ?? 'refund_order',
    arguments: input.arguments ?? harness.refundArguments(),
  });
  const contract = ordersContracts.find((candidate) => candidate.name === proposal.tool);
  return { proposal, callId: deriveCallId({ proposal, idempotencyFields: contract?.idempotencyFields }) };
}

const signatureOf = (input: { callId: string; proposal: Proposal }, key: KeyObject): string =>
  signValue({ kind: 'proposal', value: { callId: input.callId, proposal: input.proposal }, privateKey: key });

/**
 * Delivers a proposal straight to the call workflow `callId` as a raw Temporal client can: it
 * starts the workflow, or joins the run that is there; the call's first step admits it.
 */
async function proposeRaw(input: {
  callId: string;
  proposal: Proposal;
  signature?: string;
}): Promise<ToolResult> {
  const request: ProposeRequest = {
    proposalId: randomUUID(),
    proposal: input.proposal,
    ...(input.signature !== undefined ? { signature: input.signature } : {}),
  };
  const response = await harness.temporal.workflow.executeUpdateWithStart(proposeUpdate, {
    args: [request],
    updateId: request.proposalId,
    startWorkflowOperation: new WithStartWorkflowOperation(toolCallWorkflowType, {
      workflowId: input.callId,
      taskQueue: harness.taskQueue,
      args: [request],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    }),
  });
  return response.result;
}

const read = (session: string, caller: string, orderId = 'ORD-1001') =>
  harness.client.call({ session, caller, tool: 'get_order', arguments: `{"order_id":"${orderId}"}` });

describe('proposals that are not the caller’s own use no step and apply nothing', () => {
  it('refuses unsigned proposals, and another caller’s signed ones, into a session test-refunder owns', async () => {
    const session = harness.newSession();
    expect((await read(session, 'test-refunder')).ok).toBe(true);

    const unsigned = await clientSigningWith(() => undefined).call({
      session,
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(unsigned).toMatchObject({ ok: false, code: 'UNAUTHENTICATED_CALLER', effect: 'none' });
    // support-bot signs with its own key, but the session is test-refunder's.
    const intruder = await harness.client.call({
      session,
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(intruder).toMatchObject({ ok: false, code: 'UNAUTHENTICATED_CALLER', effect: 'none' });

    expect(await stats(session)).toMatchObject({ caller: 'test-refunder', steps: 1 });
    expect((await stats(session)).codeCounts).toEqual({ OK: 1 });
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a proposal signed with support-bot’s key (or a stranger’s) claiming to be test-refunder', async () => {
    const session = harness.newSession();
    for (const key of [() => callerKey('support-bot'), () => generateKeyPairSync('ed25519').privateKey]) {
      const forged = await clientSigningWith(key).call({
        session,
        caller: 'test-refunder',
        tool: 'refund_order',
        arguments: harness.refundArguments(),
      });
      expect(forged).toMatchObject({ ok: false, code: 'UNAUTHENTICATED_CALLER', effect: 'none' });
    }
    expect(await appliedRefunds()).toBe(0);
    // The refused proposals neither claimed the session nor used a step: its owner starts at step 1.
    const untouched = await stats(session);
    expect(untouched.steps).toBe(0);
    expect(untouched.codeCounts).toEqual({});
    expect(untouched.caller).toBeUndefined();
    expect(
      await harness.client.call({
        session,
        caller: 'test-refunder',
        tool: 'refund_order',
        arguments: harness.refundArguments(),
      }),
    ).toMatchObject({ ok: true, effect: 'applied' });
    expect(await stats(session)).toMatchObject({ caller: 'test-refunder', steps: 1 });
    expect(await appliedRefunds()).toBe(1);
  });

  it('counts no unauthenticated proposal toward the circuit breaker, through the session or straight to a call', async () => {
    const session = harness.newSession();
    const unsigned = clientSigningWith(() => undefined);
    for (let attempt = 0; attempt < 4; attempt++) {
      const viaSession = await unsigned.call({
        session,
        caller: 'test-refunder',
        tool: 'refund_order',
        arguments: harness.refundArguments({ amount_cents: 100 + attempt }),
      });
      expect(viaSession.code).toBe('UNAUTHENTICATED_CALLER');
      const direct = await proposeRaw(
        proposalOf({
          session,
          caller: 'test-refunder',
          arguments: harness.refundArguments({ amount_cents: 200 + attempt }),
        }),
      );
      expect(direct).toMatchObject({ ok: false, code: 'UNAUTHENTICATED_CALLER', effect: 'none' });
    }
    const counted = await stats(session);
    expect(counted.steps).toBe(0);
    expect(counted.codeCounts).toEqual({});
    expect(counted.openCircuits).toEqual({});
    expect(await appliedRefunds()).toBe(0);
    const owner = await harness.client.call({
      session,
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(owner).toMatchObject({ ok: true, effect: 'applied' });
    expect(await appliedRefunds()).toBe(1);
  });
});

describe('proposals edited after signing', () => {
  // Signed by test-refunder, who may refund alone: an edit that got through would apply at once.
  const edits: [string, (proposal: Proposal) => Proposal][] = [
    [
      'its amount raised',
      (proposal) => ({ ...proposal, rawArguments: harness.refundArguments({ amount_cents: 9_000 }) }),
    ],
    [
      'its order changed',
      (proposal) => ({ ...proposal, rawArguments: harness.refundArguments({ order_id: 'ORD-1003' }) }),
    ],
    [
      'its tool changed',
      (proposal) => ({ ...proposal, tool: 'get_order', rawArguments: '{"order_id":"ORD-1001"}' }),
    ],
    ['its session changed', (proposal) => ({ ...proposal, session: `${proposal.session}-elsewhere` })],
    ['an intent id added', (proposal) => ({ ...proposal, intentId: 'intent-1' })],
  ];

  it.each(edits)(
    'refuses a proposal with %s, under either call id: UNAUTHENTICATED_CALLER',
    async (_label, edit) => {
      const session = harness.newSession();
      const original = proposalOf({
        session,
        caller: 'test-refunder',
        arguments: harness.refundArguments({ amount_cents: 100 }),
      });
      const signature = signatureOf(original, callerKey('test-refunder'));
      const proposal = edit(original.proposal);
      const contract = ordersContracts.find((candidate) => candidate.name === proposal.tool);
      // The attacker sends it under the call id the edited proposal maps to, and under the signed one.
      for (const callId of [
        deriveCallId({ proposal, idempotencyFields: contract?.idempotencyFields }),
        original.callId,
      ]) {
        expect(await proposeRaw({ callId, proposal, signature })).toMatchObject({
          ok: false,
          code: 'UNAUTHENTICATED_CALLER',
          effect: 'none',
        });
      }
      expect((await stats(proposal.session)).steps).toBe(0);
      expect(await appliedRefunds()).toBe(0);
    },
  );
});

describe('a context no harness attaches, signed with the caller’s own key', () => {
  // A raw Temporal client holding test-refunder's key signs whatever context it likes. The session
  // checks its shape before it fixes the conversation's end user: each is CONTEXT_INVALID, uses no
  // step, and leaves the session free for the context the real harness attaches.
  const manyClaims = Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`c${index}`, 'x']));
  const hostile: [string, unknown][] = [
    ['null', null],
    ['a string', 'CUS-1'],
    ['an end user with a NUL', { onBehalfOf: 'CUS-1\u0000' }],
    ['an end user with U+202E', { onBehalfOf: 'CUS-\u202e1' }],
    ['an end user of 129 characters', { onBehalfOf: 'C'.repeat(129) }],
    ['an unknown field', { onBehalfOf: 'CUS-1', role: 'admin' }],
    ['a __proto__ claim', JSON.parse('{"onBehalfOf":"CUS-1","claims":{"__proto__":"x"}}') as unknown],
    ['17 claims', { onBehalfOf: 'CUS-1', claims: manyClaims }],
    ['a claim of 1 MB', { onBehalfOf: 'CUS-1', claims: { note: 'x'.repeat(1 << 20) } }],
    ['a channel that is not kebab-case', { onBehalfOf: 'CUS-1', channel: 'End User' }],
  ];

  it.each(hostile)(
    'refuses %s with CONTEXT_INVALID, using no step and fixing nothing',
    async (_label, context) => {
      const session = harness.newSession();
      const built = proposalOf({
        session,
        caller: 'test-refunder',
        tool: 'get_order',
        arguments: '{"order_id":"ORD-1001"}',
      });
      const proposal = { ...built.proposal, context } as Proposal;
      const signature = signatureOf({ callId: built.callId, proposal }, callerKey('test-refunder'));
      const refused = await proposeRaw({ callId: built.callId, proposal, signature });
      expect(refused).toMatchObject({ ok: false, code: 'CONTEXT_INVALID', effect: 'none' });
      const before = await stats(session);
      expect(before.steps).toBe(0);
      expect(before).not.toHaveProperty('context');

      // The harness's own context is still the first the session fixes.
      const genuine = await harness.client.call({
        session,
        caller: 'test-refunder',
        tool: 'get_order',
        arguments: '{"order_id":"ORD-1001"}',
        context: { onBehalfOf: 'CUS-1', channel: 'end-user-chat' },
      });
      expect(genuine).toMatchObject({ ok: true, code: 'OK' });
      expect(await stats(session)).toMatchObject({
        steps: 1,
        context: { onBehalfOf: 'CUS-1', channel: 'end-user-chat' },
        codeCounts: { OK: 1 },
      });
      expect(await appliedRefunds()).toBe(0);
    },
  );
});

describe('a genuine proposal replayed elsewhere', () => {
  it('refuses test-refunder’s signed proposal for one session under another session’s call id, using no step anywhere', async () => {
    const signedFor = harness.newSession();
    const elsewhere = harness.newSession();
    expect((await read(elsewhere, 'test-refunder')).ok).toBe(true); // test-refunder owns it too
    const genuine = proposalOf({ session: signedFor, caller: 'test-refunder' });
    const signature = signatureOf(genuine, callerKey('test-refunder'));
    const other = proposalOf({ session: elsewhere, caller: 'test-refunder' });

    // The signature covers the call id: under another, it is not the caller's; nothing runs.
    const refused = await proposeRaw({ callId: other.callId, proposal: genuine.proposal, signature });
    expect(refused).toMatchObject({ ok: false, code: 'UNAUTHENTICATED_CALLER', effect: 'none' });
    expect(await stats(elsewhere)).toMatchObject({ steps: 1 });
    expect((await stats(elsewhere)).codeCounts).toEqual({ OK: 1 });
    expect((await stats(signedFor)).steps).toBe(0);
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('joining another caller’s running call', () => {
  it('refuses every proposal that reaches support-bot’s pending refund without support-bot’s signature', async () => {
    const session = harness.newSession();
    const pending = await harness.client.call({
      session,
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(pending).toMatchObject({ code: 'APPROVAL_PENDING' });
    const victim = proposalOf({ session, caller: 'support-bot' });
    expect(victim.callId).toBe(pending.callId);
    const own = proposalOf({ session: harness.newSession(), caller: 'test-refunder' });

    const attempts: { proposal: Proposal; signature?: string }[] = [
      { proposal: victim.proposal }, // support-bot's proposal, unsigned
      { proposal: victim.proposal, signature: signatureOf(victim, callerKey('test-refunder')) },
      {
        proposal: own.proposal,
        signature: signatureOf(
          { callId: pending.callId, proposal: own.proposal },
          callerKey('test-refunder'),
        ),
      },
    ];
    for (const attempt of attempts) {
      const result = await proposeRaw({ callId: pending.callId, ...attempt });
      expect(result).toMatchObject({ ok: false, code: 'UNAUTHENTICATED_CALLER', effect: 'none' });
      expect(result.data).toBeUndefined(); // nothing about the call (its preview) leaks to the intruder
    }
    // Through the client, test-refunder claiming support-bot is refused by the session first.
    const claimed = await clientSigningWith(() => callerKey('test-refunder')).call({
      session,
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(claimed).toMatchObject({ code: 'UNAUTHENTICATED_CALLER' });

    // The call is untouched: still pending, and applied once when approved.
    expect((await harness.admin.show(pending.callId))?.approval).toMatchObject({
      state: 'pending',
      approvals: [],
    });
    await harness.admin.decide({
      callId: pending.callId,
      approver: 'alice',
      privateKey: harness.approverKey('alice'),
      decision: 'approve',
      reason: 'checked',
    });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
  });
});

describe('proposals to an ended session', () => {
  it('refuses a signed refund in an ended session with SESSION_CLOSED and uses no step', async () => {
    const session = harness.newSession();
    expect((await read(session, 'test-refunder')).ok).toBe(true);
    await harness.client.endSession(session);
    // Ending it again changes nothing: still closed, the same reason.
    expect(await harness.client.endSession(session)).toMatchObject({ closed: true, closedReason: 'ended' });

    const refused = await harness.client.call({
      session,
      caller: 'test-refunder',
      tool: 'refund_order',
      arguments: harness.refundArguments(),
    });
    expect(refused).toMatchObject({ ok: false, code: 'SESSION_CLOSED', effect: 'none' });
    expect(await stats(session)).toMatchObject({ closed: true, steps: 1 });
    expect(await appliedRefunds()).toBe(0);
  });

  // A harness holding the caller's key starts a call workflow directly, skipping the client: the
  // call's first step admits it in its session all the same (docs/design.md step 0).
  it('never runs a signed refund sent straight to its call, past its ended session: SESSION_CLOSED', async () => {
    const session = harness.newSession();
    expect((await read(session, 'test-refunder')).ok).toBe(true);
    await harness.client.endSession(session);

    const proposal = proposalOf({ session, caller: 'test-refunder' });
    const result = await proposeRaw({
      ...proposal,
      signature: signatureOf(proposal, callerKey('test-refunder')),
    });
    expect(result).toMatchObject({ ok: false, code: 'SESSION_CLOSED', effect: 'none' });
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('a call workflow under an id that is not its proposal’s call id', () => {
  it('runs nothing and charges no session, even signed over that id with the caller’s key: SESSION_REQUIRED', async () => {
    const session = harness.newSession();
    const proposal = proposalOf({ session, caller: 'test-refunder' });
    // A look-alike id, signed over by a raw client holding the caller's key: the id is no key of this
    // proposal (its effect could collide with another call's), so its session is never asked.
    const lookAlike = { callId: `tc-${'a'.repeat(64)}`, proposal: proposal.proposal };
    const signature = signatureOf(lookAlike, callerKey('test-refunder'));
    const result = await proposeRaw({ ...lookAlike, signature });
    expect(result).toMatchObject({ ok: false, code: 'SESSION_REQUIRED', effect: 'none' });
    expect(await stats(session)).toMatchObject({ steps: 0, codeCounts: {} });
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('the loop guard and the step budget hold whatever the spelling (the call id is canonical)', () => {
  it('answers LOOP_DETECTED to the same read respelt with whitespace and escapes, under a loop limit of 2', async () => {
    const session = harness.newSession();
    const spellings = [
      '{"order_id":"ORD-1001"}',
      '  { "order_id" :\n "ORD-1001" }  ',
      '{"order_id":"\\u004fRD-1001"}',
    ];
    const results = [];
    for (const text of spellings) {
      results.push(
        await harness.client.call({ session, caller: 'loopy-bot', tool: 'get_order', arguments: text }),
      );
    }
    expect(results.map((result) => result.code)).toEqual(['OK', 'OK', 'LOOP_DETECTED']);
    expect(new Set(results.map((result) => result.callId)).size).toBe(1);
  });

  it('answers LOOP_DETECTED to the fourth spelling of one refund and applies it once', async () => {
    const session = harness.newSession();
    const spellings = [
      '{"order_id":"ORD-1001","amount_cents":2590,"currency":"BRL","reason":"damaged"}',
      '{"reason":"damaged","currency":"BRL","amount_cents":2590,"order_id":"ORD-1001"}',
      '{ "order_id": "ORD-1001", "amount_cents": 2.59e3, "currency": "BRL", "reason": "damaged" }',
      // The reason is not part of a refund's idempotency key: the same refund, told differently.
      '{"order_id":"ORD-1001","amount_cents":2590,"currency":"BRL","reason":"customer_request"}',
    ];
    const results = [];
    for (const text of spellings) {
      results.push(
        await harness.client.call({
          session,
          caller: 'test-refunder',
          tool: 'refund_order',
          arguments: text,
        }),
      );
    }
    expect(results.map((result) => result.code)).toEqual(['OK', 'OK', 'OK', 'LOOP_DETECTED']);
    expect(results.slice(1, 3).every((result) => result.replayed === true)).toBe(true);
    expect(new Set(results.map((result) => result.callId)).size).toBe(1);
    expect(await appliedRefunds()).toBe(1);
    expect((await harness.orders.api.getOrder({ orderId: 'ORD-1001' })).refundedCents).toBe(2590);
    expect(refundContract.idempotencyFields).not.toContain('reason');
  });

  it('answers STEP_LIMIT to a third proposal under a budget of 2, however it is spelt', async () => {
    const session = harness.newSession();
    const spellings = ['{"order_id":"ORD-1001"}', '{"order_id":"ORD-1002"}', ' {"order_id" : "ORD-1003"} '];
    const codes = [];
    for (const text of spellings) {
      codes.push(
        (await harness.client.call({ session, caller: 'thrifty-bot', tool: 'get_order', arguments: text }))
          .code,
      );
    }
    expect(codes).toEqual(['OK', 'OK', 'STEP_LIMIT']);
    expect((await stats(session)).steps).toBe(3);
  });
});
