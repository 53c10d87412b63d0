/*
 * A short-lived cache shared by every session of the console: the queue pages poll every two
 * seconds, and without it each open page would list the namespace and query every call it shows.
 */

/** Answers by key, each remembered for a short while and shared by every caller. */
export interface SharedCache<T> {
  /**
   * The answer for `key`: the one loaded less than `ttlMs` ago, or the load already under way, or a
   * new load. A failed load is not remembered (the next ask tries again).
   */
  get(key: string, load: () => Promise<T>): Promise<T>;
}

/** Makes a cache that holds at most `maxKeys` keys (the oldest goes first); `now` is injectable for tests. */
export function createSharedCache<T>(input: {
  ttlMs: number;
  maxKeys: number;
  now?: () => number;
}): SharedCache<T> {
  const now = input.now ?? Date.now;
  const held = new Map<string, { at: number; answer: Promise<T> }>();
  return {
    get: (key, load) => {
      const kept = held.get(key);
      if (kept && now() - kept.at < input.ttlMs) return kept.answer;
      held.delete(key);
      while (held.size >= input.maxKeys) held.delete(held.keys().next().value as string);
      const answer = load();
      const entry = { at: now(), answer };
      held.set(key, entry);
      answer.catch(() => {
        if (held.get(key) === entry) held.delete(key);
      });
      return answer;
    },
  };
}
