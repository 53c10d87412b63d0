import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inviteApprover } from 'toolgate';
import type { ApprovalsConsole } from 'toolgate/console';
import { approvalHelpers } from '../support/approval-helpers';
import { launchBrowser, saveScreenshot } from '../support/browser';
import { startHarnessConsole } from '../support/console-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// The approvals console in Debian's Chromium: an approver enrols this browser's key through an
// invite link, signs in with it, sees a pending refund with its preview, and decides; the orders
// service's applied refunds are the proof. Phone-sized: 360 px wide.

let harness: ToolGateHarness;
let approvals: ApprovalsConsole;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Every URL the page requested: all of them must be the console's own. */
let requested: string[];

useHarness((started) => (harness = started));
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

/** Olivia invites `approver`; the browser opens the link, makes its key, enrols it and signs in. */
async function enrolAndSignIn(approver: string): Promise<void> {
  const { link } = await inviteApprover({
    client: harness.temporal,
    taskQueue: harness.taskQueue,
    approver,
    operator: 'olivia',
    operatorKey: harness.operatorKey('olivia'),
    consoleUrl: approvals.url,
  });
  await page.goto(link);
  // The secret left the address bar as soon as the page read it.
  expect(page.url()).not.toContain('#');
  await page.fill('#label', `${approver}-phone`);
  await page.click('#enrol');
  await page.waitForSelector('#to-login');
  expect(await page.textContent('#enrol-outcome')).toContain(`for ${approver}`);
  await page.click('#to-login');
  await page.click('button.key');
  await page.waitForURL(`${approvals.url}/`);
  expect(await page.textContent('header')).toContain(`${approver} · ${approver}-phone`);
}

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
    await page.fill('#reason', 'customer sent photos of the damage');
    await page.click('#approve');
    await expect
      .poll(() => page.textContent('#decision-outcome'), { timeout: 20_000 })
      .toContain('Accepted: the call is approved');

    expect(await harness.client.result(pending.callId)).toMatchObject({
      ok: true,
      code: 'OK',
      effect: 'applied',
    });
    expect(await appliedRefunds()).toBe(1);
    expect(harness.audit.decisionAttemptsOf(pending.callId)).toContainEqual(
      expect.objectContaining({ source: 'admin', approver: 'alice', outcome: 'accepted' }),
    );
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
});
