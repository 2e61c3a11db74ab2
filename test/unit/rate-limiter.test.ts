import type { Adjustment } from '../../src/library/window/algorithm';
import { DeadlineGuard } from '../support/deadline-guard';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import { InvalidKeyError } from '../../src/library/window/key';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { WindowRateLimiter, type FailurePolicy } from '../../src/library/limiter/rate-limiter';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import type { LimitStore, StoreDecision } from '../../src/library/limiter/limit-store';
import { silentLogger } from '../../src/shared/logger';

const W = 60_000;
const policy: RateLimitPolicy = { name: 'default', limit: 3, windowMs: W };
const TIMEOUT_MS = 1_500;

type Mode = 'ok' | 'reject' | 'hang' | 'throw-sync';

/**
 * A shared-looking store whose behaviour the test sets: 'ok' decides with
 * MemoryWindowStore's logic, 'reject' fails, 'hang' never answers. Counts calls.
 */
class ProgrammableStore implements LimitStore {
  readonly backend = 'rtdb' as const;
  readonly shared = true;
  mode: Mode = 'ok';
  calls = 0;
  private readonly counters = new MemoryWindowStore();

  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    this.calls++;
    switch (this.mode) {
      case 'ok':
        return this.counters.consume(key, nowMs, policies, cost);
      case 'reject':
        return Promise.reject(Object.assign(new Error('connect to redis://:pw@host failed'), { code: 'ECONNREFUSED' }));
      case 'hang':
        return new Promise<never>(() => undefined);
      case 'throw-sync':
        throw new Error('synchronous failure');
    }
  }

  /** Each adjust call's adjustments, one per policy (null: none). */
  adjusts: (readonly (Adjustment<unknown> | null)[])[] = [];

  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    if (this.mode !== 'ok') return Promise.reject(new Error('store down'));
    this.adjusts.push(adjustments);
    return this.counters.adjust(key, nowMs, policies, adjustments);
  }

  async close(): Promise<void> {
    await this.counters.close();
  }
}

function setup(options: { failurePolicy?: FailurePolicy; mode?: Mode; unavailableRetryAfterMs?: number; maxBlockedKeys?: number } = {}) {
  const store = new ProgrammableStore();
  store.mode = options.mode ?? 'ok';
  const clock = { nowMs: 100 * W + 10_000 };
  const limiter = new WindowRateLimiter({
    store,
    guard: new DeadlineGuard({ backend: store.backend, timeoutMs: TIMEOUT_MS, logger: silentLogger }),
    policies: [policy],
    failurePolicy: options.failurePolicy ?? 'fail-open',
    clock: () => clock.nowMs,
    logger: silentLogger,
    ...(options.unavailableRetryAfterMs === undefined ? {} : { unavailableRetryAfterMs: options.unavailableRetryAfterMs }),
    ...(options.maxBlockedKeys === undefined ? {} : { maxBlockedKeys: options.maxBlockedKeys }),
  });
  return { store, clock, limiter };
}

afterEach(() => {
  jest.useRealTimers();
});

