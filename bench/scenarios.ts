// The calls the bench times, each as an agent (or a bare Temporal client) would make it.
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { BenchHarness } from './bench-harness';
import { benchApprover, benchCallers } from './bench-policy';
import type { bareLocalRead, bareRead, bareRefund, shapedCall as shapedCallWorkflow } from './bare-workflows';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { Order } from '../examples/orders/orders-api-client';
import { shapedAttributes, shapedNames } from './shaped-names';

/** What one call answered: whether it is the answer the scenario expects, and its code. */
export interface Outcome {
  ok: boolean;
  code: string;
}

/**
 * One simulated caller. `prepare` does the untimed bookkeeping before a call (ending a full
 * session and opening the next), `call` is what is timed, `close` ends what is still open.
 */
export interface SimulatedCaller {
  prepare(): Promise<void>;
  call(): Promise<Outcome>;
  close(): Promise<void>;
}

/** A conversation's length: a new session every this many calls, the old one ended as a harness would. */
export const callsPerSession = 8;

/** The order every read asks for. */
export const readOrderId = 'ORD-1001';
/** The order the approved refunds are taken from (90000 BRL cents refundable after a reset). */
export const refundOrderId = 'ORD-1003';

/** An agent calling one tool through toolgate, in conversations of {@link callsPerSession} calls. */
export function governedCaller(input: {
  harness: BenchHarness;
  caller: string;
  tool: string;
  /** The arguments, or the arguments of the session's n-th call (1-based): a write needs distinct ones. */
  arguments: string | ((callInSession: number) => string);
  expectedCode: string;
  label: string;
}): SimulatedCaller {
  const { harness } = input;
  let session: string | undefined;
  let used = 0;
  const end = async (): Promise<void> => {
    if (session === undefined) return;
    const ended = session;
    session = undefined;
    await harness.client.endSession(ended, { reason: 'bench conversation over', caller: input.caller });
  };
  return {
    prepare: async () => {
      if (used >= callsPerSession) await end();
      if (session === undefined) {
        session = `bench-${input.label}-${randomUUID()}`;
        used = 0;
      }
    },
    call: async () => {
      if (session === undefined) throw new Error('prepare() opens the session before call()');
      used++;
      const result = await harness.client.call({
        session,
        caller: input.caller,
        tool: input.tool,
        arguments: typeof input.arguments === 'string' ? input.arguments : input.arguments(used),
      });
      return { ok: result.code === input.expectedCode, code: result.code };
    },
    close: end,
  };
}

/** The governed read: `get_order` of ORD-1001 by a read-only caller. */
export function governedReader(harness: BenchHarness): SimulatedCaller {
  return governedCaller({
    harness,
    caller: benchCallers.reader,
    tool: 'get_order',
    arguments: JSON.stringify({ order_id: readOrderId }),
    expectedCode: 'OK',
    label: 'read',
  });
}

/** A refund of `cents` from ORD-1003, the arguments the governed and the bare write both send. */
function refundArguments(cents: number): string {
  return JSON.stringify({ order_id: refundOrderId, amount_cents: cents, currency: 'BRL', reason: 'damaged' });
}

/**
 * The governed write: a refund of 1 to 8 cents (the session's n-th call) by a caller whose autonomy
 * covers it, so no approval: the whole pipeline, a credential minted, the refund applied and read back.
 */
export function governedWriter(harness: BenchHarness): SimulatedCaller {
  return governedCaller({
    harness,
    caller: benchCallers.refunder,
    tool: 'refund_order',
    arguments: (callInSession) => refundArguments(callInSession),
    expectedCode: 'OK',
    label: 'write',
  });
}

/** The most one governed or bare write takes from ORD-1003, in cents. */
export const writeCentsPerCall = callsPerSession;

/** A refund of 25.9 cents: refused at step 3 (`INVALID_ARGUMENTS`), before any backend. */
export const invalidRefundArguments = JSON.stringify({
  order_id: readOrderId,
  amount_cents: 25.9,
  currency: 'BRL',
  reason: 'damaged',
});

/** The governed rejection: a refund of 25.9 (not whole cents) by a caller allowed to refund. */
export function governedRejecter(harness: BenchHarness): SimulatedCaller {
  return governedCaller({
    harness,
    caller: benchCallers.refunder,
    tool: 'refund_order',
    arguments: invalidRefundArguments,
    expectedCode: 'INVALID_ARGUMENTS',
    label: 'reject',
  });
}

