import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AuditReport } from 'toolgate/admin';
import { approvalHelpers } from '../support/approval-helpers';
import { harnessCli, runCliCapturing } from '../support/cli-runner';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

useHarness((started) => (harness = started));

const { proposeRefund, decide } = approvalHelpers(() => harness);
const cli = harnessCli(() => harness);

describe('toolgate report', () => {
  it('reports a real session: its rejection, the recovery after it, and an approval', async () => {
    const started = new Date(Date.now() - 1_000).toISOString();
    const invalid = await harness.call({
      caller: 'support-bot',
      tool: 'refund_order',
      arguments: harness.refundArguments({ amount_cents: 25.9 }),
    });
    expect(invalid.code).toBe('INVALID_ARGUMENTS');
    const pending = await proposeRefund();
    await decide(pending.callId, 'alice');
    expect(await harness.client.result(pending.callId, { wait: true })).toMatchObject({ code: 'OK' });

    cli.useHarnessFiles();
    // The worker's own store: the report reads what the worker wrote.
    process.env.TOOLGATE_TEST_AUDIT = join(harness.keysDirectory, '..', 'audit.sqlite');
    const run = await cli.run('report', '--since', started, '--json');
    expect(run.error).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.out) as AuditReport;
    expect(report.totals).toEqual({ calls: 2, rejected: 1, rejectionRate: 0.5 });
    expect(report.tools).toEqual([
      {
        tool: 'refund_order',
        calls: 2,
        rejected: 1,
        rejectionRate: 0.5,
        codes: [{ code: 'INVALID_ARGUMENTS', count: 1, rate: 0.5 }],
      },
    ]);
    // The model's next call in the session (the refund, approved) succeeded.
    expect(report.recovery).toEqual({
      invalidArguments: 1,
      recovered: 1,
      notRecovered: 0,
      noNextCall: 0,
      rate: 1,
    });
    expect(report.approvals.approved.count).toBe(1);
    expect(report.approvals.denied).toEqual({ count: 0 });

    const text = await cli.run('report', '--since', started);
    expect(text.code).toBe(0);
    expect(text.out).toContain('refund_order: 1 of 2 rejected (50.0%)');
    expect(text.out).toContain('recovery after INVALID_ARGUMENTS: 100.0%');
    expect(text.out).toMatch(/approved: 1, time to decision median \d+s/);
  });

  it('refuses a window it cannot read before it opens anything', async () => {
    const run = await runCliCapturing(['report', '--since', 'yesterday', '--config', 'no-such-config.ts']);
    expect(run.code).toBe(2);
    expect(run.error).toContain('INVALID_DATE: --since "yesterday" is not a date');
  });
});
