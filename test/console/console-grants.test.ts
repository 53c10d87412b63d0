import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  addGrant,
  inviteApprover,
  keyChainOf,
  listGrants,
  parseInviteLink,
  revokeApproverKey,
  revokeGrant,
  signEnrolment,
  signGrant,
  submitGrantRevocation,
} from 'toolgate/admin';
import { signValue } from 'toolgate/protocol';
import type { ToolResult } from 'toolgate';
import type { GrantRevocation, GrantRevoker, SignedGrant } from 'toolgate/protocol';
import type { ApprovalsConsole } from 'toolgate/console';
import { approvalHelpers } from '../support/approval-helpers';
import type { ConsoleAnswer } from '../support/console-helpers';
import { ConsoleVisitor, startHarnessConsole } from '../support/console-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';
import { revokeOpenGrants } from '../support/grant-helpers';

// The console's grants page: the task queue's standing grants listed for approvers, and a grant
// revoked by one of its approvers with the key enrolled in their browser, relayed by the console to
// the workers, which alone judge it. The proof of a revocation is the next refund: it waits for a
// human, and the orders service applies nothing more.

let harness: ToolGateHarness;
let approvals: ApprovalsConsole;
useHarness((started) => (harness = started));
const { appliedRefunds } = approvalHelpers(() => harness);
const hourMs = 60 * 60 * 1000;
const visitors: Record<string, ConsoleVisitor> = {};
const visitor = (approver: string): ConsoleVisitor => visitors[approver]!;
/** Calls a test left waiting, cancelled after it. */
const waiting: ToolResult[] = [];

beforeAll(async () => {
  approvals = await startHarnessConsole(harness);
  for (const approver of ['alice', 'bob']) {
    const signedIn = new ConsoleVisitor(approvals.url, approver);
    await signedIn.enrol(harness);
    expect(await signedIn.login()).toMatchObject({ status: 200, body: { ok: true, approver } });
    visitors[approver] = signedIn;
  }
});

afterAll(async () => {
  await approvals?.stop();
});

// Each test starts with no active grant and no waiting call.
afterEach(async () => {
  await revokeOpenGrants(harness);
  await Promise.all(
    waiting
      .splice(0)
      .map((result) =>
        harness.client.cancel({ callId: result.callId, caller: 'support-bot', reason: 'test done' }),
      ),
  );
});

/** A grant for support-bot's refunds, signed with alice's key file, added to the task queue. */
async function addedGrant(
  input: { maxCalls?: number; maxAmount?: number; maxAmountPerCall?: number; reason?: string } = {},
): Promise<SignedGrant> {
  const signed = signGrant({
    taskQueue: harness.taskQueue,
    caller: 'support-bot',
    tool: 'refund_order',
    maxLevel: 'irreversible',
    maxCalls: input.maxCalls ?? 5,
    ...(input.maxAmount !== undefined ? { maxAmount: input.maxAmount } : {}),
    ...(input.maxAmountPerCall !== undefined ? { maxAmountPerCall: input.maxAmountPerCall } : {}),
    expiresAt: new Date(Date.now() + hourMs),
    reason: input.reason ?? 'small damaged-goods refunds while the queue is long',
    approver: 'alice',
    approverKey: harness.approverKey('alice'),
  });
  expect(await addGrant({ client: harness.temporal, taskQueue: harness.taskQueue, signed })).toMatchObject({
    accepted: true,
  });
  return signed;
}

/** A refund by support-bot on ORD-1003 (its total leaves room for every amount here). */
async function refund(amount: number): Promise<ToolResult> {
  const result = await harness.call({
    caller: 'support-bot',
    session: harness.newSession(),
    tool: 'refund_order',
    arguments: JSON.stringify({
      order_id: 'ORD-1003',
      amount_cents: amount,
      currency: 'BRL',
      reason: 'damaged',
    }),
  });
  if (result.code === 'APPROVAL_PENDING') waiting.push(result);
  return result;
}

/** The revocation the grants page's script builds for `grantId`. */
function revocationOf(grantId: string, by: GrantRevoker, reason = 'the agent refunded the wrong orders') {
  return { revocationId: randomUUID(), grantId, by, reason, issuedAt: new Date().toISOString() };
}