/** The bare baseline: start a workflow that reads the order in one activity (or local activity), wait for it. */
export function bareCaller(input: {
  harness: BenchHarness;
  workflow: 'bareRead' | 'bareLocalRead' | 'bareRefund';
}): SimulatedCaller {
  const { harness } = input;
  let calls = 0;
  return {
    prepare: async () => {},
    call: async () => {
      if (input.workflow === 'bareRefund') {
        // The same refunds as the governed write's: 1 to 8 cents, a fresh idempotency key each.
        const amountCents = (calls++ % callsPerSession) + 1;
        const refund = await harness.temporal.workflow.execute<typeof bareRefund>('bareRefund', {
          taskQueue: harness.bareTaskQueue,
          workflowId: `bench-bareRefund-${randomUUID()}`,
          args: [{ orderId: refundOrderId, amountCents }],
        });
        return { ok: refund.amountCents === amountCents, code: 'OK' };
      }
      const order = await harness.temporal.workflow.execute<typeof bareRead | typeof bareLocalRead>(
        input.workflow,
        {
          taskQueue: harness.bareTaskQueue,
          workflowId: `bench-${input.workflow}-${randomUUID()}`,
          args: [{ orderId: readOrderId }],
        },
      );
      return { ok: order.orderId === readOrderId, code: 'OK' };
    },
    close: async () => {},
  };
}

/**
 * The bare baseline shaped like a governed read (`shapedSession`, `shapedCall`): per call, an admission
 * update-with-start on the conversation's session, then the call's own update-with-start with the
 * governed call's start options, in conversations of {@link callsPerSession} calls ended like toolgate's.
 */
export function shapedCaller(
  harness: BenchHarness,
  /**
   * What-ifs of the shape: `no-report` admits each call but its last step signals nothing (what the
   * session's second task costs; carrying the outcome with the next admission instead would add to the
   * admission's own step, not measured here); `no-session` runs the call alone, with no admission at all.
   */
  variant: 'full' | 'no-report' | 'no-session' = 'full',
): SimulatedCaller & { lastIds(): { session: string; call: string } } {
  let session: string | undefined;
  let used = 0;
  const last = { session: '', call: '' };
  const caller = 'bench-shaped';
  // As toolgate's client starts a session on its first use (and ends one that never started alike).
  const sessionStart = (id: string) =>
    new WithStartWorkflowOperation('shapedSession', {
      workflowId: id,
      taskQueue: harness.shapedTaskQueue,
      args: [],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `session of ${caller}`,
      typedSearchAttributes: [
        { key: shapedAttributes.sessionId, value: id },
        { key: shapedAttributes.caller, value: caller },
      ],
    });
  const end = async (): Promise<void> => {
    if (session === undefined) return;
    const ended = session;
    session = undefined;
    if (variant === 'no-session') return;
    await harness.temporal.workflow.executeUpdateWithStart(shapedNames.end, {
      updateId: `end-${ended}`,
      startWorkflowOperation: sessionStart(ended),
    });
  };
  /** What toolgate's messages carry besides their ids: the proposal, the caller's signature, the ticket. */
  const request = (proposalId: string, session: string) => ({
    proposalId,
    proposal: {
      session,
      caller,
      tool: 'get_order',
      arguments: JSON.stringify({ order_id: readOrderId }),
    },
    signature: 'f'.repeat(128),
  });
  const admit = async (input: { session: string; proposalId: string }): Promise<boolean> => {
    if (variant === 'no-session') return true;
    const admission = await harness.temporal.workflow.executeUpdateWithStart(shapedNames.admit, {
      args: [{ ...request(input.proposalId, input.session), callId: `bench-shaped-call-${input.session}` }],
      updateId: `admit-${input.proposalId}`,
      startWorkflowOperation: sessionStart(input.session),
    });
    return (admission as { admitted?: boolean }).admitted === true;
  };
  return {
    prepare: async () => {
      if (used >= callsPerSession) await end();
      if (session === undefined) {
        session = `bench-shaped-session-${randomUUID()}`;
        used = 0;
      }
    },
    call: async () => {
      if (session === undefined) throw new Error('prepare() opens the session before call()');
      used++;
      const proposalId = randomUUID();
      last.session = session;
      // Reads of the same order in one conversation share a call id, as toolgate's do: each is a new run.
      last.call = `bench-shaped-call-${session}`;
      if (!(await admit({ session, proposalId }))) return { ok: false, code: 'NOT_ADMITTED' };
      const order = await harness.temporal.workflow.executeUpdateWithStart<
        typeof shapedCallWorkflow,
        Order,
        [unknown]
      >(shapedNames.propose, {
        args: [request(proposalId, session)],
        updateId: proposalId,
        startWorkflowOperation: new WithStartWorkflowOperation('shapedCall', {
          workflowId: last.call,
          taskQueue: harness.shapedTaskQueue,
          args: [
            {
              ...request(proposalId, session),
              admission: 'f'.repeat(220),
              orderId: readOrderId,
              ...(variant === 'full' ? { sessionWorkflowId: session } : {}),
            },
          ],
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          staticSummary: `get_order for ${caller}`,
          memo: { argumentsDigest: randomUUID() },
          typedSearchAttributes: [
            { key: shapedAttributes.toolName, value: 'get_order' },
            { key: shapedAttributes.caller, value: caller },
            { key: shapedAttributes.sessionId, value: session },
            { key: shapedAttributes.approvalState, value: 'none' },
          ],
        }),
      });
      return { ok: order.orderId === readOrderId, code: 'OK' };
    },
    close: end,
    lastIds: () => ({ ...last }),
  };
}

