import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyChainOf, revokeApproverKey } from 'toolgate/admin';
import { approverKeysWorkflowId, signValue } from 'toolgate/protocol';
import { digestOf } from 'toolgate/backend';
import type { ApprovalsConsole } from 'toolgate/console';
import { approvalHelpers } from '../support/approval-helpers';
import { ConsoleVisitor, harnessPolicy, startHarnessConsole } from '../support/console-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { startApprovalsConsole } from 'toolgate/console';

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

/**
 * A refused decision changed nothing: the call still waits in the same round with the approvals it
 * had (none by default), it has no result, and the orders service applied no refund.
 */
async function expectStillWaiting(callId: string, approvals: string[] = []): Promise<void> {
  const state = await harness.admin.show(callId);
  expect(state?.result).toBeUndefined();
  expect(state?.approval).toMatchObject({ state: 'pending', approvals });
  expect(await appliedRefunds()).toBe(0);
}

/** A GET with the Host header a browser would send for `host` (fetch does not let one choose it). */
function getWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}
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

  it('lets an approver answer her challenge after a flood of challenges for other names (none is stored)', async () => {
    const carol = new ConsoleVisitor(approvals.url, 'carol');
    await carol.enrol(harness);
    const issued = await carol.post('/login/challenge', { approver: 'carol', keyId: carol.keyId });
    const challenge = issued.body.challenge;
    // More challenges than the console ever held (it used to keep 1,000 and evict the oldest).
    const mallory = new ConsoleVisitor(approvals.url, 'mallory');
    for (let start = 0; start < 1_100; start += 100) {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, index) =>
          mallory.post('/login/challenge', { approver: `mallory-${start + index}`, keyId: 'k' }),
        ),
      );
      for (const answer of answers) expect(answer.status).toBe(200);
    }
    // A garbage signature does not use the challenge up; Carol's answer does, once.
    expect(await carol.post('/login', { challenge, signature: 'A'.repeat(86) })).toMatchObject({
      status: 401,
      body: { code: 'LOGIN_INVALID' },
    });
    const signature = signValue({ kind: 'login', value: challenge, privateKey: carol.privateKey });
    expect(await carol.post('/login', { challenge, signature })).toMatchObject({
      status: 200,
      body: { ok: true, approver: 'carol' },
    });
    expect(await carol.post('/login', { challenge, signature })).toMatchObject({
      status: 401,
      body: { code: 'LOGIN_INVALID' },
    });
  });

  it('answers to its own names only: a DNS-rebinding page’s Host is refused, a public URL’s host accepted', async () => {
    const port = new URL(approvals.url).port;
    expect(await getWithHost(`${approvals.url}/login`, `127.0.0.1:${port}`)).toBe(200);
    expect(await getWithHost(`${approvals.url}/login`, `localhost:${port}`)).toBe(200);
    expect(await getWithHost(`${approvals.url}/login`, `rebound.evil.example:${port}`)).toBe(403);
    const proxied = await startApprovalsConsole({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      policy: harnessPolicy(harness),
      port: 0,
      publicUrl: 'https://approvals.example.com',
    });
    try {
      expect(await getWithHost(`${proxied.url}/login`, 'approvals.example.com')).toBe(200);
      expect(await getWithHost(`${proxied.url}/login`, new URL(proxied.url).host)).toBe(200);
      // With a public URL set, another name is still refused (it was accepted before).
      expect(await getWithHost(`${proxied.url}/login`, 'rebound.evil.example')).toBe(403);
      expect(await getWithHost(`${proxied.url}/login`, 'approvals.example.com.evil.example')).toBe(403);
    } finally {
      await proxied.stop();
    }
  });
});

