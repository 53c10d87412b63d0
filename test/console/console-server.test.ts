import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyChainOf, revokeApproverKey, signValue } from 'toolgate';
import type { ApprovalsConsole } from 'toolgate/console';
import { approvalHelpers } from '../support/approval-helpers';
import { ConsoleVisitor, startHarnessConsole } from '../support/console-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// The approvals console's server: sign-in, sessions, CSRF and origin checks, and decisions relayed
// from the approver's key to the workflow, which alone judges them. Each attack asserts its refusal
// and the orders service's count of applied refunds.

let harness: ToolGateHarness;
let approvals: ApprovalsConsole;
useHarness((started) => (harness = started));
const { appliedRefunds, proposeRefund } = approvalHelpers(() => harness);

/** A signed-in approver (a fresh key, enrolled through a fresh invite). */
async function signedIn(approver: string): Promise<ConsoleVisitor> {
  const visitor = new ConsoleVisitor(approvals.url, approver);
  await visitor.enrol(harness);
  expect(await visitor.login()).toMatchObject({ status: 200, body: { ok: true, approver } });
  expect(visitor.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
  return visitor;
}

const visitors: Record<string, ConsoleVisitor> = {};

beforeAll(async () => {
  approvals = await startHarnessConsole(harness);
  for (const approver of ['alice', 'bob', 'carol', 'dave']) visitors[approver] = await signedIn(approver);
});

afterAll(async () => {
  await approvals?.stop();
});

const visitor = (approver: string): ConsoleVisitor => visitors[approver]!;
/** A critical refund (20,000 cents on ORD-1003): two distinct approvers needed. */
const proposeCriticalRefund = () => proposeRefund({ order_id: 'ORD-1003', amount_cents: 20_000 });

describe('pages and sign-in', () => {
  it('sends every response with the security headers, and a visitor who is not signed in to the sign-in page', async () => {
    const stranger = new ConsoleVisitor(approvals.url, 'alice');
    const response = await stranger.request('/');
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/login');
    const login = await stranger.request('/login');
    expect(login.status).toBe(200);
    for (const headers of [response.headers, login.headers]) {
      expect(headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(headers.get('x-content-type-options')).toBe('nosniff');
      expect(headers.get('referrer-policy')).toBe('no-referrer');
    }
    expect(await login.text()).not.toMatch(/<script>|<style>|style="/);
    const script = await stranger.request('/assets/console.mjs');
    expect(script.headers.get('content-type')).toContain('text/javascript');
    // The fragment of the queue is not served to a stranger either.
    expect((await stranger.request('/queue/entries')).status).toBe(401);
  });

  it('sets a short-lived HttpOnly, SameSite=Strict session cookie, and logs out', async () => {
    const dave = new ConsoleVisitor(approvals.url, 'dave');
    await dave.enrol(harness);
    const issued = await dave.post('/login/challenge', { approver: 'dave', keyId: dave.keyId });
    const challenge = issued.body.challenge as Record<string, string>;
    expect(challenge).toMatchObject({ approver: 'dave', keyId: dave.keyId, origin: approvals.url });
    const signature = signValue({ kind: 'login', value: challenge, privateKey: dave.privateKey });
    const response = await dave.request('/login', { json: { challenge, signature } });
    expect(response.status).toBe(200);
    const cookie = response.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).toMatch(/Max-Age=900/);
    // The same signed answer again: the challenge was used.
    expect(await dave.post('/login', { challenge, signature })).toMatchObject({
      status: 401,
      body: { code: 'LOGIN_INVALID' },
    });
    dave.cookie = cookie.split(';')[0]!;
    const page = await (await dave.request('/')).text();
    dave.csrfToken = /<meta name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '';
    expect(page).toContain('Waiting for approval');
    expect(await dave.post('/logout', {})).toMatchObject({ status: 200, body: { ok: true } });
    expect((await dave.request('/')).status).toBe(303);
  });

  it('refuses a challenge signed by another key, and one issued to another origin', async () => {
    const mallory = new ConsoleVisitor(approvals.url, 'alice');
    mallory.keyId = visitor('alice').keyId;
    // Alice's key id, but Mallory's own key signs the challenge.
    expect(await mallory.login()).toMatchObject({ status: 401, body: { code: 'LOGIN_INVALID' } });
    const elsewhere = 'http://localhost:1';
    const issued = await mallory.post(
      '/login/challenge',
      { approver: 'alice', keyId: mallory.keyId },
      { origin: elsewhere },
    );
    expect(issued.status).toBe(403);
    expect(issued.body).toMatchObject({ code: 'ORIGIN_NOT_ALLOWED' });
  });
});

describe('the queue and a call', () => {
  it('lists a pending refund with its preview, newest first, filtered by tool and caller', async () => {
    const older = await proposeRefund({ amount_cents: 1_000 });
    const newer = await proposeRefund({ amount_cents: 1_200 });
    const page = await (await visitor('alice').request('/')).text();
    expect(page).toContain('refund 1200 BRL cents on ORD-1001');
    expect(page.indexOf(newer.callId)).toBeLessThan(page.indexOf(older.callId));
    expect(page).toContain('support-bot');
    const filtered = await (await visitor('alice').request('/queue/entries?caller=readonly-bot')).text();
    expect(filtered).not.toContain(newer.callId);
    const byTool = await (await visitor('alice').request('/queue/entries?tool=refund_order')).text();
    expect(byTool).toContain(newer.callId);
    const call = await (await visitor('alice').request(`/calls/${newer.callId}`)).text();
    expect(call).toContain(`data-call-id="${newer.callId}"`);
    expect(call).toContain('&quot;amount_cents&quot;: 1200');
    expect(call).toContain('awaiting-approval');
  });

  it('shows Carol that she may not approve a call of support-bot, which she operates', async () => {
    const pending = await proposeRefund();
    const page = await (await visitor('carol').request(`/calls/${pending.callId}`)).text();
    expect(page).toContain('you operate support-bot: approving its own calls would be self-approval');
    expect(page).toMatch(/id="approve" disabled/);
  });
});

describe('decisions relayed from the approver’s key', () => {
  it('approves a refund: the orders service applies exactly one', async () => {
    const pending = await proposeRefund();
    const alice = visitor('alice');
    expect(await alice.decide(await alice.envelope(harness, pending.callId))).toMatchObject({
      status: 200,
      body: { accepted: true, state: 'approved' },
    });
    expect(await harness.client.result(pending.callId)).toMatchObject({ ok: true, effect: 'applied' });
    expect(await appliedRefunds()).toBe(1);
    expect(harness.audit.decisionAttemptsOf(pending.callId)).toContainEqual(
      expect.objectContaining({ source: 'admin', outcome: 'accepted', keyId: alice.keyId }),
    );
    const history = await (await alice.request('/history')).text();
    expect(history).toContain(pending.callId);
  });

  it('refuses a decision in another approver’s name (SESSION_APPROVER_MISMATCH), and Bob’s key in Alice’s name (SIGNATURE_INVALID)', async () => {
    const pending = await proposeRefund();
    const bob = visitor('bob');
    const asAlice = await bob.envelope(harness, pending.callId, 'approve', { approver: 'alice' });
    expect(await bob.decide(asAlice)).toMatchObject({
      status: 403,
      body: { code: 'SESSION_APPROVER_MISMATCH' },
    });
    // Even relayed past the console's check (as Alice's session), Bob's key cannot sign for Alice.
    const alice = visitor('alice');
    expect(await alice.decide(asAlice, { privateKey: bob.privateKey })).toMatchObject({
      status: 409,
      body: { code: 'SIGNATURE_INVALID' },
    });
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses self-approval (SELF_APPROVAL)', async () => {
    const pending = await proposeRefund();
    const carol = visitor('carol');
    expect(await carol.decide(await carol.envelope(harness, pending.callId))).toMatchObject({
      status: 409,
      body: { code: 'SELF_APPROVAL' },
    });
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a level the grant does not cover (APPROVER_NOT_ALLOWED)', async () => {
    const pending = await proposeCriticalRefund();
    const bob = visitor('bob');
    expect(await bob.decide(await bob.envelope(harness, pending.callId))).toMatchObject({
      status: 409,
      body: { code: 'APPROVER_NOT_ALLOWED' },
    });
    const page = await (await bob.request(`/calls/${pending.callId}`)).text();
    expect(page).toContain('your grant goes up to irreversible; this call is critical');
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a bad signature (SIGNATURE_INVALID) and a mismatched digest (DIGEST_MISMATCH)', async () => {
    const pending = await proposeRefund();
    const alice = visitor('alice');
    const envelope = await alice.envelope(harness, pending.callId);
    expect(await alice.decide(envelope, { signature: 'A'.repeat(86) })).toMatchObject({
      status: 409,
      body: { code: 'SIGNATURE_INVALID' },
    });
    // Signed over the preview, with the reason edited after signing.
    const signature = signValue({ kind: 'decision', value: envelope, privateKey: alice.privateKey });
    expect(await alice.decide({ ...envelope, reason: 'approve 25900' }, { signature })).toMatchObject({
      status: 409,
      body: { code: 'SIGNATURE_INVALID' },
    });
    const otherArguments = { ...envelope, argsDigest: 'f'.repeat(64) };
    expect(await alice.decide(otherArguments)).toMatchObject({
      status: 409,
      body: { code: 'DIGEST_MISMATCH' },
    });
    expect(await appliedRefunds()).toBe(0);
  });

  it('needs two distinct approvers for a critical refund, and refuses a replayed decision (DECISION_REPLAYED)', async () => {
    const pending = await proposeCriticalRefund();
    const alice = visitor('alice');
    const envelope = await alice.envelope(harness, pending.callId);
    expect(await alice.decide(envelope)).toMatchObject({
      status: 200,
      body: { accepted: true, state: 'pending', approvals: ['alice'], quorum: 2 },
    });
    expect(await alice.decide(envelope)).toMatchObject({ status: 409, body: { code: 'DECISION_REPLAYED' } });
    // A second decision by Alice, freshly signed, still counts once.
    const again = await alice.decide(await alice.envelope(harness, pending.callId));
    expect(again.status).toBe(409);
    expect(await appliedRefunds()).toBe(0);
    const page = await (await alice.request(`/calls/${pending.callId}`)).text();
    expect(page).toContain('critical needs 2 distinct approvers; approved so far by alice');
    const dave = visitor('dave');
    expect(await dave.decide(await dave.envelope(harness, pending.callId))).toMatchObject({
      status: 200,
      body: { accepted: true, state: 'approved', approvals: ['alice', 'dave'] },
    });
    expect(await harness.client.result(pending.callId)).toMatchObject({ ok: true, effect: 'applied' });
    expect(await appliedRefunds()).toBe(1);
  });

  it('refuses a decision after the approval expired (APPROVAL_EXPIRED)', async () => {
    const pending = await proposeRefund({}, 'hasty-bot');
    const alice = visitor('alice');
    const envelope = await alice.envelope(harness, pending.callId);
    await expect
      .poll(async () => (await harness.admin.show(pending.callId))?.approval?.state, { timeout: 10_000 })
      .toBe('expired');
    expect(await alice.decide(envelope)).toMatchObject({ status: 409, body: { code: 'APPROVAL_EXPIRED' } });
    expect(await harness.client.result(pending.callId)).toMatchObject({
      code: 'APPROVAL_EXPIRED',
      effect: 'none',
    });
    expect(await appliedRefunds()).toBe(0);
  });

  it('ends the sessions of a revoked key, refuses its sign-in (KEY_REVOKED), and the workflow refuses its decision', async () => {
    const alice = await signedIn('alice');
    const pending = await proposeRefund();
    const envelope = await alice.envelope(harness, pending.callId);
    const chain = await keyChainOf({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      keyId: alice.keyId,
    });
    expect(
      await revokeApproverKey({
        client: harness.temporal,
        taskQueue: harness.taskQueue,
        keyId: alice.keyId,
        operator: 'olivia',
        operatorKey: harness.operatorKey('olivia'),
        reason: 'laptop stolen',
      }),
    ).toMatchObject({ accepted: true });
    expect(await alice.decide(envelope)).toMatchObject({ status: 401, body: { code: 'NOT_SIGNED_IN' } });
    expect(await alice.login()).toMatchObject({ status: 401, body: { code: 'KEY_REVOKED' } });
    // Relayed with its chain by anyone who kept it, the decision is still refused by the workflow.
    const signed = {
      envelope,
      signature: signValue({ kind: 'decision', value: envelope, privateKey: alice.privateKey }),
      ...(chain ? { key: chain } : {}),
    };
    expect(await harness.admin.send({ callId: pending.callId, decision: signed })).toMatchObject({
      accepted: false,
      code: 'KEY_REVOKED',
    });
    expect(await appliedRefunds()).toBe(0);
  });

  it('refuses a decision without the CSRF token (CSRF_TOKEN_INVALID)', async () => {
    const pending = await proposeRefund();
    const alice = visitor('alice');
    const envelope = await alice.envelope(harness, pending.callId);
    expect(await alice.decide(envelope, { csrf: null })).toMatchObject({
      status: 403,
      body: { code: 'CSRF_TOKEN_INVALID' },
    });
    expect(await alice.decide(envelope, { csrf: 'x'.repeat(43) })).toMatchObject({
      status: 403,
      body: { code: 'CSRF_TOKEN_INVALID' },
    });
    expect(await appliedRefunds()).toBe(0);
    expect((await harness.admin.show(pending.callId))?.approval).toMatchObject({
      state: 'pending',
      approvals: [],
    });
  });

  it('refuses a stolen session cookie used from another origin (ORIGIN_NOT_ALLOWED), and it cannot sign', async () => {
    const pending = await proposeRefund();
    const alice = visitor('alice');
    const thief = new ConsoleVisitor(approvals.url, 'alice');
    Object.assign(thief, { cookie: alice.cookie, csrfToken: alice.csrfToken, keyId: alice.keyId });
    const envelope = await thief.envelope(harness, pending.callId);
    expect(await thief.decide(envelope, { origin: 'http://evil.example' })).toMatchObject({
      status: 403,
      body: { code: 'ORIGIN_NOT_ALLOWED' },
    });
    expect(await thief.decide(envelope, { origin: null })).toMatchObject({
      status: 403,
      body: { code: 'ORIGIN_NOT_ALLOWED' },
    });
    // Even with the console's own origin, the cookie and the token, the thief has no key of Alice's.
    expect(await thief.decide(envelope)).toMatchObject({ status: 409, body: { code: 'SIGNATURE_INVALID' } });
    expect(await appliedRefunds()).toBe(0);
  });
});

describe('enrolment', () => {
  it('refuses an invite link used twice (INVITE_USED)', async () => {
    const first = new ConsoleVisitor(approvals.url, 'dave');
    const { inviteApprover } = await import('toolgate');
    const { link } = await inviteApprover({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      approver: 'dave',
      operator: 'olivia',
      operatorKey: harness.operatorKey('olivia'),
      consoleUrl: approvals.url,
    });
    expect(link.startsWith(`${approvals.url}/enrol/`)).toBe(true);
    const page = await (await first.request(new URL(link).pathname)).text();
    expect(page).toContain('olivia</strong> invited <strong>dave');
    expect(await first.enrolWith(link)).toMatchObject({ status: 200, body: { accepted: true } });
    const second = new ConsoleVisitor(approvals.url, 'dave');
    expect(await second.enrolWith(link)).toMatchObject({ status: 409, body: { code: 'INVITE_USED' } });
    const again = await second.request(new URL(link).pathname);
    expect(again.status).toBe(404);
    expect(await again.text()).toContain('INVITE_USED');
  });

  it('refuses an enrolment posted from another origin (ORIGIN_NOT_ALLOWED)', async () => {
    const stranger = new ConsoleVisitor(approvals.url, 'dave');
    const answer = await stranger.post('/enrol/inv-x', { enrolment: {} }, { origin: 'http://evil.example' });
    expect(answer).toMatchObject({ status: 403, body: { code: 'ORIGIN_NOT_ALLOWED' } });
  });
});