/** The timings of one approved refund, in milliseconds. */
export interface DecisionTimings {
  /** Proposal until the agent has APPROVAL_PENDING. */
  pendingMs: number;
  /** `ApprovalAdmin.decide` (query the round, sign, send the update) until it resolves accepted. */
  decideMs: number;
  /** Decision accepted until the orders service answers the refund by its key (polled every ~1 ms). */
  visibleMs: number;
  /** Decision accepted until the refund's `createdAt` in the orders service (same clock; may be < 0). */
  committedMs: number;
  /** Decision accepted until the call's final result (what the agent would read back). */
  resultMs: number;
}

const effectTimeoutMs = 30_000;

/**
 * One refund that needs approval, approved at once: proposed in a fresh session by a caller whose
 * autonomy is below the refund's risk, approved by the bench approver, then watched until applied.
 */
export async function decisionToEffect(input: {
  harness: BenchHarness;
  amountCents: number;
}): Promise<DecisionTimings> {
  const { harness } = input;
  const session = `bench-approval-${randomUUID()}`;
  try {
    const proposedAt = performance.now();
    const pending = await harness.client.call({
      session,
      caller: benchCallers.approvee,
      tool: 'refund_order',
      arguments: JSON.stringify({
        order_id: refundOrderId,
        amount_cents: input.amountCents,
        currency: 'BRL',
        reason: 'damaged',
      }),
    });
    const pendingAt = performance.now();
    if (pending.code !== 'APPROVAL_PENDING')
      throw new Error(`expected APPROVAL_PENDING, got ${pending.code}`);
    const decision = await harness.admin.decide({
      callId: pending.callId,
      approver: benchApprover,
      privateKey: harness.approverKey,
      decision: 'approve',
      reason: 'bench',
    });
    const acceptedAt = performance.now();
    const acceptedWallMs = Date.now();
    if (!decision.accepted) throw new Error(`the approval was refused: ${decision.code}`);
    let resultAt = Number.NaN;
    const final = harness.client.result(pending.callId).then((result) => {
      resultAt = performance.now();
      return result;
    });
    let visibleAt: number | undefined;
    let createdAt = '';
    while (visibleAt === undefined) {
      const refund = await harness.orders.api.findRefundByKey({ idempotencyKey: pending.callId });
      if (refund) {
        visibleAt = performance.now();
        createdAt = refund.createdAt;
      } else if (performance.now() - acceptedAt > effectTimeoutMs) {
        throw new Error(`the approved refund ${pending.callId} was not applied within ${effectTimeoutMs} ms`);
      } else {
        await delay(1);
      }
    }
    const result = await final;
    if (result?.code !== 'OK') throw new Error(`the approved refund ended ${String(result?.code)}`);
    return {
      pendingMs: pendingAt - proposedAt,
      decideMs: acceptedAt - pendingAt,
      visibleMs: visibleAt - acceptedAt,
      committedMs: Date.parse(createdAt) - acceptedWallMs,
      resultMs: resultAt - acceptedAt,
    };
  } finally {
    await harness.client.endSession(session).catch(() => undefined);
  }
}