describe('WindowRateLimiter with a shared store', () => {
  it('answers from the shared store: shared true, within_limit until the limit, then limit', async () => {
    const { limiter, clock } = setup();
    const reasons = [];
    for (let i = 0; i < 4; i++) reasons.push(await limiter.consume('tok_a'));
    expect(reasons.map((d) => [d.allowed, d.shared, d.reason, d.remaining])).toEqual([
      [true, true, 'within_limit', 2],
      [true, true, 'within_limit', 1],
      [true, true, 'within_limit', 0],
      [false, true, 'limit', 0],
    ]);
    expect(reasons[3]).toMatchObject({ policyName: 'default', windowMs: W, limit: 3, resetAtMs: 101 * W, retryAfterMs: 101 * W - clock.nowMs });
  });

  it('after a shared refusal, answers the rest of the window without calling the store, then asks the store again', async () => {
    const { limiter, store, clock } = setup();
    await limiter.consume('tok_a', { cost: 3 });
    const refused = await limiter.consume('tok_a');
    expect(refused).toMatchObject({ allowed: false, reason: 'limit' });
    const callsAfterRefusal = store.calls;

    clock.nowMs += 20_000;
    const cached = await limiter.consume('tok_a');
    clock.nowMs = 101 * W - 1;
    const lastMs = await limiter.consume('tok_a', { cost: 2 });
    expect(store.calls).toBe(callsAfterRefusal);
    expect(cached).toMatchObject({ allowed: false, shared: true, reason: 'limit', remaining: 0, resetAtMs: 101 * W, retryAfterMs: 101 * W - (100 * W + 30_000) });
    expect(lastMs).toMatchObject({ allowed: false, reason: 'limit', retryAfterMs: 1 });

    clock.nowMs = 101 * W;
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: true, shared: true, reason: 'within_limit', remaining: 2 });
    expect(store.calls).toBe(callsAfterRefusal + 1);
  });

  it('never blocks a cost-0 read with the over-limit cache: it reaches the store and is allowed', async () => {
    const { limiter, store } = setup();
    await limiter.consume('tok_a', { cost: 3 });
    await limiter.consume('tok_a');
    const before = store.calls;
    expect(await limiter.consume('tok_a', { cost: 0 })).toMatchObject({ allowed: true, shared: true, remaining: 0, reason: 'within_limit' });
    expect(store.calls).toBe(before + 1);
  });

  it('a cost-0 read during a block does not lift it: the next spending call is still refused without the store', async () => {
    const { limiter, store } = setup();
    await limiter.consume('tok_a', { cost: 3 });
    await limiter.consume('tok_a');
    await limiter.consume('tok_a', { cost: 0 });
    const before = store.calls;
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: false, reason: 'limit' });
    expect(store.calls).toBe(before);
  });

  it('a cost-0 read after another instance refunded lifts the cached block: the next spending call reaches the store and is allowed', async () => {
    const { limiter, store, clock } = setup();
    await limiter.consume('tok_a', { cost: 3 });
    await limiter.consume('tok_a');
    // Another instance gives one unit back (a sign-in it reserved for turned out valid).
    await store.adjust('tok_a', clock.nowMs, [policy], [{ atLeast: null, deltaUnits: -1 }]);
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: false, reason: 'limit' });
    await limiter.consume('tok_a', { cost: 0 });
    const before = store.calls;
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: true, shared: true, remaining: 0 });
    expect(store.calls).toBe(before + 1);
  });

  it('keeps the over-limit cache per policy: a key refused under one tier is not refused under another', async () => {
    const { limiter } = setup();
    await limiter.consume('tok_a', { cost: 3 });
    await limiter.consume('tok_a');
    const pro: RateLimitPolicy = { name: 'pro', limit: 10, windowMs: W };
    expect(await limiter.consume('tok_a', { policy: pro })).toMatchObject({ allowed: true, policyName: 'pro', limit: 10 });
  });

  it('does not block smaller calls after a refusal that only exceeded the remaining budget', async () => {
    const { limiter } = setup();
    const five: RateLimitPolicy = { name: 'five', limit: 5, windowMs: W };
    await limiter.consume('tok_a', { cost: 3, policy: five });
    expect(await limiter.consume('tok_a', { cost: 3, policy: five })).toMatchObject({ allowed: false, remaining: 2 });
    expect(await limiter.consume('tok_a', { cost: 1, policy: five })).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe('WindowRateLimiter when the shared store fails', () => {
  it('fail-open answers from the local window (shared false, local_fallback) and still enforces the limit locally', async () => {
    const { limiter, clock } = setup({ mode: 'reject' });
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.consume('tok_a'));
    expect(decisions.map((d) => [d.allowed, d.shared, d.reason, d.remaining])).toEqual([
      [true, false, 'local_fallback', 2],
      [true, false, 'local_fallback', 1],
      [true, false, 'local_fallback', 0],
      [false, false, 'limit', 0],
    ]);
    expect(decisions[3]?.retryAfterMs).toBe(101 * W - clock.nowMs);
  });

  it('fail-closed refuses with backend_unavailable and a positive Retry-After', async () => {
    const { limiter } = setup({ mode: 'reject', failurePolicy: 'fail-closed' });
    const decision = await limiter.consume('tok_a');
    expect(decision).toMatchObject({ allowed: false, shared: false, reason: 'backend_unavailable', limit: 3, remaining: 0 });
    expect(decision.retryAfterMs).toBeGreaterThan(0);
    expect(decision.resetAtMs - decision.retryAfterMs).toBe(100 * W + 10_000);
  });

  it('fail-closed uses the configured unavailableRetryAfterMs', async () => {
    const { limiter } = setup({ mode: 'reject', failurePolicy: 'fail-closed', unavailableRetryAfterMs: 5_000 });
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: false, retryAfterMs: 5_000 });
  });

  it.each([
    { failurePolicy: 'fail-open' as const, expected: { allowed: true, shared: false, reason: 'local_fallback' } },
    { failurePolicy: 'fail-closed' as const, expected: { allowed: false, shared: false, reason: 'backend_unavailable' } },
  ])('$failurePolicy answers a hanging store exactly at the deadline', async ({ failurePolicy, expected }) => {
    jest.useFakeTimers();
    const { limiter } = setup({ mode: 'hang', failurePolicy });
    let decision: unknown;
    void limiter.consume('tok_a').then((d) => (decision = d));
    await jest.advanceTimersByTimeAsync(TIMEOUT_MS - 1);
    expect(decision).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    expect(decision).toMatchObject(expected);
  });

  it('goes back to shared decisions when the store recovers', async () => {
    const { limiter, store } = setup({ mode: 'reject' });
    expect(await limiter.consume('tok_a')).toMatchObject({ shared: false });
    store.mode = 'ok';
    expect(await limiter.consume('tok_a')).toMatchObject({ shared: true, reason: 'within_limit' });
  });

  it('fail-open answers from the local window when the store throws synchronously', async () => {
    const { limiter } = setup({ mode: 'throw-sync' });
    await expect(limiter.consume('tok_a')).resolves.toMatchObject({ allowed: true, reason: 'local_fallback' });
  });
});

