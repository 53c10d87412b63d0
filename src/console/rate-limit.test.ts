import { describe, expect, it } from 'vitest';
import { createRateLimiter } from './rate-limit';

describe("the console's per-address rate limit", () => {
  it('lets a burst through, refuses the next with a retry time, and refills with time, per address', () => {
    const clock = { now: 0 };
    const limiter = createRateLimiter({ burst: 3, perSecond: 2, now: () => clock.now });
    expect([1, 2, 3].map(() => limiter.take('10.0.0.1').ok)).toEqual([true, true, true]);
    expect(limiter.take('10.0.0.1')).toEqual({ ok: false, retryAfterSeconds: 1 });
    // Another address has a bucket of its own.
    expect(limiter.take('10.0.0.2')).toEqual({ ok: true });
    clock.now += 500;
    expect(limiter.take('10.0.0.1')).toEqual({ ok: true });
    expect(limiter.take('10.0.0.1').ok).toBe(false);
  });

  it('remembers at most maxKeys addresses, dropping the least recently seen', () => {
    const limiter = createRateLimiter({ burst: 1, perSecond: 0.001, maxKeys: 2, now: () => 0 });
    expect(limiter.take('a').ok).toBe(true);
    expect(limiter.take('b').ok).toBe(true);
    expect(limiter.take('c').ok).toBe(true);
    // 'a' was forgotten (a full bucket again); 'c' was not.
    expect(limiter.take('a').ok).toBe(true);
    expect(limiter.take('c').ok).toBe(false);
  });
});
