/**
 * Runs tasks with at most `limit` in flight per key; the others wait their turn in arrival order.
 * A key with nothing in flight holds no memory.
 */
export function createKeyedLimiter(limit: number): <T>(key: string, task: () => Promise<T>) => Promise<T> {
  const lanes = new Map<string, { running: number; waiting: (() => void)[] }>();
  return async (key, task) => {
    let lane = lanes.get(key);
    if (!lane) {
      lane = { running: 0, waiting: [] };
      lanes.set(key, lane);
    }
    const own = lane;
    if (own.running < limit) own.running++;
    // A finished task hands its slot over: `running` already counts this one.
    else await new Promise<void>((resolve) => own.waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = own.waiting.shift();
      if (next) next();
      else if (--own.running === 0) lanes.delete(key);
    }
  };
}