describe('WindowRateLimiter input validation', () => {
  it.each([{ key: '' }, { key: '10.0.0.1' }, { key: 'a/b' }, { key: 'x'.repeat(513) }])(
    'rejects key $key with InvalidKeyError before the store is called',
    async ({ key }) => {
      const { limiter, store } = setup();
      await expect(limiter.consume(key)).rejects.toBeInstanceOf(InvalidKeyError);
      expect(store.calls).toBe(0);
    },
  );

  it.each([{ cost: -1 }, { cost: 1.5 }, { cost: Number.NaN }, { cost: Number.POSITIVE_INFINITY }])(
    'rejects cost $cost with RangeError before the store is called',
    async ({ cost }) => {
      const { limiter, store } = setup();
      await expect(limiter.consume('tok_a', { cost })).rejects.toBeInstanceOf(RangeError);
      expect(store.calls).toBe(0);
    },
  );

  it.each([
    { name: 'a zero limit', bad: { name: 'x', limit: 0, windowMs: W } },
    { name: 'a fractional limit', bad: { name: 'x', limit: 1.5, windowMs: W } },
    { name: 'a window under one second', bad: { name: 'x', limit: 1, windowMs: 999 } },
    { name: 'a name with a space', bad: { name: 'a b', limit: 1, windowMs: W } },
  ])('rejects a per-call policy with $name with RangeError before the store is called', async ({ bad }) => {
    const { limiter, store } = setup();
    await expect(limiter.consume('tok_a', { policy: bad })).rejects.toBeInstanceOf(RangeError);
    expect(store.calls).toBe(0);
  });

  it.each([
    { name: 'an invalid default policy', policies: [{ name: 'x', limit: -1, windowMs: W }], error: RangeError },
    { name: 'an empty default set', policies: [], error: RangeError },
    { name: 'two policies sharing a name', policies: [policy, { ...policy, windowMs: 2 * W }], error: RangeError },
    { name: 'no default policies', policies: undefined, error: TypeError },
  ])('refuses to be built with $name', ({ policies, error }) => {
    const store = new ProgrammableStore();
    const guard = new DeadlineGuard({ backend: 'rtdb', timeoutMs: 1, logger: silentLogger });
    const parts = { store, guard, failurePolicy: 'fail-open' as const, clock: () => 0, logger: silentLogger };
    expect(() => new WindowRateLimiter({ ...parts, policies: policies as unknown as PolicySet })).toThrow(error);
  });

  it('refuses a call that names both a policy and policies', async () => {
    const { limiter, store } = setup();
    await expect(limiter.consume('tok_a', { policy, policies: [policy] })).rejects.toThrow(TypeError);
    expect(store.calls).toBe(0);
  });
});

