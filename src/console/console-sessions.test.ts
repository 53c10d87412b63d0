import { describe, expect, it } from 'vitest';
import { createSessionStore } from './console-sessions';

function storeAt() {
  const clock = { now: 1_000_000 };
  const store = createSessionStore({
    sessionTtlMs: 15 * 60_000,
    challengeTtlMs: 60_000,
    now: () => clock.now,
  });
  return { clock, store };
}

const origin = 'http://127.0.0.1:4300';

describe("the console's challenges and sessions", () => {
  it('answers a challenge once, and not after it expired', () => {
    const { clock, store } = storeAt();
    const first = store.issueChallenge({ approver: 'alice', keyId: 'k1', origin });
    expect(store.checkChallenge(first)).toEqual(first);
    expect(store.consumeChallenge(first)).toBe(true);
    expect(store.checkChallenge(first)).toBeUndefined();
    expect(store.consumeChallenge(first)).toBe(false);
    const late = store.issueChallenge({ approver: 'alice', keyId: 'k1', origin });
    clock.now += 60_001;
    expect(store.checkChallenge(late)).toBeUndefined();
    expect(store.consumeChallenge(late)).toBe(false);
  });

  it('refuses a challenge it did not issue, or one with any field changed', () => {
    const { store } = storeAt();
    const issued = store.issueChallenge({ approver: 'alice', keyId: 'k1', origin });
    const other = createSessionStore({ sessionTtlMs: 60_000, challengeTtlMs: 60_000 });
    const changed = [
      { ...issued, approver: 'bob' },
      { ...issued, keyId: 'k2' },
      { ...issued, origin: 'http://localhost:4300' },
      { ...issued, expiresAt: new Date(Date.parse(issued.expiresAt) + 3_600_000).toISOString() },
      { ...issued, nonce: `${issued.nonce}x` },
      { ...issued, nonce: issued.nonce.split('.')[0] },
      { ...issued, approver: ['alice'] },
      other.issueChallenge({ approver: 'alice', keyId: 'k1', origin }),
      null,
      'alice',
    ];
    for (const value of changed) expect(store.checkChallenge(value)).toBeUndefined();
    expect(store.checkChallenge(issued)).toEqual(issued);
  });

  it('keeps no state for a challenge until it is answered: a flood of challenges evicts nobody’s', () => {
    const { store } = storeAt();
    const alices = store.issueChallenge({ approver: 'alice', keyId: 'k1', origin });
    for (let index = 0; index < 5_000; index++) {
      store.issueChallenge({ approver: `mallory-${index}`, keyId: `k-${index}`, origin });
    }
    expect(store.consumeChallenge(alices)).toBe(true);
  });

  it('ends a session after its lifetime and on close, and compares CSRF tokens exactly', () => {
    const { clock, store } = storeAt();
    const session = store.open({ approver: 'alice', keyId: 'k1' });
    expect(store.find(session.id)).toEqual(session);
    expect(store.csrfMatches(session, session.csrfToken)).toBe(true);
    expect(store.csrfMatches(session, undefined)).toBe(false);
    expect(store.csrfMatches(session, `${session.csrfToken}x`)).toBe(false);
    clock.now += 15 * 60_000;
    expect(store.find(session.id)).toBeUndefined();
    const other = store.open({ approver: 'bob', keyId: 'k2' });
    store.close(other.id);
    expect(store.find(other.id)).toBeUndefined();
    expect(store.find(undefined)).toBeUndefined();
  });
});
