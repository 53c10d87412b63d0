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

describe("the console's challenges and sessions", () => {
  it('answers a challenge once, and not after it expired', () => {
    const { clock, store } = storeAt();
    const first = store.issueChallenge({ approver: 'alice', keyId: 'k1', origin: 'http://127.0.0.1:4300' });
    expect(store.takeChallenge(first.nonce)).toEqual(first);
    expect(store.takeChallenge(first.nonce)).toBeUndefined();
    const late = store.issueChallenge({ approver: 'alice', keyId: 'k1', origin: 'http://127.0.0.1:4300' });
    clock.now += 60_001;
    expect(store.takeChallenge(late.nonce)).toBeUndefined();
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