describe('createRateLimiter memory backend', () => {
  it('answers from this instance only: shared false, within_limit then limit', async () => {
    let nowMs = 5 * W;
    const limiter = await createRateLimiter({ policy, clock: () => nowMs });
    expect(limiter.backend).toBe('memory');
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.consume('tok_a'));
    expect(decisions.map((d) => [d.allowed, d.shared, d.reason])).toEqual([
      [true, false, 'within_limit'],
      [true, false, 'within_limit'],
      [true, false, 'within_limit'],
      [false, false, 'limit'],
    ]);
    nowMs = 6 * W;
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: true, remaining: 2 });
    await limiter.close();
  });
});

describe('WindowRateLimiter refunds and closing', () => {
  it('a refund gives one unit back to the shared window it was spent in', async () => {
    const { limiter } = setup();
    const spent = await limiter.consume('tok_a');
    await limiter.refund('tok_a', spent);
    expect(await limiter.consume('tok_a', { cost: 0 })).toMatchObject({ remaining: 3 });
  });

  it('a refund of a refused decision or of cost 0 changes nothing', async () => {
    const { limiter, store } = setup();
    await limiter.consume('tok_a', { cost: 3 });
    const refused = await limiter.consume('tok_a');
    await limiter.refund('tok_a', refused);
    await limiter.refund('tok_a', await limiter.consume('tok_a', { cost: 0 }), { cost: 0 });
    expect(store.adjusts).toEqual([]);
  });

  it('a refund after the window has passed does not credit the next window', async () => {
    const { limiter, clock, store } = setup();
    const spent = await limiter.consume('tok_a');
    clock.nowMs += W;
    await limiter.refund('tok_a', spent);
    expect(await limiter.consume('tok_a', { cost: 0 })).toMatchObject({ remaining: 3 });
    await limiter.consume('tok_a');
    expect(await limiter.consume('tok_a', { cost: 0 })).toMatchObject({ remaining: 2 });
    // Nor when the next window has spending of its own: the late refund is not taken off it.
    await limiter.refund('tok_a', spent);
    expect(await limiter.consume('tok_a', { cost: 0 })).toMatchObject({ remaining: 2 });
    expect(store.adjusts).toEqual([]);
  });

  it('a refund of a call granted locally during an outage goes back to the local window, not the store', async () => {
    const { limiter, store } = setup({ mode: 'reject' });
    const spent = await limiter.consume('tok_a');
    expect(spent.shared).toBe(false);
    await limiter.refund('tok_a', spent);
    expect(limiter.unreconciledUnits).toBe(0);
    expect((await limiter.consume('tok_a')).remaining).toBe(2);
    store.mode = 'ok';
    expect(store.adjusts).toEqual([]);
  });

  it('a refund on a memory limiter goes to its own store', async () => {
    const limiter = await createRateLimiter({ policy, clock: () => 100 * W });
    const spent = await limiter.consume('tok_a', { cost: 2 });
    await limiter.refund('tok_a', spent, { cost: 2 });
    expect((await limiter.consume('tok_a', { cost: 0 })).remaining).toBe(3);
  });

  it('a memory store whose consume is replaced (a spy) is called through it, like any other store', async () => {
    const store = new MemoryWindowStore();
    const consume = jest.spyOn(store, 'consume');
    const limiter = await createRateLimiter({ store, policy, clock: () => 100 * W });
    expect((await limiter.consume('tok_a')).remaining).toBe(policy.limit - 1);
    expect(consume).toHaveBeenCalledTimes(1);
  });

  it.each([
    { name: 'an invalid key', key: 'a/b', options: {}, error: InvalidKeyError },
    { name: 'a negative cost', key: 'tok_a', options: { cost: -1 }, error: RangeError },
    { name: 'both policy and policies', key: 'tok_a', options: { policy, policies: [policy] as PolicySet }, error: TypeError },
  ])('on the memory store, $name is a rejected promise, not a throw', async ({ key, options, error }) => {
    const limiter = await createRateLimiter({ policy, clock: () => 100 * W });
    const answer = limiter.consume(key, options);
    expect(answer).toBeInstanceOf(Promise);
    await expect(answer).rejects.toThrow(error);
  });

  it('closing the limiter closes its store', async () => {
    const { limiter, store } = setup();
    const close = jest.spyOn(store, 'close');
    await limiter.close();
    expect(close).toHaveBeenCalledTimes(1);
  });
});

