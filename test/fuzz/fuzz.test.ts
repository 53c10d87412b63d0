// 300 random and mutated proposals through the real client, on the run's shared dev server, with
// the tests' worker and orders service. `npm run fuzz` runs the same campaign at any size.
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolCallWorkflowType } from 'toolgate/protocol';
import { temporalAddress } from '../support/temporal';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { startHarness } from '../support/toolgate-harness';
import type { FuzzReport } from './fuzz-campaign';
import { formatFuzzReport, runFuzzCampaign } from './fuzz-campaign';
import { inspectWorkflows } from './workflow-health';

/** The campaign's seed: fixed, so `npm test` is repeatable; TOOLGATE_FUZZ_SEED draws another. */
const seed = Number(process.env.TOOLGATE_FUZZ_SEED ?? 9);
const payloads = 300;

// The test tools log their failures on purpose (explode's error, echo_shape's broken output): those
// are left out of the output; every other worker error is shown.
const shown = new DefaultLogger('ERROR');
const logger = new DefaultLogger('ERROR', (entry) => {
  const tool: unknown = entry.meta?.tool;
  if (tool === 'explode' || tool === 'echo_shape') return;
  shown.log(entry.level, entry.message, entry.meta);
});

describe(`fuzz: ${payloads} random and mutated proposals (seed ${seed}; TOOLGATE_FUZZ_SEED to change)`, () => {
  let harness: ToolGateHarness | undefined;
  let report: FuzzReport;

  beforeAll(async () => {
    harness = await startHarness({ address: temporalAddress(), logger });
    report = await runFuzzCampaign({
      target: harness,
      payloads,
      seed,
      concurrency: 8,
      // Above the client's own 30 s of retries for a task a busy machine left failed.
      callTimeoutMs: 90_000,
    });
    const summary = `fuzz seed ${seed}: ${report.payloads} payloads, ${report.payloadsPerSecond.toFixed(1)}/s`;
    // The whole report when something broke, so the failure comes with its reproducers.
    process.stdout.write(`${report.violations.length === 0 ? summary : formatFuzzReport(report)}\n`);
  });
  afterAll(async () => {
    await harness?.stop();
  });

  it('proposes every payload', () => {
    expect(report.payloads).toBe(payloads);
  });

  it('never throws in the client', () => {
    expect(report.clientExceptions).toEqual([]);
  });

  it('fails no workflow task', () => {
    expect(report.workflows.taskFailures).toEqual([]);
  });

  it('applies no refund: every caller here needs approval for one, or may not ask', () => {
    expect(report.refundsApplied).toBe(0);
    expect(report.effectsNotNone).toEqual([]);
  });

  it('reaches the orders service exactly as often as the answers account for', () => {
    const unknownCost = Object.entries(report.backend.byOutcome).filter(
      ([, entry]) => entry.requestsEach === 'unknown',
    );
    expect(unknownCost).toEqual([]);
    expect(report.backend.seen).toBe(report.backend.expected);
  });

  it('answers every proposal as the reference model does', () => {
    expect(report.wrongAnswers).toEqual([]);
    expect(report.unchecked).toBe(0);
  });

  it('runs sessions past the default step budget, so STEP_LIMIT is checked too', () => {
    expect(report.answersByCode.STEP_LIMIT ?? 0).toBeGreaterThan(0);
  });

  it("attaches contexts: another customer's order, a changed or hostile context, a bound field sent", () => {
    for (const code of ['ORDER_NOT_OWNED', 'CONTEXT_MISMATCH', 'CONTEXT_INVALID', 'BOUND_PARAMETER_SENT']) {
      expect(report.answersByCode[code] ?? 0, code).toBeGreaterThan(0);
    }
  });

  it('answers with well-formed ToolResults that leak no internal error', () => {
    expect(report.malformedResults).toEqual([]);
  });

  it('closes every run with a ToolResult, except the calls waiting for approval', () => {
    expect(report.workflows.unexpectedRuns).toEqual([]);
    expect(report.workflows.callRunsSeen).toBe(report.workflows.callRunsExpected);
  });

  it('reads a failing workflow task from the histories (the check is not vacuous)', async () => {
    const { temporal, taskQueue } = harness!;
    // A raw start with an input that is no proposal: the call workflow throws a TypeError, which
    // fails its workflow task (and every retry of it) without closing the run.
    const probe = await temporal.workflow.start(toolCallWorkflowType, {
      taskQueue,
      workflowId: `fuzz-probe-${seed}-${Date.now()}`,
      args: [{}],
    });
    try {
      let failed = false;
      for (let attempt = 0; attempt < 100 && !failed; attempt++) {
        const history = await probe.fetchHistory();
        failed = (history.events ?? []).some((event) => event.workflowTaskFailedEventAttributes != null);
        if (!failed) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const health = await inspectWorkflows({
        temporal,
        taskQueue,
        waitingCallIds: new Set(),
        settleTimeoutMs: 1_000,
      });
      expect(health.taskFailures.map((failure) => failure.workflowId)).toContain(probe.workflowId);
      expect(health.unexpectedRuns.map((run) => run.workflowId)).toContain(probe.workflowId);
    } finally {
      await probe.terminate('fuzz probe done');
    }
  });
});
