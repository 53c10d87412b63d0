/*
 * A token bucket per remote address for the console's routes that need no session (sign-in and
 * enrolment): one client cannot make the console query the registry, or relay to it, without bound.
 */

/** Whether a request may go on now, and if not, in how many seconds to try again. */
export type RateVerdict = { ok: true } | { ok: false; retryAfterSeconds: number };

/** Buckets by key (a remote address). */
export interface RateLimiter {
  /** Takes one token from `key`'s bucket if it has one. Never throws; memory stays bounded by `maxKeys`. */
  take(key: string): RateVerdict;
}

/**
 * Makes a limiter whose buckets hold `burst` tokens and refill `perSecond` a second; it remembers at
 * most `maxKeys` addresses (the least recently seen goes first, its bucket full again when it comes
 * back). `now` is injectable for tests.
 */
export function createRateLimiter(input: {
  burst: number;
  perSecond: number;
  maxKeys?: number;
  now?: () => number;
}): RateLimiter {
  const now = input.now ?? Date.now;
  const maxKeys = input.maxKeys ?? 10_000;
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take: (key) => {
      const at = now();
      const kept = buckets.get(key);
      buckets.delete(key);
      const tokens = kept
        ? Math.min(input.burst, kept.tokens + ((at - kept.at) / 1000) * input.perSecond)
        : input.burst;
      while (buckets.size >= maxKeys) buckets.delete(buckets.keys().next().value as string);
      if (tokens < 1) {
        buckets.set(key, { tokens, at });
        return { ok: false, retryAfterSeconds: Math.ceil((1 - tokens) / input.perSecond) };
      }
      buckets.set(key, { tokens: tokens - 1, at });
      return { ok: true };
    },
  };
}
