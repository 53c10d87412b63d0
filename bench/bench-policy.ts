import type { PolicyFileInput } from 'toolgate';

/** Session guards high enough that no bench call is refused by its session: the bench measures calls, not guards. */
const unguarded = { stepBudget: 100_000, loopLimit: 100_000, circuitThreshold: 100_000 };

/** The bench's callers, each with a key pair generated into the run's temp folder. */
export const benchCallers = {
  /** Reads orders alone (the governed read). */
  reader: 'bench-reader',
  /** May refund without approval (the governed rejection: its malformed refunds fail at the schema step). */
  refunder: 'bench-refunder',
  /** Every refund needs one approval (decision to effect). */
  approvee: 'bench-approvee',
} as const;

/** The approver who approves the bench's refunds. */
export const benchApprover = 'bench-approver';

/**
 * The bench-only policy. It mirrors the default policy's rules for reads and approvals, but lifts
 * the session guards so that long runs are never refused by them; key files are relative to the
 * run's keys folder.
 */
export const benchPolicy: PolicyFileInput = {
  version: 'bench-1',
  callers: {
    [benchCallers.reader]: {
      publicKey: `callers/${benchCallers.reader}.pub`,
      tools: ['get_order'],
      autonomy: 'read',
      session: unguarded,
    },
    [benchCallers.refunder]: {
      publicKey: `callers/${benchCallers.refunder}.pub`,
      tools: ['get_order', 'refund_order'],
      autonomy: 'critical',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
      session: unguarded,
    },
    [benchCallers.approvee]: {
      publicKey: `callers/${benchCallers.approvee}.pub`,
      tools: ['get_order', 'refund_order'],
      autonomy: 'reversible',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
      approval: { ceiling: 'critical', windows: { irreversible: '1h', critical: '1h' } },
      session: unguarded,
    },
  },
  approvers: {
    [benchApprover]: { publicKey: `approvers/${benchApprover}.pub`, maxLevel: 'critical', operates: [] },
  },
};
