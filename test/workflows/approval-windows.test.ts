import { describe, expect, it } from 'vitest';
import { approvalHelpers } from '../support/approval-helpers';
import { testPolicy } from '../support/test-policy';
import type { ToolGateHarness } from '../support/toolgate-harness';
import { useHarness } from '../support/use-harness';

let harness: ToolGateHarness;

// support-bot's own windows are 4h for irreversible and critical calls; the tool's irreversible
// window is shorter, its critical one longer.
useHarness((started) => (harness = started), {
  policy: {
    ...testPolicy,
    tools: { refund_order: { approvalWindows: { irreversible: '90m', critical: '24h' } } },
  },
});

const { proposeRefund } = approvalHelpers(() => harness);

const minute = 60_000;

describe('approval windows per tool', () => {
  it('opens the round for the tool’s window when it is shorter than the caller’s, and the caller’s otherwise', async () => {
    const cases = [
      { overrides: {}, riskLevel: 'irreversible', windowMs: 90 * minute },
      {
        overrides: { order_id: 'ORD-1003', amount_cents: 20_000 },
        riskLevel: 'critical',
        windowMs: 240 * minute,
      },
    ];
    for (const { overrides, riskLevel, windowMs } of cases) {
      const pending = await proposeRefund(overrides);
      const answeredAt = Date.now();
      expect(pending.data).toMatchObject({ riskLevel });
      // The round opens once the call is evaluated and previewed: after its run started, before the answer.
      const { startTime } = await harness.temporal.workflow.getHandle(pending.callId).describe();
      const openedAt = Date.parse(String(pending.data?.expiresAt)) - windowMs;
      expect(openedAt).toBeGreaterThanOrEqual(startTime.getTime());
      expect(openedAt).toBeLessThanOrEqual(answeredAt);
    }
  });
});