describe('WindowRateLimiter readiness, overrides and the bound on its over-limit cache', () => {
  it('is ready at once on a store without whenReady, and asks a store that has one', async () => {
    const { limiter, store } = setup();
    expect(await limiter.whenReady(10)).toBe(true);
    (store as ProgrammableStore & { whenReady?: (ms: number) => Promise<boolean> }).whenReady = async (ms) => ms > 100;
    expect(await limiter.whenReady(10)).toBe(false);
    expect(await limiter.whenReady(500)).toBe(true);
  });

  it('refuses an invalid policy given per call, before asking the store', async () => {
    const { limiter, store } = setup();
    await expect(limiter.consume('tok_a', { policy: { name: 'bad name', limit: 1, windowMs: W } })).rejects.toThrow(RangeError);
    expect(store.calls).toBe(0);
  });

  it('keeps at most maxBlockedKeys blocked keys: expired blocks go first, then the oldest live one', async () => {
    const { limiter, clock, store } = setup({ maxBlockedKeys: 2 });
    const block = async (key: string) => {
      await limiter.consume(key, { cost: 3 });
      await limiter.consume(key);
    };
    await block('tok_a');
    await block('tok_b');
    expect(limiter.blockedKeys).toBe(2);
    await block('tok_c'); // full of live blocks: tok_a, the oldest, is forgotten
    expect(limiter.blockedKeys).toBe(2);
    const before = store.calls;
    await limiter.consume('tok_b');
    await limiter.consume('tok_c');
    expect(store.calls).toBe(before); // still answered from the cache
    await limiter.consume('tok_a');
    expect(store.calls).toBe(before + 1); // forgotten: asked the store, which refuses it again
    clock.nowMs += W; // every block has expired: adding one sweeps them all out
    await block('tok_d');
    expect(limiter.blockedKeys).toBe(1);
  });
});

