import fc from 'fast-check';
import {
  CONTENTION_BASE_BACKOFF_MS,
  CONTENTION_RETRIES,
  ContentionError,
  contentionBackoffMs,
  isContention,
  isRtdbMaxRetry,
  retryOnContention,
} from '../../src/library/limiter/contention';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { LimitStore, StoreDecision } from '../../src/library/limiter/limit-store';
import { OutageGuard } from '../../src/library/limiter/outage-guard';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import { createCapturingLogger } from '../support/capturing-logger';

const maxretry = (): Error => new Error('maxretry');

describe('contentionBackoffMs (full jitter)', () => {
  it.each([
    // retry, random, base, expected
    [0, 0, 20, 0],
    [0, 0.5, 20, 10],
    [0, 0.999, 20, 19],
    [1, 0.5, 20, 20],
    [1, 0.999, 20, 39],
    [2, 0.25, 20, 20],
    [2, 1, 20, 79],
    [0, -3, 20, 0],
    [3, 0.5, 10, 40],
  ])('retry %i with random %d and base %i waits %i ms', (retry, random, baseMs, expected) => {
    expect(contentionBackoffMs(retry, random, baseMs)).toBe(expected);
  });

  it('refuses a retry number that is not a non-negative integer', () => {
    expect(() => contentionBackoffMs(-1, 0.5)).toThrow(new RangeError('retry must be a non-negative integer, got -1'));
    expect(() => contentionBackoffMs(1.5, 0.5)).toThrow(new RangeError('retry must be a non-negative integer, got 1.5'));
  });

  it('stays within [0, base x 2^retry) for every random in [0, 1]', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 }), fc.double({ min: 0, max: 1, noNaN: true }), (retry, random) => {
        const waitMs = contentionBackoffMs(retry, random);
        return Number.isInteger(waitMs) && waitMs >= 0 && waitMs < CONTENTION_BASE_BACKOFF_MS * 2 ** retry;
      }),
    );
  });
});

describe('retryOnContention', () => {
  const noSleep = { sleep: async () => undefined, random: () => 0.5 };

  it('returns the first success after contended attempts, waiting the jittered backoff between them', async () => {
    const waits: number[] = [];
    let attempts = 0;
    const value = await retryOnContention(
      async () => {
        attempts++;
        if (attempts < 3) throw maxretry();
        return 'decided';
      },
      isRtdbMaxRetry,
      { random: () => 0.5, sleep: async (ms) => void waits.push(ms) },
    );
    expect(value).toBe('decided');
    expect(attempts).toBe(3);
    expect(waits).toEqual([10, 20]);
  });

  it(`gives up after ${CONTENTION_RETRIES} retries with a ContentionError that keeps the cause`, async () => {
    let attempts = 0;
    const error = await retryOnContention(
      async () => {
        attempts++;
        throw maxretry();
      },
      isRtdbMaxRetry,
      noSleep,
    ).catch((e: unknown) => e);
    expect(attempts).toBe(CONTENTION_RETRIES + 1);
    expect(error).toBeInstanceOf(ContentionError);
    expect(isContention(error)).toBe(true);
    expect((error as ContentionError).attempts).toBe(CONTENTION_RETRIES + 1);
    expect((error as Error).cause).toEqual(maxretry());
  });

  it('throws any other failure at once, untouched', async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    let attempts = 0;
    await expect(
      retryOnContention(
        async () => {
          attempts++;
          throw down;
        },
        isRtdbMaxRetry,
        noSleep,
      ),
    ).rejects.toBe(down);
    expect(attempts).toBe(1);
  });

  it('names the error and its attempts, and knows it by its code alone', () => {
    const error = new ContentionError(3);
    expect(error.name).toBe('ContentionError');
    expect(error.message).toBe('the key stayed contended after 3 attempts');
    expect(isContention(error)).toBe(true);
    expect(isContention({ code: 'ERR_FIRELIMIT_CONTENTION' })).toBe(true);
    expect(isContention(null)).toBe(false);
    expect(isContention(undefined)).toBe(false);
    expect(isContention('ERR_FIRELIMIT_CONTENTION')).toBe(false);
    expect(isContention({ code: 'ECONNREFUSED' })).toBe(false);
  });

  it('waits for real when no sleep is injected', async () => {
    let attempts = 0;
    const startedMs = performance.now();
    const value = await retryOnContention(
      async () => {
        attempts++;
        if (attempts === 1) throw maxretry();
        return 'decided';
      },
      isRtdbMaxRetry,
      // The one real wait in these tests: 15 ms (random 0.75 x base 20), the default sleep itself under test.
      { random: () => 0.75 },
    );
    expect(value).toBe('decided');
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(14);
  });

  it('knows maxretry only by its exact message', () => {
    expect(isRtdbMaxRetry(new Error('maxretry'))).toBe(true);
    expect(isRtdbMaxRetry(new Error('maxretry exceeded'))).toBe(false);
    expect(isRtdbMaxRetry('maxretry')).toBe(false);
    expect(isContention(new Error('maxretry'))).toBe(false);
  });
});

