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

const callArb = fc.record({ key: fc.constantFrom('k1', 'k2', 'k3'), gapMs: fc.integer({ min: 0, max: 700 }), cost: fc.constantFrom(undefined, 0, 1, 2) });

test('one policy or two, any algorithm: the shortcut decides as the general path does', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(policyArb, { minLength: 1, maxLength: 2 }), fc.array(callArb, { maxLength: 40 }), async (policyList, calls) => {
      // Distinct windows: a set may not hold two policies of one algorithm over one window.
      const policies = policyList.map((p, i) => ({ ...p, name: `${p.name}${i}`, windowMs: p.windowMs + i * 7_000 })) as unknown as PolicySet;
      let nowMs = 1_764_000_000_000;
      const [fast, general] = await pair(policies, () => nowMs);
      for (const call of calls) {
        nowMs += call.gapMs;
        const options = call.cost === undefined ? undefined : { cost: call.cost };
        const a: Decision = await fast.consume(call.key, options);
        const b: Decision = await general.consume(call.key, options);
        expect(a).toStrictEqual(b);
      }
    }),
    { numRuns: 150 },
  );
});

test.each(['', 'a/b', 'a.b', 'x'.repeat(513), 'lone\uD800'])('a bad key %j is refused on the shortcut too, before any state is written', async (key) => {
  const [fast, general] = await pair([{ name: 'p', limit: 3, windowMs: 1_000 }], () => 1_000_000);
  await expect(fast.consume(key)).rejects.toBeInstanceOf(InvalidKeyError);
  await expect(general.consume(key)).rejects.toBeInstanceOf(InvalidKeyError);
});

test('a key refused once is refused again: a bad key is never stored, so it is never taken as known', async () => {
  const store = new MemoryWindowStore();
  const limiter = await createRateLimiter({ policy: { name: 'p', limit: 3, windowMs: 1_000 }, store, clock: () => 1_000_000 });
  for (let i = 0; i < 3; i++) await expect(limiter.consume('a/b')).rejects.toBeInstanceOf(InvalidKeyError);
  expect(store.size).toBe(0);
});
