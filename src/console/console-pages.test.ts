import { describe, expect, it } from 'vitest';
import type { ApprovalView, CallState } from '../calls/protocol';
import type { SignedIn } from './console-pages';
import { callPage, jsonForScript } from './console-pages';

describe("the call page's JSON data block", () => {
  it('cannot be closed or broken out of by any value, and reads back as the same value', () => {
    const value = {
      reason: '</script><script>alert(1)</script><!-- & -->',
      separators: 'a\u2028b\u2029c',
      nested: [{ '</SCRIPT>': '<' }],
      amount_cents: 2590,
    };
    const text = jsonForScript(value);
    expect(text).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(text)).toEqual(value);
  });
});

describe("the call page's round", () => {
  const round: ApprovalView = {
    round: 2,
    nonce: 'n'.repeat(64),
    runId: 'run-1',
    argsDigest: 'a'.repeat(64),
    previewDigest: 'p'.repeat(64),
    contractDigest: '0123456789abcdef'.repeat(4),
    preview: { action: 'refund 2590 BRL on ORD-1001' },
    riskLevel: 'irreversible',
    quorum: 1,
    approvals: [],
    expiresAt: '2026-12-01T18:00:00.000Z',
    state: 'pending',
    supersedes: {
      round: 1,
      reason: 'the contract of refund_order changed in a deploy while the call waited',
    },
  };
  const state: CallState = {
    stage: 'awaiting-approval',
    tool: 'refund_order',
    caller: 'support-bot',
    session: 'session-1',
    approval: round,
    decisions: [],
  };
  const signedIn: SignedIn = {
    approver: 'alice',
    keyId: 'key-1',
    keyLabel: 'laptop',
    csrfToken: 'token',
    grant: { publicKeyHex: 'k'.repeat(64), maxLevel: 'critical', operates: [] },
  };
  const render = async (shown: CallState): Promise<string> =>
    String(
      await callPage({
        signedIn,
        callId: 'tc-1',
        state: shown,
        permission: { ok: true, notes: [] },
        now: Date.parse('2026-12-01T17:00:00.000Z'),
      }),
    );

  it('names the contract it is bound to, signs it, and says why it replaced the round before', async () => {
    const page = await render(state);
    expect(page).toContain('contract <code>0123456789ab</code>');
    expect(page).toContain(
      'Opened in place of round 1: the contract of refund_order changed in a deploy while the call waited.',
    );
    const block = /<script type="application\/json" id="call-data">([\s\S]*?)<\/script>/.exec(page)?.[1];
    expect(JSON.parse(block ?? '{}')).toMatchObject({ contractDigest: round.contractDigest });
  });

  it('says why a superseded round no longer holds', async () => {
    const { supersedes: _supersedes, ...closed } = round;
    const page = await render({
      ...state,
      approval: {
        ...closed,
        round: 1,
        state: 'superseded',
        supersededBecause: 'the contract of refund_order changed in a deploy while the call waited',
      },
    });
    expect(page).toContain(
      'This round no longer holds: the contract of refund_order changed in a deploy while the call waited.',
    );
  });
});
