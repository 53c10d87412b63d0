import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PolicyFileInput } from 'toolgate';
import type { ApprovalsConsole } from 'toolgate/console';
import { approvalHelpers } from '../support/approval-helpers';
import { enrolInBrowser, launchBrowser, saveScreenshot } from '../support/browser';
import { startHarnessConsole } from '../support/console-helpers';
import { approversInGroups, testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// Where a call stands in its approval chain, in Debian's Chromium: the lead approves from the
// console, the page then shows the lead's step approved and finance's turn; finance approves; one
// refund is applied.

let harness: ToolGateHarness;
let approvals: ApprovalsConsole;
let browser: Browser;
let context: BrowserContext;
let page: Page;

const policy: PolicyFileInput = {
  ...testPolicy,
  callers: {
    ...testPolicy.callers,
    'cautious-bot': {
      ...testPolicy.callers['cautious-bot']!,
      approval: {
        ceiling: 'irreversible',
        chains: { irreversible: [{ group: 'support-lead' }, { group: 'finance' }] },
      },
    },
  },
  approvers: approversInGroups({ alice: ['support-lead'], dave: ['finance'] }),
};
useHarness((started) => (harness = started), { policy });
const { appliedRefunds, proposeRefund, decide } = approvalHelpers(() => harness);

beforeAll(async () => {
  approvals = await startHarnessConsole(harness);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await approvals?.stop();
});
beforeEach(async () => {
  context = await browser.newContext({ viewport: { width: 360, height: 780 } });
  page = await context.newPage();
});
afterEach(async () => {
  await context?.close();
});

/** Each step of the chain as the page shows it: `group:state`. */
async function steps(): Promise<string[]> {
  const items = page.locator('#chain li');
  const shown: string[] = [];
  for (let index = 0; index < (await items.count()); index++) {
    const item = items.nth(index);
    shown.push(`${await item.getAttribute('data-group')}:${await item.getAttribute('data-state')}`);
  }
  return shown;
}

describe('an approval chain in the console', () => {
  it('shows whose turn it is, step by step, as the lead and then finance approve: one refund', async () => {
    await enrolInBrowser({ harness, page, consoleUrl: approvals.url, approver: 'alice' });
    const pending = await proposeRefund({}, 'cautious-bot');
    await page.goto(`${approvals.url}/calls/${pending.callId}`);
    await page.waitForSelector('#chain');
    expect(await steps()).toEqual(['support-lead:current', 'finance:waiting']);
    expect(await page.textContent('#round-turn')).toContain('group support-lead (step 1 of 2)');

    await page.waitForSelector('#approve:not([disabled])');
    await page.fill('#reason', 'checked the photos');
    await page.click('#approve');
    await expect
      .poll(() => page.textContent('#decision-outcome'), { timeout: 20_000 })
      .toContain('Accepted: the call is pending');
    expect(await appliedRefunds()).toBe(0);

    await page.reload();
    await page.waitForSelector('#chain');
    expect(await steps()).toEqual(['support-lead:approved', 'finance:current']);
    expect(await page.textContent('#chain')).toContain('alice');
    expect(await page.textContent('#round-turn')).toContain('group finance (step 2 of 2)');
    expect(await page.textContent('#round-turn')).toContain('dave');
    await saveScreenshot({ page, name: 'approval-chain' });

    expect(await decide(pending.callId, 'dave')).toMatchObject({ accepted: true, state: 'approved' });
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({ ok: true });
    expect(await appliedRefunds()).toBe(1);
  });
});