/** Signs `revocation` with `privateKey` (the visitor's enrolled key by default) and posts it as the page does. */
function postRevocation(
  from: ConsoleVisitor,
  revocation: GrantRevocation,
  init: { privateKey?: KeyObject; origin?: string | null; csrf?: string | null } = {},
): Promise<ConsoleAnswer> {
  const signature = signValue({
    kind: 'grant-revocation',
    value: revocation,
    privateKey: init.privateKey ?? from.privateKey,
  });
  return from.post(
    `/grants/${encodeURIComponent(revocation.grantId)}/revocations`,
    { revocation, signature, keyId: from.keyId },
    init,
  );
}

const stateOf = async (grantId: string) =>
  (await listGrants({ client: harness.temporal, taskQueue: harness.taskQueue })).grants.find(
    (entry) => entry.grant.grantId === grantId,
  )?.state;

/** The card of `grantId` on a grants page. */
function cardOf(page: string, grantId: string): string {
  const start = page.indexOf(`<li class="card grant-card" data-grant-id="${grantId}"`);
  expect(start).toBeGreaterThanOrEqual(0);
  return page.slice(start, page.indexOf('</li>', start));
}

describe('the grants page', () => {
  it('lists the grants, active first, with their caps, use, approvers and state, every field escaped', async () => {
    const ended = await addedGrant({ reason: 'an older grant' });
    await revokeGrant({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      grantId: ended.grant.grantId,
      by: { operator: 'olivia' },
      key: harness.operatorKey('olivia'),
      reason: 'replaced by a <b>capped</b> one',
    });
    const active = await addedGrant({
      maxCalls: 3,
      maxAmount: 1_000,
      maxAmountPerCall: 300,
      reason: '<script>alert("grant")</script> & refunds',
    });
    expect(await refund(250)).toMatchObject({ code: 'OK', effect: 'applied' });

    const page = await (await visitor('alice').request('/grants')).text();
    expect(page).toContain('<a href="/grants">Grants</a>');
    // Active first, though added after.
    expect(page.indexOf(active.grant.grantId)).toBeLessThan(page.indexOf(ended.grant.grantId));
    const card = cardOf(page, active.grant.grantId);
    expect(card).toContain('data-state="active"');
    expect(card).toContain('support-bot');
    expect(card).toContain('refund_order');
    expect(card).toContain('irreversible');
    expect(card).toContain('1 of 3');
    expect(card).toContain('250 of 1000');
    expect(card).toContain('at most 300');
    expect(card).toContain(active.grant.expiresAt);
    expect(card).toContain('class="grant-approvers">alice<');
    // Alice signed it: she may revoke it here.
    expect(card).toContain(`<form class="revoke-form" data-grant-id="${active.grant.grantId}"`);
    // Approvers' text is escaped: no markup of theirs reaches the page.
    expect(page).not.toContain('<script>alert');
    expect(page).toContain('&lt;script&gt;alert(&quot;grant&quot;)&lt;/script&gt; &amp; refunds');
    const endedCard = cardOf(page, ended.grant.grantId);
    expect(endedCard).toContain('data-state="revoked"');
    expect(endedCard).toContain('operator olivia');
    expect(endedCard).toContain('replaced by a &lt;b&gt;capped&lt;/b&gt; one');
    expect(endedCard).not.toContain('revoke-form');

    // Bob did not sign it: no form, and the page says who may revoke it.
    const bobs = cardOf(await (await visitor('bob').request('/grants')).text(), active.grant.grantId);
    expect(bobs).not.toContain('revoke-form');
    expect(bobs).toContain('You did not sign this grant: alice, or an operator, may revoke it.');
  });

  it('is for signed-in approvers only', async () => {
    const stranger = new ConsoleVisitor(approvals.url, 'alice');
    const response = await stranger.request('/grants');
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/login');
  });
});

