import { describe, expect, it } from 'vitest';
import { createKeyedLimiter } from './keyed-limiter';

describe('createKeyedLimiter', () => {
  it('keeps at most the limit in flight per key, runs the rest in arrival order, and other keys alongside', async () => {
    const limited = createKeyedLimiter(2);
    const inFlight = new Map<string, number>();
    const peak = new Map<string, number>();
    const order: string[] = [];
    const task = (key: string, name: string) =>
      limited(key, async () => {
        inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
        peak.set(key, Math.max(peak.get(key) ?? 0, inFlight.get(key)!));
        order.push(name);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight.set(key, inFlight.get(key)! - 1);
        return name;
      });
    const results = await Promise.all([
      ...Array.from({ length: 7 }, (_, index) => task('a', `a${index}`)),
      task('b', 'b0'),
      task('b', 'b1'),
    ]);
    expect(results).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'b0', 'b1']);
    expect(peak.get('a')).toBe(2);
    expect(peak.get('b')).toBe(2);
    expect(order.filter((name) => name.startsWith('a'))).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
    // b ran beside a's first tasks, not after all of them.
    expect(order.indexOf('b0')).toBeLessThan(order.indexOf('a2'));
  });

  it('gives the slot back when a task fails', async () => {
    const limited = createKeyedLimiter(1);
    await expect(limited('k', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limited('k', () => Promise.resolve('next'))).resolves.toBe('next');
  });
});
