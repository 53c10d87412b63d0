import type { PolicyFileInput } from 'toolgate';

/** The chaos suite's callers, each with a key pair generated into the run's temp folder. */
export const chaosCallers = {
  /** May refund on its own (like the tests' `test-refunder`): its refunds run without a human. */
  autonomous: 'chaos-refunder',
  /** Every refund needs one approval, as the default policy's `support-bot`. */
  approvee: 'support-bot',
} as const;

/** The approver who approves the suite's pending refunds after the server restart. */
export const chaosApprover = 'alice';

/**
 * Session guards lifted: an agent that retries a refund after `UPSTREAM_UNAVAILABLE` proposes the same
 * call again in the same conversation, and the chaos makes that common. The suite tests that no retry
 * applies a refund twice, not the loop guard or the circuit breaker (they have their own tests).
 */
const unguarded = { stepBudget: 100_000, loopLimit: 100_000, circuitThreshold: 100_000 };

/**
 * The chaos suite's policy: the default policy's refund rules (a 50,000-cent limit, `irreversible`
 * refunds approved by one approver), for one caller that may refund alone and one that may not.
 * Key files are relative to the run's keys folder.
 */
export const chaosPolicy: PolicyFileInput = {
  version: 'chaos-1',
  callers: {
    [chaosCallers.autonomous]: {
      publicKey: `callers/${chaosCallers.autonomous}.pub`,
      tools: ['get_order', 'refund_order'],
      autonomy: 'critical',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
      session: unguarded,
    },
    [chaosCallers.approvee]: {
      publicKey: `callers/${chaosCallers.approvee}.pub`,
      tools: ['get_order', 'refund_order'],
      autonomy: 'reversible',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
      approval: { ceiling: 'critical', windows: { irreversible: '4h', critical: '4h' } },
      session: unguarded,
    },
  },
  approvers: {
    [chaosApprover]: { publicKey: `approvers/${chaosApprover}.pub`, maxLevel: 'critical', operates: [] },
  },
};
