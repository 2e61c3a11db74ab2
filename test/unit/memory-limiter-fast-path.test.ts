import fc from 'fast-check';
import { ALGORITHM_NAMES } from '../../src/library/window/algorithms';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { Decision } from '../../src/library/window/decision';
import { InvalidKeyError } from '../../src/library/window/key';
import type { StoreDecision } from '../../src/library/limiter/limit-store';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';

// The memory limiter answers a one-policy call through a synchronous shortcut (issue 22: the
// promise and the objects per call were half its cost). A store whose consume is its own (a
// subclass) takes the general path; the two must give the same Decision, field for field, on
// every sequence of calls, and refuse the same bad keys.

/** The same store, but with a consume of its own: the limiter then cannot take the shortcut. */
class GeneralPathStore extends MemoryWindowStore {
  override consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    return super.consume(key, nowMs, policies, cost);
  }
}

async function pair(policies: PolicySet, clock: () => number): Promise<[RateLimiter, RateLimiter]> {
  return [await createRateLimiter({ policies, clock }), await createRateLimiter({ policies, clock, store: new GeneralPathStore() })];
}

const policyArb: fc.Arbitrary<RateLimitPolicy> = fc.record({
  name: fc.constantFrom('a', 'b'),
  algorithm: fc.constantFrom(...ALGORITHM_NAMES),
  limit: fc.integer({ min: 1, max: 5 }),
  windowMs: fc.constantFrom(1_000, 3_000),
});

const callArb = fc.record({
  key: fc.constantFrom('k1', 'k2', 'k3'),
  // Mostly small steps; sometimes far ahead (the store drops both generations) or back (a lagging clock).
  gapMs: fc.oneof(fc.integer({ min: 0, max: 700 }), fc.integer({ min: 0, max: 700 }), fc.integer({ min: 8_000, max: 40_000 }), fc.integer({ min: -2_500, max: -1 })),
  cost: fc.constantFrom(undefined, 0, 1, 2),
  // Given back after the call (a sign-in found valid): a refund reads and rewrites the state the shortcut keeps in place.
  refund: fc.boolean(),
});

test('one policy or two, any algorithm: the shortcut, and consumeSync, decide as the general path does', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(policyArb, { minLength: 1, maxLength: 2 }), fc.array(callArb, { maxLength: 40 }), async (policyList, calls) => {
      // Distinct windows: a set may not hold two policies of one algorithm over one window.
      const policies = policyList.map((p, i) => ({ ...p, name: `${p.name}${i}`, windowMs: p.windowMs + i * 7_000 })) as unknown as PolicySet;
      let nowMs = 1_764_000_000_000;
      const [fast, general] = await pair(policies, () => nowMs);
      const sync = await createRateLimiter({ policies, clock: () => nowMs });
      const answered: { decision: Decision; asWas: string }[] = [];
      for (const call of calls) {
        nowMs += call.gapMs;
        const options = call.cost === undefined ? undefined : { cost: call.cost };
        const a: Decision = await fast.consume(call.key, options);
        const b: Decision = await general.consume(call.key, options);
        const c = sync.consumeSync?.(call.key, options);
        expect(a).toStrictEqual(b);
        expect(c).toStrictEqual(b);
        answered.push({ decision: a, asWas: JSON.stringify(a) }, { decision: c as Decision, asWas: JSON.stringify(c) });
        if (call.refund) {
          await fast.refund(call.key, a, options);
          await general.refund(call.key, b, options);
          await sync.refund(call.key, c as Decision, options);
        }
      }
      // The store answers the shortcut in one reused object: a Decision, once returned, must not follow it.
      for (const { decision, asWas } of answered) expect(JSON.stringify(decision)).toBe(asWas);
    }),
    { numRuns: 150 },
  );
});

test('the shortcut answers a plain Decision: its own object each call, one PolicyDecision, JSON and a spread keep every field', async () => {
  const limiter = await createRateLimiter({ policy: { name: 'p', limit: 3, windowMs: 1_000 }, clock: () => 1_000_000 });
  const first = await limiter.consume('k');
  const second = await limiter.consume('k');
  const expected = { allowed: true, limit: 3, remaining: 2, resetAtMs: 1_001_000, retryAfterMs: 0, policyName: 'p', windowMs: 1_000, perWindow: 3, algorithm: 'fixed-window' };
  expect(first).toStrictEqual({ ...expected, shared: false, reason: 'within_limit', policies: [expected] });
  expect(second).not.toBe(first);
  expect(second.policies[0]).not.toBe(first.policies[0]);
  expect(JSON.parse(JSON.stringify(first))).toStrictEqual(first);
  expect({ ...first }).toStrictEqual(first);
});

test.each(['', 'a/b', 'a.b', 'x'.repeat(513), 'lone\uD800'])('a bad key %j is refused on the shortcut too, before any state is written', async (key) => {
  const [fast, general] = await pair([{ name: 'p', limit: 3, windowMs: 1_000 }], () => 1_000_000);
  await expect(fast.consume(key)).rejects.toBeInstanceOf(InvalidKeyError);
  await expect(general.consume(key)).rejects.toBeInstanceOf(InvalidKeyError);
  expect(() => fast.consumeSync?.(key)).toThrow(InvalidKeyError);
  expect(() => fast.consumeSync?.(key, { cost: 2 })).toThrow(InvalidKeyError);
});

test.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('consumeSync refuses a bad cost %p as consume does, and spends nothing', async (cost) => {
  const store = new MemoryWindowStore();
  const limiter = await createRateLimiter({ policy: { name: 'p', limit: 3, windowMs: 1_000 }, store, clock: () => 1_000_000 });
  await expect(limiter.consume('k', { cost })).rejects.toThrow(RangeError);
  expect(() => limiter.consumeSync?.('k', { cost })).toThrow(RangeError);
  expect(store.size).toBe(0);
});

test('consumeSync on a memory store whose consume was replaced cannot decide without it: undefined, nothing spent', async () => {
  const store = new GeneralPathStore();
  const limiter = await createRateLimiter({ policy: { name: 'p', limit: 3, windowMs: 1_000 }, store, clock: () => 1_000_000 });
  expect(limiter.consumeSync?.('k')).toBeUndefined();
  expect(await limiter.consume('k')).toMatchObject({ remaining: 2 });
});

test('a key refused once is refused again: a bad key is never stored, so it is never taken as known', async () => {
  const store = new MemoryWindowStore();
  const limiter = await createRateLimiter({ policy: { name: 'p', limit: 3, windowMs: 1_000 }, store, clock: () => 1_000_000 });
  for (let i = 0; i < 3; i++) await expect(limiter.consume('a/b')).rejects.toBeInstanceOf(InvalidKeyError);
  expect(store.size).toBe(0);
});
