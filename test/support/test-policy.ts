import type { PolicyFileInput } from 'toolgate';

/** The callers the tests' harness generates keys for. */
export const testCallers = [
  'test-refunder',
  'support-bot',
  'readonly-bot',
  'hasty-bot',
  'cautious-bot',
  'loopy-bot',
  'thrifty-bot',
  'sleepy-bot',
  'burst-bot',
] as const;
/** The approvers the tests' harness generates keys for. */
export const testApprovers = ['alice', 'bob', 'carol', 'dave'] as const;
/** The operators the tests' harness generates keys for (`mallory` has a key but is not in the policy). */
export const testOperators = ['olivia', 'mallory'] as const;

/**
 * The tests' policy. `test-refunder` may refund without approval (only tests ship such a caller);
 * `support-bot` mirrors the default policy (every refund needs approval, two approvers above
 * 10,000 cents); `hasty-bot`'s approvals expire after one second. Key files are relative to the
 * harness's keys folder.
 */
export const testPolicy: PolicyFileInput = {
  version: 'test-1',
  callers: {
    'test-refunder': {
      publicKey: 'callers/test-refunder.pub',
      tools: ['get_order', 'refund_order', 'echo_shape', 'explode', 'missing_field'],
      autonomy: 'critical',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
    },
    'support-bot': {
      publicKey: 'callers/support-bot.pub',
      tools: ['get_order', 'refund_order'],
      autonomy: 'reversible',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
      approval: {
        ceiling: 'critical',
        windows: { irreversible: '4h', critical: '4h' },
        quorum: { critical: 2 },
      },
    },
    'readonly-bot': { publicKey: 'callers/readonly-bot.pub', tools: ['get_order'], autonomy: 'read' },
    'hasty-bot': {
      publicKey: 'callers/hasty-bot.pub',
      tools: ['refund_order'],
      autonomy: 'reversible',
      approval: { ceiling: 'critical', windows: { irreversible: '1s' } },
    },
    'cautious-bot': {
      publicKey: 'callers/cautious-bot.pub',
      tools: ['refund_order'],
      autonomy: 'reversible',
      approval: { ceiling: 'irreversible' },
    },
    // The seed article's guards: a loop limit of 2, a budget of 2.
    'loopy-bot': {
      publicKey: 'callers/loopy-bot.pub',
      tools: ['get_order'],
      autonomy: 'read',
      session: { loopLimit: 2 },
    },
    'sleepy-bot': {
      publicKey: 'callers/sleepy-bot.pub',
      tools: ['get_order'],
      autonomy: 'read',
      session: { idleTimeout: '1s' },
    },
    // A conversation long enough for a burst of hundreds of proposals in one turn.
    'burst-bot': {
      publicKey: 'callers/burst-bot.pub',
      tools: ['get_order', 'refund_order'],
      autonomy: 'reversible',
      limits: { refund_order: { amount_cents: { max: 50_000 } } },
      approval: { ceiling: 'critical', windows: { irreversible: '4h', critical: '4h' } },
      session: { stepBudget: 1_000, loopLimit: 3 },
    },
    'thrifty-bot': {
      publicKey: 'callers/thrifty-bot.pub',
      tools: ['get_order'],
      autonomy: 'read',
      session: { stepBudget: 2 },
    },
  },
  approvers: {
    alice: { publicKey: 'approvers/alice.pub', maxLevel: 'critical', operates: [] },
    bob: { publicKey: 'approvers/bob.pub', maxLevel: 'irreversible', operates: [] },
    carol: { publicKey: 'approvers/carol.pub', maxLevel: 'critical', operates: ['support-bot'] },
    dave: { publicKey: 'approvers/dave.pub', maxLevel: 'critical', operates: [] },
  },
  operators: {
    olivia: { publicKey: 'operators/olivia.pub' },
  },
};

/** The tests' approvers, each in the approval groups named for them (an approval chain's steps name them). */
export function approversInGroups(groups: Partial<Record<(typeof testApprovers)[number], string[]>>) {
  const approvers = { ...testPolicy.approvers };
  for (const [name, named] of Object.entries(groups))
    approvers[name] = { ...approvers[name]!, groups: named };
  return approvers;
}
