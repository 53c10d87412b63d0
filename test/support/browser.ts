import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { inviteApprover } from 'toolgate';
import type { ToolGateHarness } from './toolgate-harness';

/** The binary names Debian's chromium package (and some other distributions) put on PATH. */
const chromiumNames = ['chromium', 'chromium-browser'] as const;

const installHint =
  "install Debian's chromium package (`apt-get install -y --no-install-recommends chromium`, which .ci/run " +
  'does when no chromium is on PATH) or set CHROMIUM_PATH to a Chromium or Chrome binary';

/** Where the system's Chromium is: CHROMIUM_PATH, else the first `chromium` or `chromium-browser` on PATH. */
export type ChromiumLookup = { ok: true; executablePath: string } | { ok: false; reason: string };

/**
 * Finds the system's Chromium without starting it: CHROMIUM_PATH when set (which must then be an
 * executable file; it never falls back to PATH), else `chromium` or `chromium-browser` on PATH, as
 * `which` would. Never downloads a browser.
 */
export function findChromium(input: { env?: NodeJS.ProcessEnv } = {}): ChromiumLookup {
  const env = input.env ?? process.env;
  const configured = env.CHROMIUM_PATH;
  if (configured !== undefined && configured !== '') {
    return isExecutableFile(configured)
      ? { ok: true, executablePath: configured }
      : {
          ok: false,
          reason:
            `CHROMIUM_PATH is ${configured}, which is not an executable file; point it at a Chromium ` +
            'binary, or unset it to use chromium from PATH.',
        };
  }
  const directories = (env.PATH ?? '').split(delimiter).filter((directory) => directory !== '');
  for (const name of chromiumNames) {
    for (const directory of directories) {
      const candidate = join(directory, name);
      if (isExecutableFile(candidate)) return { ok: true, executablePath: candidate };
    }
  }
  return { ok: false, reason: `No chromium or chromium-browser on PATH; ${installHint}.` };
}

/**
 * Launches the system's Chromium headless through playwright-core (see `findChromium`), sandbox off
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
    throw new Error(`Chromium at ${lookup.executablePath} did not start; ${installHint}.`, { cause: error });
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

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
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