describe('the queue and a call', () => {
  it('lists a pending refund with its preview, newest first, filtered by tool and caller', async () => {
    const older = await proposeRefund({ amount_cents: 1_000 });
    const newer = await proposeRefund({ amount_cents: 1_200 });
    // The listing is shared by every session for a second and a half: the new calls show within it.
    let page = '';
    await expect
      .poll(async () => (page = await (await visitor('alice').request('/')).text()), { timeout: 10_000 })
      .toContain(newer.callId);
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

  it('carries the validated arguments and preview the page shows and signs as JSON data, with no inline script that runs', async () => {
    // (That no value can close the data block is src/console/console-pages.test.ts's to show.)
    const pending = await proposeRefund({ amount_cents: 1_300 });
    const page = await (await visitor('alice').request(`/calls/${pending.callId}`)).text();
    // Every script element either loads this origin's file or is data (which the browser never runs).
    const scripts = page.match(/<script\b[^>]*>/g) ?? [];
    expect(scripts).toHaveLength(2);
    for (const tag of scripts) expect(tag).toMatch(/ src="\/assets\/[a-z-]+\.mjs"| type="application\/json"/);
    const block =
      /<script type="application\/json" id="call-data">([\s\S]*?)<\/script>/.exec(page)?.[1] ?? '';
    const data = JSON.parse(block) as Record<string, unknown>;
    const state = await harness.admin.show(pending.callId);
    const approval = state?.approval;
    expect(data).toEqual({
      callId: pending.callId,
      runId: approval?.runId,
      nonce: approval?.nonce,
      argsDigest: approval?.argsDigest,
      previewDigest: approval?.previewDigest,
      contractDigest: approval?.contractDigest,
      arguments: state?.validatedArguments,
      preview: approval?.preview,
    });
    // What the page shows hashes to the round's digests (the browser checks this before it signs).
    expect(digestOf(data.arguments)).toBe(approval?.argsDigest);
    expect(digestOf(data.preview)).toBe(approval?.previewDigest);
    expect(data.arguments).toMatchObject({ order_id: 'ORD-1001', amount_cents: 1_300 });
    expect(page).toContain('id="signed-envelope"');
  });

  it('shows the newest calls up to its limit and says how many are waiting', async () => {
    const small = await startApprovalsConsole({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      policy: harnessPolicy(harness),
      port: 0,
      queueLimit: 2,
    });
    try {
      const bob = new ConsoleVisitor(small.url, 'bob');
      await bob.enrol(harness);
      await bob.login();
      await proposeRefund({ amount_cents: 1_101 });
      const second = await proposeRefund({ amount_cents: 1_102 });
      const third = await proposeRefund({ amount_cents: 1_103 });
      let fragment = '';
      await expect
        .poll(async () => (fragment = await (await bob.request('/queue/entries')).text()), {
          timeout: 10_000,
        })
        .toContain(third.callId);
      expect(fragment.match(/<li class="card"/g)).toHaveLength(2);
      expect(fragment.indexOf(third.callId)).toBeLessThan(fragment.indexOf(second.callId));
      const waiting = Number(/Showing the newest 2 of (\d+) waiting calls/.exec(fragment)?.[1]);
      expect(waiting).toBeGreaterThanOrEqual(3);
    } finally {
      await small.stop();
    }
  });

  it('pages the history, and bounds the page number', async () => {
    const alice = visitor('alice');
    expect(await (await alice.request('/history')).text()).toContain('page 1');
    const second = await (await alice.request('/history?page=2')).text();
    expect(second).toContain('page 2');
    expect(second).toContain('href="/history?page=1"');
    expect(await (await alice.request('/history?page=100000')).text()).toContain('page 40');
    expect(await (await alice.request('/history?page=-3')).text()).toContain('page 1');
    expect(await (await alice.request('/history?page=x')).text()).toContain('page 1');
  });

  it('shows Carol that she may not approve a call of support-bot, which she operates', async () => {
    const pending = await proposeRefund();
    const page = await (await visitor('carol').request(`/calls/${pending.callId}`)).text();
    expect(page).toContain('you operate support-bot: approving its own calls would be self-approval');
    expect(page).toMatch(/id="approve" disabled/);
  });

  it('answers CALL_NOT_FOUND, never a server error, for a workflow that is not a call (the key registry, a made-up id)', async () => {
    for (const id of [approverKeysWorkflowId(harness.taskQueue), `tc-${'0'.repeat(64)}`, 'anything']) {
      const response = await visitor('alice').request(`/calls/${encodeURIComponent(id)}`);
      expect(response.status).toBe(404);
      expect(await response.text()).toContain(`CALL_NOT_FOUND: no call ${id} is visible to you.`);
    }
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
    expect(await harness.audit.decisionAttemptsOf(pending.callId)).toContainEqual(
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
    await expectStillWaiting(pending.callId);
  });

  it('refuses a denial reason over 2,000 characters before relaying it: the model never reads it', async () => {
    const pending = await proposeRefund();
    const alice = visitor('alice');
    const long = await alice.envelope(harness, pending.callId, 'deny', { reason: 'x'.repeat(60 * 1024) });
    const answer = await alice.decide(long);
    expect(answer).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    expect(String(answer.body.message)).toContain('at most 2000');
    await expectStillWaiting(pending.callId);
    // Relayed past the console (as a raw client would), the workflow refuses it too.
    expect(
      await harness.admin.send({
        callId: pending.callId,
        decision: {
          envelope: long,
          signature: signValue({ kind: 'decision', value: long, privateKey: alice.privateKey }),
        },
      }),
    ).toMatchObject({ accepted: false, code: 'SIGNATURE_INVALID' });
    await expectStillWaiting(pending.callId);
  });

  it('refuses an envelope with extra fields, though the approver signed them, and stores nothing of it', async () => {
    const pending = await proposeRefund();
    const round = (await harness.admin.show(pending.callId))!.approval!;
    const envelope = {
      callId: pending.callId,
      runId: round.runId,
      nonce: round.nonce,
      argsDigest: round.argsDigest,
      previewDigest: round.previewDigest,
      contractDigest: round.contractDigest,
      decision: 'approve' as const,
      approver: 'alice',
      reason: 'fine',
      issuedAt: new Date().toISOString(),
      scope: 'all refunds of this customer',
    };
    const outcome = await harness.admin.send({
      callId: pending.callId,
      decision: {
        envelope,
        signature: signValue({ kind: 'decision', value: envelope, privateKey: harness.approverKey('alice') }),
      },
    });
    expect(outcome).toMatchObject({ accepted: false, code: 'SIGNATURE_INVALID' });
    expect(outcome.accepted ? '' : outcome.message).toContain('scope');
    await expectStillWaiting(pending.callId);
    const decisions = (await harness.admin.show(pending.callId))?.decisions ?? [];
    expect(decisions.filter((decision) => decision.outcome === 'accepted')).toEqual([]);
  });

  it('refuses self-approval (SELF_APPROVAL)', async () => {
    const pending = await proposeRefund();
    const carol = visitor('carol');
    expect(await carol.decide(await carol.envelope(harness, pending.callId))).toMatchObject({
      status: 409,
      body: { code: 'SELF_APPROVAL' },
    });
    await expectStillWaiting(pending.callId);
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
    await expectStillWaiting(pending.callId);
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
    await expectStillWaiting(pending.callId);
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
    expect(again).toMatchObject({ status: 409, body: { code: 'DECISION_REPLAYED' } });
    // Alice's approval counts once; the call waits for a second approver.
    await expectStillWaiting(pending.callId, ['alice']);
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
    await expectStillWaiting(pending.callId);
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
    await expectStillWaiting(pending.callId);
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
    await expectStillWaiting(pending.callId);
  });
});

describe('enrolment', () => {
  it('refuses an invite link used twice (INVITE_USED)', async () => {
    const first = new ConsoleVisitor(approvals.url, 'dave');
    const { inviteApprover } = await import('toolgate/admin');
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
