import type { Adjustment } from '../../src/library/window/algorithm';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { LimitStore, StoreDecision } from '../../src/library/limiter/limit-store';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import type { PolicySet } from '../../src/library/window/policy';

const WINDOW_MS = 60_000;
const POLICIES: PolicySet = [{ name: 'hot', limit: 100, windowMs: WINDOW_MS }];
const HOT_KEYS = { hotRatePerSecond: 3, maxLeaseUnits: 10 };
/** Mid-window, so a give-back lands in the window the lease was taken in. */
const START_MS = 1000 * WINDOW_MS + 5000;

/**
 * A shared-looking store over a MemoryWindowStore: what it counts outlives
 * close (a real shared store's count outlives one instance), and it records
 * the order of adjusts and close. `holdConsumes` parks consumes until released.
 */
class SharedCounters implements LimitStore {
  readonly backend = 'redis' as const;
  readonly shared = true;
  readonly counters = new MemoryWindowStore();
  readonly events: string[] = [];
  holdConsumes = false;
  private readonly held: (() => void)[] = [];
  hangAdjusts = false;

  async consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    if (this.holdConsumes) await new Promise<void>((resolve) => this.held.push(resolve));
    this.events.push(`consume ${cost}`);
    return this.counters.consume(key, nowMs, policies, cost);
  }

  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    if (this.hangAdjusts) return new Promise<never>(() => undefined);
    this.events.push(`adjust ${adjustments.map((a) => a?.deltaUnits).join(',')}`);
    return this.counters.adjust(key, nowMs, policies, adjustments);
  }

  release(): void {
    this.holdConsumes = false;
    for (const resolve of this.held.splice(0)) resolve();
  }

  async close(): Promise<void> {
    this.events.push('close');
  }

  /** Units the shared count holds for `key` now. */
  spent(key: string, nowMs: number): number {
    const read = this.counters.consumeSync(key, nowMs, POLICIES, 0);
    return POLICIES[0].limit - (read.decisions[0]?.remaining ?? 0);
  }
}

async function leasingLimiter(store: SharedCounters, clock: { nowMs: number }, timeoutMs = 1000): Promise<RateLimiter> {
  return createRateLimiter({ store, policies: POLICIES, clock: () => clock.nowMs, timeoutMs, hotKeys: HOT_KEYS });
}

/** Calls one at a time until the key holds a lease: spent on the store is more than admitted. */
async function untilLeased(limiter: RateLimiter, store: SharedCounters, clock: { nowMs: number }): Promise<number> {
  let admitted = 0;
  for (let i = 0; i < 2 * HOT_KEYS.hotRatePerSecond && store.spent('tok_hot', clock.nowMs) <= admitted; i++) {
    if ((await limiter.consume('tok_hot')).allowed) admitted++;
  }
  return admitted;
}

describe('closing a limiter that holds hot-key leases', () => {
  it('gives the unused units back to the shared count before the store closes, leaving only what was admitted', async () => {
    const store = new SharedCounters();
    const clock = { nowMs: START_MS };
    const limiter = await leasingLimiter(store, clock);
    const admitted = await untilLeased(limiter, store, clock);
    const held = store.spent('tok_hot', clock.nowMs) - admitted;
    expect(held).toBeGreaterThan(0);

    await limiter.close();

    expect(store.spent('tok_hot', clock.nowMs)).toBe(admitted);
    expect(store.events.slice(-2)).toEqual([`adjust ${-held}`, 'close']);
  });

  it('gives nothing back for a lease whose window has ended: its units ended with it', async () => {
    const store = new SharedCounters();
    const clock = { nowMs: START_MS };
    const limiter = await leasingLimiter(store, clock);
    await untilLeased(limiter, store, clock);
    clock.nowMs += WINDOW_MS;

    await limiter.close();

    expect(store.events.filter((e) => e.startsWith('adjust'))).toEqual([]);
    expect(store.events.at(-1)).toBe('close');
  });

  it('lets a renewal in flight land and answer its caller, then gives back the rest', async () => {
    const store = new SharedCounters();
    const clock = { nowMs: START_MS };
    const limiter = await leasingLimiter(store, clock);
    const before = await untilLeased(limiter, store, clock);
    // Spend the lease down, then park the renewal that the next call needs.
    let admitted = before;
    while (store.spent('tok_hot', clock.nowMs) > admitted) {
      expect((await limiter.consume('tok_hot')).allowed).toBe(true);
      admitted++;
    }
    store.holdConsumes = true;
    const renewing = limiter.consume('tok_hot');
    const closing = limiter.close();
    store.release();

    expect(await renewing).toMatchObject({ allowed: true, shared: true });
    await closing;
    expect(store.spent('tok_hot', clock.nowMs)).toBe(admitted + 1);
    expect(store.events.at(-1)).toBe('close');
  });

  it('waits for a give-back no longer than the deadline, then closes the store', async () => {
    jest.useFakeTimers({ now: START_MS });
    try {
      const store = new SharedCounters();
      const clock = { nowMs: START_MS };
      const limiter = await leasingLimiter(store, clock, 500);
      await untilLeased(limiter, store, clock);
      store.hangAdjusts = true;
      let closed = false;
      const closing = limiter.close().then(() => {
        closed = true;
      });
      await jest.advanceTimersByTimeAsync(499);
      expect(closed).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      await closing;
      expect(store.events.at(-1)).toBe('close');
    } finally {
      jest.useRealTimers();
    }
  });
});
