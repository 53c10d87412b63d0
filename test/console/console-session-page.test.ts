import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalsConsole } from 'toolgate/console';
import { ConsoleVisitor, startHarnessConsole } from '../support/console-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// A session's page in the approvals console: what its state in the audit store says (the steps of
// its caller's budget, its open circuits, the operators' resets) and its calls, each linking to its
// page; a session nothing happened in is SESSION_NOT_FOUND.

let harness: ToolGateHarness;
let approvals: ApprovalsConsole;
let alice: ConsoleVisitor;
useHarness((started) => (harness = started));

beforeAll(async () => {
  approvals = await startHarnessConsole(harness);
  alice = new ConsoleVisitor(approvals.url, 'alice');
  await alice.enrol(harness);
  expect(await alice.login()).toMatchObject({ status: 200, body: { ok: true } });
});

afterAll(async () => {
  await approvals?.stop();
});

const sessionPage = async (session: string) => {
  const response = await alice.request(`/sessions/${encodeURIComponent(session)}`);
  return { status: response.status, page: await response.text() };
};

describe('the session page', () => {
  it('shows the steps used of the caller’s own budget, and every call of the session', async () => {
    const session = harness.newSession();
    const read = (orderId: string) =>
      harness.client.call({
        session,
        caller: 'thrifty-bot',
        tool: 'get_order',
        arguments: `{"order_id":"${orderId}"}`,
      });
    const first = await read('ORD-1001');
    const second = await read('ORD-1002');
    expect([first.ok, second.ok]).toEqual([true, true]);
    expect((await read('ORD-1003')).code).toBe('STEP_LIMIT');
    // Another caller's proposal into this session is refused and recorded under its id: not its call.
    const foreign = await harness.client.call({
      session,
      caller: 'test-refunder',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1001"}',
    });
    expect(foreign.ok).toBe(false);
    expect((await harness.audit.recordsOfSession(session)).map((record) => record.callId)).toContain(
      foreign.callId,
    );

    const { status, page } = await sessionPage(session);
    expect(status).toBe(200);
    expect(page).toContain(`<code class="wrap" id="session-id">${session}</code>`);
    expect(page).toContain('<strong id="session-caller">thrifty-bot</strong>');
    // thrifty-bot's policy gives it 2 steps (the default is 25): the page shows the limits the session
    // was judged by, and counts what the client's stats count (the refused third proposal too).
    expect(await harness.client.sessionStats(session)).toMatchObject({ steps: 3, stepBudget: 2 });
    expect(page).toContain(
      '<span id="session-steps">3 steps proposed, budget 2 (spent: what follows is refused STEP_LIMIT)</span>',
    );
    for (const call of [first, second]) expect(page).toContain(`href="/calls/${call.callId}"`);
    expect(page).not.toContain(foreign.callId);
    expect(page).toContain('No tool is refused in this session.');

    // The call's page links to its session.
    const callPage = await (await alice.request(`/calls/${first.callId}`)).text();
    expect(callPage).toContain(`href="/sessions/${encodeURIComponent(session)}"`);
  });

  it('shows an open circuit, then the operator’s reset that closed it', async () => {
    const session = harness.newSession();
    const refund = (overrides: Record<string, unknown>) =>
      harness.client.call({
        session,
        caller: 'test-refunder',
        tool: 'refund_order',
        arguments: harness.refundArguments(overrides),
      });
    for (let index = 0; index < 3; index++) {
      expect((await refund({ amount_cents: 25.9 + index })).code).toBe('INVALID_ARGUMENTS');
    }
    expect((await refund({})).code).toBe('CIRCUIT_OPEN');
    const open = (await sessionPage(session)).page;
    expect(open).toContain('<strong>refund_order</strong>: INVALID_ARGUMENTS × 3');
    expect(open).not.toContain('No tool is refused in this session.');

    await harness.client.resetSession(session, {
      tool: 'refund_order',
      operator: 'olivia',
      operatorKey: harness.operatorKey('olivia'),
      reason: 'the schema was fixed',
    });
    const reset = (await sessionPage(session)).page;
    expect(reset).toContain('No tool is refused in this session.');
    expect(reset).toMatch(/<strong>olivia<\/strong> reset refund_order at[\s\S]*“the schema was fixed”/);
    expect(await harness.orders.api.refundCount()).toBe(0);
  });

  it('answers SESSION_NOT_FOUND for a session nothing happened in, and asks a stranger to sign in', async () => {
    const unknown = await sessionPage(harness.newSession());
    expect(unknown.status).toBe(404);
    expect(unknown.page).toContain('SESSION_NOT_FOUND');
    const stranger = await fetch(`${approvals.url}/sessions/any`, { redirect: 'manual' });
    expect(stranger.status).toBe(303);
    expect(stranger.headers.get('location')).toBe('/login');
  });
});
