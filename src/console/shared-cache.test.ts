import { describe, expect, it } from 'vitest';
import { createSharedCache } from './shared-cache';

describe("the console's shared cache", () => {
  it('loads once for every ask within its lifetime, concurrent or not, then loads again', async () => {
    const clock = { now: 0 };
    const cache = createSharedCache<number>({ ttlMs: 1_500, maxKeys: 10, now: () => clock.now });
    let loads = 0;
    const load = async () => ++loads;
    expect(await Promise.all([cache.get('all', load), cache.get('all', load)])).toEqual([1, 1]);
    clock.now += 1_499;
    expect(await cache.get('all', load)).toBe(1);
    expect(await cache.get('tool=refund_order', load)).toBe(2);
    clock.now += 1;
    expect(await cache.get('all', load)).toBe(3);
  });

  it('does not remember a failed load, and holds at most its number of keys', async () => {
    const cache = createSharedCache<string>({ ttlMs: 60_000, maxKeys: 2 });
    await expect(cache.get('a', () => Promise.reject(new Error('no worker')))).rejects.toThrow('no worker');
    expect(await cache.get('a', async () => 'a1')).toBe('a1');
    await cache.get('b', async () => 'b1');
    await cache.get('c', async () => 'c1');
    // 'a' was the oldest: it went when 'c' came.
    expect(await cache.get('a', async () => 'a2')).toBe('a2');
    expect(await cache.get('c', async () => 'c2')).toBe('c1');
  });
});