describe('WindowRateLimiter with a policy set', () => {
  /** Holds 2, refills 1 a second: the burst limit beside the 3-a-minute window. */
  const burst: RateLimitPolicy = { name: 'burst', algorithm: 'token-bucket', limit: 1, windowMs: 1_000, burst: 2 };
  const TIER: PolicySet = [burst, policy];
  const T0 = 100 * W + 10_000;

  it('holds a call to every policy: the binding one on top, each one listed, and a refusal charges none of them', async () => {
    const { limiter, clock } = setup();
    const first = await limiter.consume('tok_a', { policies: TIER });
    expect(first).toMatchObject({ allowed: true, shared: true, reason: 'within_limit', policyName: 'burst', algorithm: 'token-bucket', limit: 2, remaining: 1 });
    expect(first.policies.map((p) => [p.policyName, p.algorithm, p.allowed, p.remaining])).toEqual([
      ['burst', 'token-bucket', true, 1],
      ['default', 'fixed-window', true, 2],
    ]);
    await limiter.consume('tok_a', { policies: TIER });
    const refused = await limiter.consume('tok_a', { policies: TIER });
    expect(refused).toMatchObject({ allowed: false, reason: 'limit', policyName: 'burst', remaining: 0, retryAfterMs: 1_000 });
    // The window would have allowed it and reports what it still holds: the refused call was not charged there.
    expect(refused.policies.map((p) => [p.policyName, p.allowed, p.remaining])).toEqual([
      ['burst', false, 0],
      ['default', true, 1],
    ]);
    clock.nowMs += 1_000;
    // The window's last unit, still there; both at 0 now, the longer window binds.
    expect(await limiter.consume('tok_a', { policies: TIER })).toMatchObject({ allowed: true, policyName: 'default', remaining: 0 });
  });

  it("answers a bucket's refusal from the cache only until the bucket would allow the call, not until the window ends", async () => {
    const { limiter, store, clock } = setup();
    await limiter.consume('tok_a', { policies: TIER, cost: 2 });
    await limiter.consume('tok_a', { policies: TIER });
    const calls = store.calls;
    clock.nowMs = T0 + 500;
    expect(await limiter.consume('tok_a', { policies: TIER })).toMatchObject({ allowed: false, shared: true, policyName: 'burst', retryAfterMs: 500 });
    expect(store.calls).toBe(calls);
    clock.nowMs = T0 + 1_000;
    expect(await limiter.consume('tok_a', { policies: TIER })).toMatchObject({ allowed: true, shared: true, reason: 'within_limit' });
    expect(store.calls).toBe(calls + 1);
  });

  it("answers a window's refusal from the cache for the rest of the window, however full the bucket is again", async () => {
    const { limiter, store, clock } = setup();
    for (let i = 0; i < 3; i++) {
      expect(await limiter.consume('tok_a', { policies: TIER })).toMatchObject({ allowed: true });
      clock.nowMs += 1_000;
    }
    expect(await limiter.consume('tok_a', { policies: TIER })).toMatchObject({ allowed: false, policyName: 'default' });
    const calls = store.calls;
    clock.nowMs += 20_000;
    expect(await limiter.consume('tok_a', { policies: TIER })).toMatchObject({ allowed: false, policyName: 'default', retryAfterMs: 101 * W - clock.nowMs });
    expect(store.calls).toBe(calls);
  });

  it('keeps the refusal cache per set, while a policy the sets share keeps one state', async () => {
    const { limiter } = setup();
    await limiter.consume('tok_a', { policies: TIER, cost: 2 });
    expect(await limiter.consume('tok_a', { policies: TIER })).toMatchObject({ allowed: false, policyName: 'burst' });
    // The window alone is not refused by the bucket's refusal, and it has spent the 2 units the set spent.
    expect(await limiter.consume('tok_a', { policy })).toMatchObject({ allowed: true, policyName: 'default', remaining: 0 });
  });

  it('a refund gives back only to the policies still counting the spend: a bucket full again since gets none', async () => {
    const { limiter, store, clock } = setup();
    const spent = await limiter.consume('tok_a', { policies: TIER }); // the bucket is full again at T0 + 1000
    clock.nowMs = T0 + 1_500;
    await limiter.consume('tok_a', { policies: TIER });
    await limiter.refund('tok_a', spent, { policies: TIER });
    expect(store.adjusts).toEqual([[null, { atLeast: null, deltaUnits: -1 }]]);
    const read = await limiter.consume('tok_a', { policies: TIER, cost: 0 });
    expect(read.policies.map((p) => [p.policyName, p.remaining])).toEqual([
      ['burst', 1],
      ['default', 2],
    ]);
  });

  it('fail-open holds the local states to every policy of the set', async () => {
    const { limiter } = setup({ mode: 'reject' });
    const decisions = [];
    for (let i = 0; i < 3; i++) decisions.push(await limiter.consume('tok_a', { policies: TIER }));
    expect(decisions.map((d) => [d.allowed, d.shared, d.reason, d.policyName])).toEqual([
      [true, false, 'local_fallback', 'burst'],
      [true, false, 'local_fallback', 'burst'],
      [false, false, 'limit', 'burst'],
    ]);
    expect(decisions[2]?.policies.map((p) => [p.policyName, p.allowed, p.remaining])).toEqual([
      ['burst', false, 0],
      ['default', true, 1],
    ]);
  });

  it('fail-closed refuses under every policy of the set, each with its own most', async () => {
    const { limiter } = setup({ mode: 'reject', failurePolicy: 'fail-closed', unavailableRetryAfterMs: 5_000 });
    const decision = await limiter.consume('tok_a', { policies: TIER });
    expect(decision).toMatchObject({ allowed: false, shared: false, reason: 'backend_unavailable', retryAfterMs: 5_000 });
    expect(decision.policies.map((p) => [p.policyName, p.allowed, p.limit, p.remaining, p.retryAfterMs])).toEqual([
      ['burst', false, 2, 0, 5_000],
      ['default', false, 3, 0, 5_000],
    ]);
  });
});
