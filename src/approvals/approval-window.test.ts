import { describe, expect, it } from 'vitest';
import { approvalWindowMs } from './approval-window';
import type { CallerPolicy, PolicyFile } from '../policy/policy-schema';

const hour = 60 * 60 * 1000;

/** A caller whose approvals of irreversible calls wait `window` (none when undefined). */
const caller = (window?: string): Pick<CallerPolicy, 'approval'> => ({
  approval: { ceiling: 'critical', ...(window ? { windows: { irreversible: window } } : {}) },
});

/** A policy whose refund_order approvals of irreversible calls wait `window` (no tools section when undefined). */
const policy = (
  window?: string,
  maxApprovalWindow?: string,
): Pick<PolicyFile, 'tools' | 'maxApprovalWindow'> => ({
  ...(window ? { tools: { refund_order: { approvalWindows: { irreversible: window } } } } : {}),
  ...(maxApprovalWindow ? { maxApprovalWindow } : {}),
});

const windowOf = (input: {
  policy: Pick<PolicyFile, 'tools' | 'maxApprovalWindow'>;
  callerPolicy: Pick<CallerPolicy, 'approval'>;
  tool?: string;
}) => approvalWindowMs({ tool: 'refund_order', level: 'irreversible', ...input });

describe('approvalWindowMs', () => {
  it('takes the tool’s window when it is shorter than the caller’s', () => {
    expect(windowOf({ policy: policy('4h'), callerPolicy: caller('24h') })).toBe(4 * hour);
  });

  it('takes the caller’s window when it is shorter than the tool’s', () => {
    expect(windowOf({ policy: policy('24h'), callerPolicy: caller('90m') })).toBe(1.5 * hour);
  });

  it('takes the tool’s window when the caller sets none, even one longer than the 4h default', () => {
    expect(windowOf({ policy: policy('24h'), callerPolicy: caller() })).toBe(24 * hour);
  });

  it('waits 4h when neither the tool nor the caller sets a window', () => {
    expect(windowOf({ policy: policy(), callerPolicy: caller() })).toBe(4 * hour);
    expect(windowOf({ policy: policy(), callerPolicy: {} })).toBe(4 * hour);
  });

  it('keeps the caller’s window, exactly as before, when the policy has no tools section', () => {
    expect(windowOf({ policy: policy(), callerPolicy: caller('1s') })).toBe(1000);
    expect(windowOf({ policy: policy(), callerPolicy: caller('30d') })).toBe(30 * 24 * hour);
  });

  it('ignores another tool’s window and another level’s', () => {
    expect(windowOf({ policy: policy('1h'), callerPolicy: caller(), tool: 'get_order' })).toBe(4 * hour);
    expect(
      approvalWindowMs({
        policy: policy('1h'),
        callerPolicy: caller(),
        tool: 'refund_order',
        level: 'critical',
      }),
    ).toBe(4 * hour);
  });

  it('never waits longer than maxApprovalWindow, the 4h default included', () => {
    expect(windowOf({ policy: policy(undefined, '1h'), callerPolicy: caller() })).toBe(hour);
    expect(windowOf({ policy: policy('3h', '2h'), callerPolicy: caller('5h') })).toBe(2 * hour);
  });

  it('reads a tool name inherited from Object.prototype as a tool without windows', () => {
    expect(windowOf({ policy: policy('1h'), callerPolicy: caller(), tool: 'constructor' })).toBe(4 * hour);
  });
});
