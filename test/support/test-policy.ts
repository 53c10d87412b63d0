import type { PolicyFile } from '../../src/index';

/**
 * The tests' policy. `test-refunder` may refund without approval (only tests ship such a caller);
 * the others mirror the default policy.
 */
export const testPolicy: PolicyFile = {
  version: 'test-1',
  callers: {
    'test-refunder': {
      tools: ['get_order', 'refund_order', 'echo_shape', 'explode'],
      autonomy: 'critical',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
    },
    'support-bot': {
      tools: ['get_order', 'refund_order'],
      autonomy: 'reversible',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
    },
    'readonly-bot': { tools: ['get_order'], autonomy: 'read' },
  },
};
