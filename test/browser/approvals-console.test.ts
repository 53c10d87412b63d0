import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { addGrant, listGrants, signGrant } from 'toolgate/admin';
import type { PolicyFileInput } from 'toolgate';
import type { ApprovalsConsole } from 'toolgate/console';
import { approvalHelpers } from '../support/approval-helpers';
import { enrolInBrowser, launchBrowser, saveScreenshot } from '../support/browser';
import { startHarnessConsole } from '../support/console-helpers';
import { testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// The approvals console in Debian's Chromium: an approver enrols this browser's key through an
// invite link, signs in with it, sees a pending refund with its preview, and decides, or revokes a
// standing grant she signed; the orders service's applied refunds are the proof. Phone-sized: 360 px
// wide.

let harness: ToolGateHarness;
let approvals: ApprovalsConsole;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Every URL the page requested: all of them must be the console's own. */
let requested: string[];

// test-refunder refunds alone, except in a conversation that read untrusted text.
const policy: PolicyFileInput = {
  ...testPolicy,
  callers: {
    ...testPolicy.callers,
    'test-refunder': {
      ...testPolicy.callers['test-refunder']!,
      approval: { ceiling: 'critical' },
      untrustedText: { writes: 'approval' },
    },
  },
};
useHarness((started) => (harness = started), { policy });
const { appliedRefunds, proposeRefund } = approvalHelpers(() => harness);

beforeAll(async () => {
  approvals = await startHarnessConsole(harness);
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await approvals?.stop();
});

beforeEach(async () => {
  // A context per test: its own IndexedDB and cookies, as a second device would have.
  context = await browser.newContext({ viewport: { width: 360, height: 780 } });
  page = await context.newPage();
  requested = [];
  page.on('request', (request) => requested.push(request.url()));
});

afterEach(async () => {
  await context?.close();
});

/** Olivia invites `approver`; the browser enrols its key and signs in; the link. */
const enrolAndSignIn = (approver: string): Promise<string> =>
  enrolInBrowser({ harness, page, consoleUrl: approvals.url, approver });

/** The page is no wider than the screen: nothing to scroll sideways at 360 px. */
async function fitsTheScreen(): Promise<boolean> {
  return page.evaluate(() => {
    const view = globalThis as unknown as {
      document: { documentElement: { scrollWidth: number } };
      innerWidth: number;
    };
    return view.document.documentElement.scrollWidth <= view.innerWidth;
  });
}

describe('the approvals console in a real browser', () => {
  it('enrols through an invite, signs in, sees the pending refund with its preview and approves it: one refund applied', async () => {
    await enrolAndSignIn('alice');
    const pending = await proposeRefund();
    // The queue updates itself: no reload.
    const card = page.locator(`li.card[data-call-id="${pending.callId}"]`);
    await card.waitFor({ timeout: 15_000 });
    expect(await card.textContent()).toContain('refund 2590 BRL cents on ORD-1001');
    expect(await card.textContent()).toContain('support-bot');
    expect(await card.textContent()).toMatch(/\dh \d+m left/);
    expect(await fitsTheScreen()).toBe(true);
    await saveScreenshot({ page, name: 'approval-queue' });

    await card.locator('a').click();
    await page.waitForSelector('#decision-form');
    expect(await page.textContent('#arguments')).toContain('"amount_cents": 2590');
    expect(await fitsTheScreen()).toBe(true);
    // The page checked the digests of what it shows before it let the approver sign.
    await page.waitForSelector('#approve:not([disabled])');
    await page.fill('#reason', 'customer sent photos of the damage');
    // The envelope the key will sign is on the page, bound to this round.
    const round = (await harness.admin.show(pending.callId))?.approval;
    await page.click('#signed-envelope summary');
    const before = JSON.parse((await page.textContent('#envelope')) ?? '{}') as Record<string, string>;
    expect(before).toMatchObject({
      callId: pending.callId,
      runId: round?.runId,
      nonce: round?.nonce,
      argsDigest: round?.argsDigest,
      previewDigest: round?.previewDigest,
      contractDigest: round?.contractDigest,
      approver: 'alice',
      reason: 'customer sent photos of the damage',
    });
    await page.click('#approve');
    await expect
      .poll(() => page.textContent('#decision-outcome'), { timeout: 20_000 })
      .toContain('Accepted: the call is approved');
    // What was signed is what the page showed: the decision as recorded names the same reason.
    const signed = JSON.parse((await page.textContent('#envelope')) ?? '{}') as Record<string, string>;
    const { issuedAt: _whenShown, ...shown } = before;
    expect(signed).toMatchObject({ ...shown, decision: 'approve' });
    expect(Date.parse(signed.issuedAt ?? '')).toBeGreaterThan(0);

    expect(await harness.client.result(pending.callId)).toMatchObject({
      ok: true,
      code: 'OK',
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
    expect(await harness.audit.decisionAttemptsOf(pending.callId)).toContainEqual(
      expect.objectContaining({ source: 'admin', approver: 'alice', outcome: 'accepted' }),
    );
    expect(requested.filter((url) => !url.startsWith(`${approvals.url}/`))).toEqual([]);
  });

  it('edits a refund in a form made from its schema, shows the difference, and approves the edited one: one refund of 2,000', async () => {
    await enrolAndSignIn('alice');
    const pending = await proposeRefund();
    await page.goto(`${approvals.url}/calls/${pending.callId}`);
    await page.click('#edit summary');
    // Enums are selects, integers whole numbers; the bound customer_id is not in the form.
    expect(await page.locator('select#edit-reason option').allTextContents()).toEqual([
      'damaged',
      'not_delivered',
      'customer_request',
    ]);
    expect(await page.getAttribute('#edit-amount_cents', 'step')).toBe('1');
    expect(await page.locator('#edit-customer_id').count()).toBe(0);
    // A fraction of a cent is refused in the page before anything is signed.
    await page.fill('#edit-amount_cents', '20.5');
    await page.click('#edit-review');
    expect(await page.textContent('#edit-outcome')).toContain('amount_cents must be a whole number');
    await page.fill('#edit-amount_cents', '2000');
    await page.fill('#edit-why', 'the customer asked for 2,000');
    await page.click('#edit-review');
    expect(await page.textContent('#edit-diff')).toContain('amount_cents 2590 → 2000');
    await saveScreenshot({ page, name: 'approval-edit' });
    await page.click('#edit-sign');
    // The new round: the edited arguments, the effect previewed again, and why it replaced the first.
    await page.waitForURL(/after=1/, { timeout: 15_000 });
    await page.waitForSelector('#round-supersedes');
    expect(await page.textContent('#round-supersedes')).toContain(
      'alice edited the arguments: the customer asked for 2,000',
    );
    expect(await page.textContent('#arguments')).toContain('"amount_cents": 2000');
    expect((await page.textContent('#edits'))?.replace(/\s+/g, ' ')).toContain('amount_cents 2590 → 2000');
    expect(await appliedRefunds()).toBe(0);
    await page.waitForSelector('#approve:not([disabled])');
    await page.click('#approve');
    await expect
      .poll(() => page.textContent('#decision-outcome'), { timeout: 20_000 })
      .toContain('Accepted: the call is approved');
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({
      ok: true,
      effect: 'applied',
      edited: { by: ['alice'], changes: [{ field: 'amount_cents', proposed: 2590, edited: 2000 }] },
    });
    const refunds = await harness.orders.api.listRefunds({ orderId: 'ORD-1001' });
    expect(refunds.map((refund) => refund.amountCents)).toEqual([2000]);
    expect(requested.filter((url) => !url.startsWith(`${approvals.url}/`))).toEqual([]);
  });

  it('denies a refund with a reason: none applied, and the model is told the reason', async () => {
    await enrolAndSignIn('bob');
    const pending = await proposeRefund();
    await page.goto(`${approvals.url}/calls/${pending.callId}`);
    await page.fill('#reason', 'approve 2590, not 25900');
    await page.click('#deny');
    await expect
      .poll(() => page.textContent('#decision-outcome'), { timeout: 20_000 })
      .toContain('Accepted: the call is denied');

    const result = await harness.client.result(pending.callId);
    expect(result).toMatchObject({ ok: false, code: 'APPROVAL_DENIED', effect: 'none' });
    expect(result?.message).toContain('approve 2590, not 25900');
    expect(await appliedRefunds()).toBe(0);
    // The history shows who denied it, when and why.
    await page.goto(`${approvals.url}/history`);
    expect(await page.textContent('#closed')).toContain('approve 2590, not 25900');
  });

  it('refuses to sign when the arguments it shows are not the round’s: nothing is sent, the call still waits', async () => {
    await enrolAndSignIn('dave');
    const pending = await proposeRefund();
    // A page whose data was changed on its way (or by the server): 25.90 shown where 2590 is bound.
    await page.route(`${approvals.url}/calls/**`, async (route) => {
      const response = await route.fetch();
      const body = (await response.text()).replace('"amount_cents":2590', '"amount_cents":25');
      await route.fulfill({ response, body });
    });
    await page.goto(`${approvals.url}/calls/${pending.callId}`);
    // The page shows what its data says, and says why it will not sign it.
    await expect.poll(() => page.textContent('#decision-outcome')).toContain('Not signing');
    expect(await page.textContent('#decision-outcome')).toContain("the round's argsDigest");
    expect(await page.textContent('#arguments')).toContain('"amount_cents": 25,');
    expect(await page.isDisabled('#approve')).toBe(true);
    expect(await page.isDisabled('#deny')).toBe(true);
    // Even a click forced through the disabled button sends nothing.
    await page.$eval('#approve', (button) => {
      (button as unknown as { disabled: boolean; click(): void }).disabled = false;
      (button as unknown as { click(): void }).click();
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(requested.filter((url) => url.includes('/decisions'))).toEqual([]);
    const state = await harness.admin.show(pending.callId);
    expect(state?.result).toBeUndefined();
    expect(state?.approval).toMatchObject({ state: 'pending', approvals: [] });
    expect(await appliedRefunds()).toBe(0);
  });

  it('revokes a standing grant Alice signed, with the key this browser holds: the next refund waits', async () => {
    // Small refunds only (at most 100 cents each), so the other tests' refunds never run on it.
    const signed = signGrant({
      taskQueue: harness.taskQueue,
      caller: 'support-bot',
      tool: 'refund_order',
      maxLevel: 'irreversible',
      maxCalls: 5,
      maxAmountPerCall: 100,
      expiresAt: new Date(Date.now() + 60 * 60 * 1000),
      reason: 'tiny goodwill refunds',
      approver: 'alice',
      approverKey: harness.approverKey('alice'),
    });
    expect(await addGrant({ client: harness.temporal, taskQueue: harness.taskQueue, signed })).toMatchObject({
      accepted: true,
    });
    const { grantId } = signed.grant;
    await enrolAndSignIn('alice');
    await page.click('header a[href="/grants"]');
    await page.waitForURL(`${approvals.url}/grants`);
    const card = page.locator(`li.grant-card[data-grant-id="${grantId}"]`);
    expect(await card.locator('.state').textContent()).toBe('active');
    expect(await card.textContent()).toContain('tiny goodwill refunds');
    expect(await card.textContent()).toContain('0 of 5');
    expect(await fitsTheScreen()).toBe(true);
    await saveScreenshot({ page, name: 'grants' });

    await card.locator('textarea').fill('the agent is refunding the wrong orders');
    await card.locator('button.revoke').click();
    await expect
      .poll(() => card.locator('.revoke-outcome').textContent(), { timeout: 20_000 })
      .toContain('Revoked: the grant is revoked');
    expect(await card.locator('.state').textContent()).toBe('revoked');
    const listed = (await listGrants({ client: harness.temporal, taskQueue: harness.taskQueue })).grants.find(
      (entry) => entry.grant.grantId === grantId,
    );
    expect(listed).toMatchObject({
      state: 'revoked',
      revoked: { by: 'alice', reason: 'the agent is refunding the wrong orders' },
    });
    // The page as the server renders it now says so too.
    await page.reload();
    expect(await card.getAttribute('data-state')).toBe('revoked');
    expect(await card.locator('.grant-revoked').textContent()).toContain(
      'the agent is refunding the wrong orders',
    );
    expect(await card.locator('form').count()).toBe(0);

    const next = await proposeRefund({ amount_cents: 50 });
    expect(next).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });
    expect(await appliedRefunds()).toBe(0);
    await harness.client.cancel({ callId: next.callId, caller: 'support-bot', reason: 'test done' });
    expect(requested.filter((url) => !url.startsWith(`${approvals.url}/`))).toEqual([]);
  });

  it('shows why a refund its caller runs alone waits: the conversation read untrusted text, for whom', async () => {
    await enrolAndSignIn('alice');
    const session = harness.newSession();
    const context = { onBehalfOf: 'CUS-3', channel: 'internal-console' };
    const call = (tool: string, args: Record<string, unknown>) =>
      harness.client.call({ session, caller: 'test-refunder', context, tool, arguments: args });
    // ORD-1003's customer note is untrusted text: it entered the conversation.
    expect((await call('get_order', { order_id: 'ORD-1003' })).code).toBe('OK');
    const pending = await call('refund_order', {
      order_id: 'ORD-1003',
      amount_cents: 1000,
      currency: 'BRL',
      reason: 'damaged',
    });
    expect(pending).toMatchObject({ code: 'APPROVAL_PENDING', effect: 'none' });

    await page.goto(`${approvals.url}/calls/${pending.callId}`);
    await page.waitForSelector('#decision-form');
    expect(await page.textContent('#rule')).toMatch(
      /^this conversation read untrusted text from get_order\.note at \d\d:\d\d UTC: approval by 1 approver/,
    );
    expect(await page.textContent('.acting-for')).toBe('for CUS-3 (internal-console)');
    await page.fill('#reason', 'the note asked for it, not the customer');
    await page.click('#deny');
    await expect
      .poll(() => page.textContent('#decision-outcome'), { timeout: 20_000 })
      .toContain('Accepted: the call is denied');
    expect(await appliedRefunds()).toBe(0);
  });

  it('removes an invite link’s secret from the address bar on every page the link can open', async () => {
    const link = await enrolAndSignIn('carol');
    // The same link again: the invite is used; the page says so, and the secret is gone at once.
    await page.goto(link);
    expect(await page.textContent('#invite-problem')).toContain('INVITE_USED');
    expect(page.url()).toBe(link.replace(/#.*$/, ''));
    for (const path of ['/enrol/inv-nobody', '/enrol/inv-nobody/extra']) {
      await page.goto(`${approvals.url}${path}#${'s'.repeat(43)}`);
      await expect.poll(() => page.url()).toBe(`${approvals.url}${path}`);
      expect(
        await page.evaluate(() => (globalThis as unknown as { location: { hash: string } }).location.hash),
      ).toBe('');
    }
  });
});
