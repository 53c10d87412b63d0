import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrdersApiClient } from '../../examples/orders/orders-api-client';
import { launchBrowser, saveScreenshot } from '../support/browser';

// The README's ten-minute tour, as a newcomer follows it: `npm start` (its very command, in a state
// folder and on ports of its own), the refund command it prints, alice's enrolment link it prints
// opened in Chromium, the refund approved there, and the `status --wait` command it prints. Nothing
// is taken from anywhere but what `npm start` printed; the orders service's refunds are the proof.

const projectRoot = resolve(__dirname, '..', '..');
const startTimeoutMs = 150_000;

let state: string;
let start: ChildProcess | undefined;
let startExited: Promise<void> | undefined;
let stdout = '';
let stderr = '';
let browser: Browser | undefined;
let page: Page;
let ports: Record<'temporal' | 'ui' | 'orders' | 'mcp' | 'console', number>;

/** `count` distinct free loopback ports: each one listened on at once (port 0), then all released. */
async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  await Promise.all(
    servers.map((server) => new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()))),
  );
  const found = servers.map((server) => (server.address() as AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise<void>((done) => server.close(() => done()))));
  return found;
}

/** This process's environment as a newcomer's shell would have it: none of the test run's Temporal or toolgate settings. */
function newcomerEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(TEMPORAL_|TOOLGATE_|VITEST|NODE_OPTIONS$|NODE_ENV$)/.test(name) && name !== 'TEMPORAL_CLI')
      continue;
    env[name] = value;
  }
  return { ...env, TOOLGATE_STATE: state };
}

/** The words of a command line as a POSIX shell splits them: blanks separate, single quotes keep. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/'([^']*)'|(\S+)/g)) words.push(match[1] ?? match[2] ?? '');
  return words;
}

/**
 * The printed `npm run toolgate -- <args>` line whose trailing comment is `# <comment>`, as the
 * arguments after `--`; `fill` replaces a placeholder (`<call id>`) in the line first.
 */
function printedToolgateCommand(comment: string, fill: Record<string, string> = {}): string[] {
  const line = stdout
    .split('\n')
    .find(
      (candidate) =>
        candidate.trimEnd().endsWith(`# ${comment}`) && candidate.includes('npm run toolgate --'),
    );
  if (line === undefined) throw new Error(`npm start printed no command marked "# ${comment}":\n${stdout}`);
  let command = line.slice(0, line.lastIndexOf('#')).trim();
  for (const [placeholder, value] of Object.entries(fill)) {
    expect(command).toContain(placeholder);
    command = command.replaceAll(placeholder, value);
  }
  const words = shellWords(command);
  expect(words.slice(0, 4)).toEqual(['npm', 'run', 'toolgate', '--']);
  return words.slice(4);
}

