import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { inviteApprover } from 'toolgate/admin';
import { chromiumInstallHint, findChromium } from './chromium';
import type { ToolGateHarness } from './toolgate-harness';

/**
 * Launches the system's Chromium headless through playwright-core (see `findChromium`; the test run's
 * global setup installed it when it could), sandbox off
 * (CI containers run as root without user namespaces). Throws an error that says how to install
 * Chromium when none is found. The caller owns the browser and closes it (in `afterAll`).
 */
export async function launchBrowser(input: { args?: string[] } = {}): Promise<Browser> {
  const lookup = findChromium();
  if (!lookup.ok) throw new Error(`The browser tests need Chromium. ${lookup.reason}`);
  try {
    return await chromium.launch({
      executablePath: lookup.executablePath,
      headless: true,
      // /dev/shm is 64 MB in a default Docker container, too small for Chromium's shared memory.
      args: ['--no-sandbox', '--disable-dev-shm-usage', ...(input.args ?? [])],
    });
  } catch (error) {
    throw new Error(`Chromium at ${lookup.executablePath} did not start; ${chromiumInstallHint}.`, {
      cause: error,
    });
  }
}

/** The folder screenshots go to: under test-results/, which git ignores and CI keeps as the test output. */
export const screenshotFolder = join(__dirname, '..', '..', 'test-results', 'browser');

/**
 * Writes a full-page PNG of `page` to `test-results/browser/<name>.png` (creating the folder) and
 * returns its path, so a person can look at what the test saw. Overwrites an earlier run's file.
 */
export async function saveScreenshot(input: { page: Page; name: string }): Promise<string> {
  if (!/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(input.name)) {
    throw new Error(
      `saveScreenshot: name ${JSON.stringify(input.name)} must be kebab-case, like 'approval-queue'`,
    );
  }
  mkdirSync(screenshotFolder, { recursive: true });
  const path = join(screenshotFolder, `${input.name}.png`);
  await input.page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * What an approver does once: operator olivia invites `approver`, the page opens the invite link,
 * makes its key, enrols it and signs in with it. Resolves to the invite link.
 */
export async function enrolInBrowser(input: {
  harness: ToolGateHarness;
  page: Page;
  consoleUrl: string;
  approver: string;
}): Promise<string> {
  const { harness, page, consoleUrl, approver } = input;
  const { link } = await inviteApprover({
    client: harness.temporal,
    taskQueue: harness.taskQueue,
    approver,
    operator: 'olivia',
    operatorKey: harness.operatorKey('olivia'),
    consoleUrl,
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
  await page.waitForURL(`${consoleUrl}/`);
  expect(await page.textContent('header')).toContain(`${approver} · ${approver}-phone`);
  return link;
}
