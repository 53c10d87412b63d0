import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codecKeysEnvironmentVariable, PayloadEncryptionCodec } from 'toolgate';
import type { ConsoleProcess, ConsoleProcessPlan } from '../../examples/orders/start';
import { startConsoleProcess } from '../../examples/orders/start';
import { approvalHelpers } from '../support/approval-helpers';
import { enrolInBrowser, launchBrowser } from '../support/browser';
import { harnessConsolePlan } from '../support/console-helpers';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

// The approvals console as `npm start` runs it (its own process, the very plan) while payloads are
// encrypted: it is handed the codec keys, so enrolment, sign-in, the queue and a decision work in a
// real browser; it is handed nothing that signs.

const codecKey = { id: 'console-test-key', key: randomBytes(32).toString('base64') };

let harness: ToolGateHarness;
let plan: ConsoleProcessPlan;
let approvals: ConsoleProcess;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const consoleLog: string[] = [];

useHarness((started) => (harness = started), { codec: { keys: [codecKey] } });
const { appliedRefunds, proposeRefund } = approvalHelpers(() => harness);

beforeAll(async () => {
  plan = harnessConsolePlan(harness);
  approvals = await startConsoleProcess({ plan, log: (line) => consoleLog.push(line) });
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 360, height: 780 } });
  page = await context.newPage();
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await approvals?.stop();
  if (plan) rmSync(plan.cwd, { recursive: true, force: true });
});

describe('the approvals console process under payload encryption', () => {
  it('is given the codec keys in its environment, and no key that signs', () => {
    expect(plan.env[codecKeysEnvironmentVariable]).toBe(`${codecKey.id}:${codecKey.key}`);
    expect(plan.args.join(' ')).not.toContain(codecKey.key);
    for (const argument of plan.args) expect(argument).not.toContain(harness.keysDirectory);
    expect(Object.keys(plan.env).filter((name) => /KEY|TOKEN|SECRET/.test(name))).toEqual([
      codecKeysEnvironmentVariable,
    ]);
  });

  it('enrols, signs in, shows the pending refund and relays the approval: one refund applied', async () => {
    await enrolInBrowser({ harness, page, consoleUrl: approvals.url, approver: 'alice' });
    const pending = await proposeRefund();
    const card = page.locator(`li.card[data-call-id="${pending.callId}"]`);
    await card.waitFor({ timeout: 15_000 });
    expect(await card.textContent()).toContain('refund 2590 BRL cents on ORD-1001');

    await card.locator('a').click();
    await page.waitForSelector('#decision-form');
    expect(await page.textContent('#arguments')).toContain('"amount_cents": 2590');
    await page.waitForSelector('#approve:not([disabled])');
    await page.fill('#reason', 'encrypted end to end');
    await page.click('#approve');
    await expect
      .poll(() => page.textContent('#decision-outcome'), { timeout: 20_000 })
      .toContain('Accepted: the call is approved');

    expect(await harness.client.result(pending.callId)).toMatchObject({ ok: true, code: 'OK' });
    expect(await appliedRefunds()).toBe(1);
    expect(consoleLog.join('\n')).not.toContain('Unknown encoding');
  });

  it("stores what it relays encrypted: the decision's payload in history opens only with the key", async () => {
    const pending = await proposeRefund({ amount_cents: 1500 });
    await page.goto(`${approvals.url}/calls/${pending.callId}`);
    await page.waitForSelector('#approve:not([disabled])');
    await page.fill('#reason', 'not this one');
    await page.click('#deny');
    await expect
      .poll(() => page.textContent('#decision-outcome'), { timeout: 20_000 })
      .toContain('Accepted: the call is denied');
    const history = await harness.temporal.workflow.getHandle(pending.callId).fetchHistory();
    const accepted = history.events?.find(
      (event) =>
        event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'decide',
    );
    const payload =
      accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0];
    expect(Buffer.from(payload?.metadata?.encoding ?? []).toString()).toBe('binary/encrypted');
    const codec = new PayloadEncryptionCodec({
      keys: [{ id: codecKey.id, key: Buffer.from(codecKey.key, 'base64') }],
    });
    const [opened] = await codec.decode([payload!]);
    expect(Buffer.from(opened!.data!).toString()).toContain('"decision":"deny"');
    expect(await appliedRefunds()).toBe(0);
  });
});