/** Runs what `npm run toolgate -- <args>` runs (package.json's `toolgate` script), in the tour's state folder. */
async function runToolgate(args: string[]): Promise<{ code: number | null; out: string; error: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=toolgate-source', 'scripts/toolgate-from-source.ts', ...args],
    { cwd: projectRoot, env: newcomerEnvironment(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let error = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (error += chunk.toString()));
  const code = await new Promise<number | null>((done, fail) => {
    child.once('error', fail);
    child.once('close', (exitCode) => done(exitCode));
  });
  return { code, out, error };
}

/** True while any process of the group `pgid` is left. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), 'toolgate-tour-'));
  const [temporal, ui, orders, mcp, consolePort] = await freePorts(5);
  ports = { temporal: temporal!, ui: ui!, orders: orders!, mcp: mcp!, console: consolePort! };
  // `npm start` is `tsx --conditions=toolgate-source examples/orders/start.ts`; the same through node,
  // in a process group of its own, so everything it starts can be ended together.
  start = spawn(
    process.execPath,
    ['--conditions=toolgate-source', '--import', 'tsx', 'examples/orders/start.ts'],
    {
      cwd: projectRoot,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...newcomerEnvironment(),
        TEMPORAL_PORT: String(ports.temporal),
        TEMPORAL_UI_PORT: String(ports.ui),
        ORDERS_PORT: String(ports.orders),
        MCP_PORT: String(ports.mcp),
        CONSOLE_PORT: String(ports.console),
      },
    },
  );
  const started = start;
  startExited = new Promise<void>((done) => started.once('exit', () => done()));
  started.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(
      () =>
        fail(
          new Error(`npm start did not say it runs within ${startTimeoutMs / 1000} s:\n${stdout}\n${stderr}`),
        ),
      startTimeoutMs,
    );
    started.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      // The whole block is one write; "Ctrl-C stops everything" is its last line.
      if (stdout.includes('toolgate is running.') && stdout.includes('Ctrl-C stops everything')) {
        clearTimeout(timer);
        done();
      }
    });
    started.once('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`npm start exited (${signal ?? `exit ${code}`}) before it ran:\n${stdout}\n${stderr}`));
    });
  });
  browser = await launchBrowser();
  page = await browser.newPage();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  const pid = start?.pid;
  if (pid !== undefined) {
    // Ctrl-C, as in the terminal: SIGINT to the whole group; whatever is left after 30 s is killed.
    if (groupAlive(pid)) process.kill(-pid, 'SIGINT');
    const killer = setTimeout(() => {
      if (groupAlive(pid)) process.kill(-pid, 'SIGKILL');
    }, 30_000);
    await startExited;
    // The group empties once its last process (the Temporal server, the console...) has exited.
    for (let waited = 0; groupAlive(pid) && waited < 40_000; waited += 100)
      await new Promise((done) => setTimeout(done, 100));
    clearTimeout(killer);
    if (groupAlive(pid)) process.kill(-pid, 'SIGKILL');
  }
  if (state) rmSync(state, { recursive: true, force: true });
  if (pid !== undefined) expect(groupAlive(pid), 'a process npm start started is still running').toBe(false);
}, 90_000);

describe('the README tour', () => {
  it('npm start, the printed refund waits, alice enrols from her printed link and approves, status says OK: one refund', async () => {
    // What npm start printed: where everything is, alice's one-time link and the commands to try.
    expect(stdout).toContain(`approvals:       http://127.0.0.1:${ports.console}`);
    expect(stdout).toContain('Enrol this browser as an approver: open a link, click once');
    const aliceLink = /^ {2}alice:\s+(http:\/\/127\.0\.0\.1:\d+\/enrol\/inv-\S+#\S+)$/m.exec(stdout)?.[1];
    expect(aliceLink, `no enrolment link for alice in:\n${stdout}`).toBeDefined();
    const refundCommand = printedToolgateCommand('APPROVAL_PENDING');
    expect(refundCommand).toEqual(
      expect.arrayContaining(['call', '--caller', 'support-bot', '--tool', 'refund_order', '--args']),
    );
    const printedArgs = JSON.parse(refundCommand[refundCommand.indexOf('--args') + 1] ?? '') as {
      order_id: string;
    };
    expect(stdout).toMatch(/npm run toolgate -- status .*<call id> --wait {3}# OK, effect applied/);

    // 2. The corrected refund waits for a human.
    const proposed = await runToolgate(refundCommand);
    expect(proposed.out, proposed.error).toMatch(/^APPROVAL_PENDING {2}refund_order/);
    // A call that has not (yet) succeeded exits 1, as every answer that is not OK does.
    expect(proposed.code).toBe(1);
    const callId = /call id: (tc-refund_order-[0-9a-f]{64})$/m.exec(proposed.out)?.[1];
    expect(callId, proposed.out).toBeDefined();

    // 3. Alice's link, in the browser: make the key and enrol (the one click), then sign in with it.
    await page.goto(aliceLink!);
    await page.click('#enrol');
    await page.waitForSelector('#to-login', { timeout: 20_000 });
    expect(await page.textContent('#enrol-outcome')).toContain('for alice');
    await page.click('#to-login');
    await page.click('button.key');
    await page.waitForURL(`http://127.0.0.1:${ports.console}/`);
    expect(await page.textContent('header')).toContain('alice');
    // The queue shows the refund with its preview; open it, write a reason, approve.
    const card = page.locator(`li.card[data-call-id="${callId}"]`);
    await card.waitFor({ timeout: 20_000 });
    expect(await card.textContent()).toContain(`on ${printedArgs.order_id}`);
    await card.locator('a').click();
    await page.waitForSelector('#decision-form');
    await page.waitForSelector('#approve:not([disabled])');
    await page.fill('#reason', 'photo checked');
    await page.click('#approve');
    await expect
      .poll(() => page.textContent('#decision-outcome'), { timeout: 20_000 })
      .toContain('Accepted: the call is approved');

    // 4. The effect, once.
    const status = await runToolgate(printedToolgateCommand('OK, effect applied', { '<call id>': callId! }));
    expect(status.out, status.error).toMatch(/^OK {2}refund_order/);
    expect(status.out).toContain(`call id: ${callId}`);
    expect(status.out).toMatch(/^ {2}effect: {2}applied$/m);
    expect(status.code).toBe(0);
    const orders = createOrdersApiClient({ baseUrl: `http://127.0.0.1:${ports.orders}` });
    expect(await orders.refundCount({ orderId: printedArgs.order_id })).toBe(1);
    expect(await orders.refundCount()).toBe(1);

    // The console's page of the call, now that it ran.
    await page.reload();
    await saveScreenshot({ page, name: 'readme-tour' });
  });
});
