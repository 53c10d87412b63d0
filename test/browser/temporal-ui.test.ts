import { resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from 'toolgate';
import type { DevServer } from 'toolgate/testing';
import { prepareNamespace, startDevServer } from 'toolgate/testing';
import { launchBrowser, saveScreenshot } from '../support/browser';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';

// What ops see in the Temporal Web UI, in Chromium against the dev server's own UI (the test run's
// shared server is headless, so this file starts one with its UI): the workflow list names each
// call's tool in its id, and the saved view docs/operations.md gives for calls waiting for approval
// lists exactly those.

const pendingView = 'ApprovalState = "pending" AND ExecutionStatus = "Running"';

let server: DevServer;
let harness: ToolGateHarness;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  server = await startDevServer({ projectRoot: resolve(__dirname, '..', '..'), log: () => undefined });
  const connection = await Connection.connect({ address: server.address });
  try {
    await prepareNamespace({ connection, namespace: server.namespace });
  } finally {
    await connection.close();
  }
  harness = await startHarness({ address: server.address });
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await harness?.stop();
  await server?.stop();
});

/** Waits until Temporal's visibility lists `callIds` under `query` (it is eventually consistent). */
async function listed(query: string, callIds: string[]): Promise<void> {
  await expect
    .poll(
      async () => {
        const seen: string[] = [];
        for await (const execution of harness.temporal.workflow.list({ query }))
          seen.push(execution.workflowId);
        return callIds.every((id) => seen.includes(id));
      },
      { timeout: 20_000 },
    )
    .toBe(true);
}

/** The workflow ids the UI's list shows for `query` (none: every workflow), once `expected` is among them. */
async function idsInTheList(input: { query?: string; expected: string }): Promise<string[]> {
  const search = input.query === undefined ? '' : `?query=${encodeURIComponent(input.query)}`;
  await page.goto(`${server.uiUrl}/namespaces/${server.namespace}/workflows${search}`);
  await page.getByText(input.expected).first().waitFor({ timeout: 30_000 });
  const text = (await page.textContent('body')) ?? '';
  return [...new Set(text.match(/tc-[a-z0-9_]*-?[0-9a-f]{64}/g) ?? [])];
}

describe('the Temporal Web UI', () => {
  it('names each call tool in its id, and the pending view lists only the calls waiting for approval', async () => {
    const read = await harness.call({
      caller: 'support-bot',
      tool: 'get_order',
      arguments: '{"order_id":"ORD-1001"}',
    });
    const pending = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: { order_id: 'ORD-1001', amount_cents: 2590, currency: 'BRL', reason: 'damaged' },
    });
    // The model's cents mistake: refused at the schema, so the run closed failed.
    const refused: ToolResult = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: { order_id: 'ORD-1002', amount_cents: 25.9, currency: 'USD', reason: 'damaged' },
    });
    expect([read.code, pending.code, refused.code]).toEqual(['OK', 'APPROVAL_PENDING', 'INVALID_ARGUMENTS']);
    expect(read.callId).toMatch(/^tc-get_order-[0-9a-f]{64}$/);
    expect(pending.callId).toMatch(/^tc-refund_order-[0-9a-f]{64}$/);
    expect(refused.callId).toMatch(/^tc-refund_order-[0-9a-f]{64}$/);
    await listed('WorkflowType = "toolCall"', [read.callId, pending.callId, refused.callId]);
    await listed(pendingView, [pending.callId]);

    // The whole list: a read and the two refunds, each id saying which tool it is.
    const all = await idsInTheList({ expected: read.callId });
    expect(all).toEqual(expect.arrayContaining([read.callId, pending.callId, refused.callId]));
    expect(await page.getByText(read.callId).first().isVisible()).toBe(true);
    await saveScreenshot({ page, name: 'temporal-ui-calls' });

    // The saved view for approvers' work: only the refund that waits.
    const waiting = await idsInTheList({ query: pendingView, expected: pending.callId });
    expect(waiting).toEqual([pending.callId]);
    await saveScreenshot({ page, name: 'temporal-ui-pending-approval' });
  });
});