describe('revoking a grant from the console', () => {
  it('revokes with the enrolled key of an approver of the grant: the next refund waits and nothing more is applied', async () => {
    const before = await appliedRefunds();
    const signed = await addedGrant();
    expect(await refund(311)).toMatchObject({ code: 'OK', effect: 'applied' });
    expect(await appliedRefunds()).toBe(before + 1);

    const alice = visitor('alice');
    const revocation = revocationOf(signed.grant.grantId, { approver: 'alice' });
    expect(await postRevocation(alice, revocation)).toMatchObject({
      status: 200,
      body: {
        accepted: true,
        grant: { state: 'revoked', revoked: { by: 'alice', reason: 'the agent refunded the wrong orders' } },
      },
    });
    expect(await stateOf(signed.grant.grantId)).toBe('revoked');

    const next = await refund(312);
    expect(next).toMatchObject({ ok: false, code: 'APPROVAL_PENDING', effect: 'none' });
    expect(await appliedRefunds()).toBe(before + 1);

    const card = cardOf(await (await alice.request('/grants')).text(), signed.grant.grantId);
    expect(card).toContain('data-state="revoked"');
    expect(card).toContain('the agent refunded the wrong orders');
    expect(card).not.toContain('revoke-form');
    // Sent again (a retried post): the same answer, counted once. The audit names the enrolled key.
    expect(await postRevocation(alice, revocation)).toMatchObject({
      status: 200,
      body: { accepted: true, grant: { state: 'revoked' } },
    });
    const events = await harness.audit.grantEvents({ grantId: signed.grant.grantId });
    expect(events.filter((event) => event.action === 'revoke-grant')).toEqual([
      expect.objectContaining({ by: 'alice', outcome: 'accepted', keyId: alice.keyId }),
    ]);
  });

  it('refuses a revocation by an approver who did not sign the grant (REVOCATION_NOT_ALLOWED), in another’s name, or signed by another key', async () => {
    const signed = await addedGrant();
    const { grantId } = signed.grant;
    const bob = visitor('bob');
    expect(await postRevocation(bob, revocationOf(grantId, { approver: 'bob' }))).toMatchObject({
      status: 409,
      body: { accepted: false, code: 'REVOCATION_NOT_ALLOWED' },
    });
    // Bob's session, naming alice or an operator: the console refuses before relaying.
    for (const by of [{ approver: 'alice' }, { operator: 'olivia' }]) {
      expect(await postRevocation(bob, revocationOf(grantId, by))).toMatchObject({
        status: 403,
        body: { code: 'SESSION_APPROVER_MISMATCH' },
      });
    }
    // Alice's session, but Bob's key signed it: her enrolled key's chain does not vouch for it.
    expect(
      await postRevocation(visitor('alice'), revocationOf(grantId, { approver: 'alice' }), {
        privateKey: bob.privateKey,
      }),
    ).toMatchObject({ status: 409, body: { code: 'SIGNATURE_INVALID' } });
    expect(await stateOf(grantId)).toBe('active');
  });

  it('refuses a revocation without the CSRF token, from another origin, or without a session', async () => {
    const signed = await addedGrant();
    const { grantId } = signed.grant;
    const alice = visitor('alice');
    const revocation = () => revocationOf(grantId, { approver: 'alice' });
    expect(await postRevocation(alice, revocation(), { csrf: null })).toMatchObject({
      status: 403,
      body: { code: 'CSRF_TOKEN_INVALID' },
    });
    expect(await postRevocation(alice, revocation(), { csrf: 'x'.repeat(43) })).toMatchObject({
      status: 403,
      body: { code: 'CSRF_TOKEN_INVALID' },
    });
    expect(await postRevocation(alice, revocation(), { origin: 'http://evil.example' })).toMatchObject({
      status: 403,
      body: { code: 'ORIGIN_NOT_ALLOWED' },
    });
    const stranger = new ConsoleVisitor(approvals.url, 'alice');
    stranger.keyId = alice.keyId;
    expect(await postRevocation(stranger, revocation(), { privateKey: alice.privateKey })).toMatchObject({
      status: 401,
      body: { code: 'NOT_SIGNED_IN' },
    });
    // A body that is not a signed revocation of this grant.
    expect(await alice.post(`/grants/${grantId}/revocations`, { revocation: { grantId } })).toMatchObject({
      status: 400,
      body: { code: 'BAD_REQUEST' },
    });
    // A grant the task queue does not hold: relayed, and refused by the workers.
    expect(await postRevocation(alice, { ...revocation(), grantId: randomUUID() })).toMatchObject({
      status: 409,
      body: { code: 'GRANT_UNKNOWN' },
    });
    // Signed for this grant, posted to another's address.
    const elsewhere = revocation();
    const signature = signValue({ kind: 'grant-revocation', value: elsewhere, privateKey: alice.privateKey });
    expect(
      await alice.post(`/grants/${randomUUID()}/revocations`, {
        revocation: elsewhere,
        signature,
        keyId: alice.keyId,
      }),
    ).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    expect(await stateOf(grantId)).toBe('active');
  });
});