const policy: RateLimitPolicy = { name: 'default', limit: 3, windowMs: 60_000 };

/** A shared-looking store on which the keys the test names stay contended; the rest decide normally. */
class ContendedStore implements LimitStore {
  readonly backend = 'rtdb' as const;
  readonly shared = true;
  readonly contended = new Set<string>();
  private readonly counters = new MemoryWindowStore();
  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    if (this.contended.has(key)) return Promise.reject(new ContentionError(3, { cause: maxretry() }));
    return this.counters.consume(key, nowMs, policies, cost);
  }
  adjust(): Promise<void> {
    return Promise.resolve();
  }
  async close(): Promise<void> {}
}

describe('contention in the limiter and its outage guard', () => {
  function setup() {
    const logger = createCapturingLogger();
    const store = new ContendedStore();
    const clock = { nowMs: 1_000_000 };
    const guard = new OutageGuard({ backend: 'rtdb', timeoutMs: 1_000, probeIntervalMs: 5_000, logger, clock: () => clock.nowMs });
    return { logger, store, guard, clock };
  }

  it('answers a contended key from its local window while every other key stays shared, and logs no outage', async () => {
    const { logger, store, guard } = setup();
    const limiter = await createRateLimiter({ store, policy, guard, clock: () => 1_000_000 });
    store.contended.add('tok_hot');
    const hot = await limiter.consume('tok_hot');
    expect(hot).toMatchObject({ allowed: true, shared: false, reason: 'local_fallback' });
    const cold = await limiter.consume('tok_cold');
    expect(cold).toMatchObject({ allowed: true, shared: true, reason: 'within_limit' });
    expect(guard.state.open).toBe(false);
    expect(guard.outageCount).toBe(0);
    expect(logger.entries.filter((e) => e.fields.event === 'ratelimit.outage_started')).toEqual([]);
  });

  it('holds the contended key to its limit on the local window', async () => {
    const { store, guard } = setup();
    const limiter = await createRateLimiter({ store, policy, guard, clock: () => 1_000_000 });
    store.contended.add('tok_hot');
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push((await limiter.consume('tok_hot')).allowed);
    expect(answers).toEqual([true, true, true, false, false]);
  });

  it('ends an outage when its probe meets contention: the backend answered', async () => {
    const { store, guard, clock } = setup();
    const down = await guard.run(() => Promise.reject(Object.assign(new Error('down'), { code: 'ECONNREFUSED' })));
    expect(down).toMatchObject({ ok: false, cause: 'error' });
    expect(guard.state.open).toBe(true);
    clock.nowMs += 5_000;
    store.contended.add('tok_hot');
    const probe = await guard.run(() => store.consume('tok_hot', clock.nowMs, [policy], 1));
    expect(probe).toMatchObject({ ok: false, cause: 'contention' });
    expect(guard.state.open).toBe(false);
  });

  it('reports fail-closed contention as unavailable for that key only', async () => {
    const { store, guard } = setup();
    const limiter = await createRateLimiter({ store, policy, guard, failurePolicy: 'fail-closed', clock: () => 1_000_000 });
    store.contended.add('tok_hot');
    expect(await limiter.consume('tok_hot')).toMatchObject({ allowed: false, reason: 'backend_unavailable' });
    expect(await limiter.consume('tok_cold')).toMatchObject({ allowed: true, shared: true });
    expect(guard.state.open).toBe(false);
  });
});