describe('revocations signed with an enrolled key, judged by the workers', () => {
  it('refuses a revoked key (KEY_REVOKED) and a key never enrolled (KEY_UNKNOWN), relayed past any console', async () => {
    const signed = await addedGrant();
    const { grantId } = signed.grant;
    const target = { client: harness.temporal, taskQueue: harness.taskQueue };

    // A key of alice's, enrolled, then revoked by an operator; its chain kept by whoever held it.
    const revokedKey = new ConsoleVisitor(approvals.url, 'alice');
    await revokedKey.enrol(harness);
    const chain = await keyChainOf({ ...target, keyId: revokedKey.keyId });
    expect(chain).toBeDefined();
    expect(
      await revokeApproverKey({
        ...target,
        keyId: revokedKey.keyId,
        operator: 'olivia',
        operatorKey: harness.operatorKey('olivia'),
        reason: 'laptop stolen',
      }),
    ).toMatchObject({ accepted: true });
    const byRevoked = revocationOf(grantId, { approver: 'alice' });
    expect(
      await submitGrantRevocation({
        ...target,
        signed: {
          revocation: byRevoked,
          signature: signValue({
            kind: 'grant-revocation',
            value: byRevoked,
            privateKey: revokedKey.privateKey,
          }),
          ...(chain ? { key: chain } : {}),
        },
      }),
    ).toMatchObject({ accepted: false, code: 'KEY_REVOKED' });

    // A chain whose invite is real but whose enrolment never reached the registry.
    const { invite, link } = await inviteApprover({
      ...target,
      approver: 'alice',
      operator: 'olivia',
      operatorKey: harness.operatorKey('olivia'),
      consoleUrl: approvals.url,
    });
    const { inviteId, invitePrivateKey } = parseInviteLink(link);
    const privateKey = generateKeyPairSync('ed25519').privateKey;
    const enrolment = signEnrolment({
      inviteId,
      approver: 'alice',
      invitePrivateKey,
      privateKey,
      label: 'never',
    });
    const byUnknown = revocationOf(grantId, { approver: 'alice' });
    expect(
      await submitGrantRevocation({
        ...target,
        signed: {
          revocation: byUnknown,
          signature: signValue({ kind: 'grant-revocation', value: byUnknown, privateKey }),
          key: { invite, enrolment },
        },
      }),
    ).toMatchObject({ accepted: false, code: 'KEY_UNKNOWN' });

    // An operator never signs with an enrolled key.
    const byOperator = revocationOf(grantId, { operator: 'olivia' });
    expect(
      await submitGrantRevocation({
        ...target,
        signed: {
          revocation: byOperator,
          signature: signValue({
            kind: 'grant-revocation',
            value: byOperator,
            privateKey: harness.operatorKey('olivia'),
          }),
          ...(chain ? { key: chain } : {}),
        },
      }),
    ).toMatchObject({ accepted: false, code: 'GRANT_INVALID' });

    expect(await stateOf(grantId)).toBe('active');
    const refused = (await harness.audit.grantEvents({ grantId }))
      .filter((event) => event.action === 'revoke-grant')
      .map((event) => event.outcome);
    expect(refused).toEqual(['KEY_REVOKED', 'KEY_UNKNOWN']);
  });
});
