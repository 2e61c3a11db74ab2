import fc from 'fast-check';
import type { Adjustment } from '../../src/library/window/algorithms';
import { algorithmFor } from '../../src/library/window/decide-set';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { BASE_MS, CASES, freshKey, observed, Reference, SETS, startBackends, type Backend, type Backends, type ContractBackend } from '../support/store-contract';
import { reportSqliteSkipped, withSqlite } from '../support/sqlite-runtime';

// The store contract, part one: on every store (memory, RTDB, Redis) and for
// every algorithm alone and for sets of several, a random sequence of calls
// at injected times gives, call by call, exactly the decisions and states of
// the pure decideSet / adjustSet folded over the same sequence. Nothing sleeps:
// times move forward, stand still, jump whole windows, and step back a little
// (a lagging instance's clock).

let backends: Backends;
beforeAll(async () => {
  backends = await startBackends();
});
afterAll(async () => {
  await backends?.close();
});
const HOUR: PolicySet = [{ name: 'hour', algorithm: 'sliding-window', limit: 9, windowMs: 3_600_000 }];
const backend = (label: ContractBackend): Backend => backends.all.find((b) => b.label === label) as Backend;

/** Runs per property: every run is a fresh key; the shared stores cost a round trip per call. */
const RUNS: Readonly<Record<ContractBackend, number>> = { memory: 200, redis: 40, 'redis-cluster': 25, rtdb: 20, sqlite: 100 };

const stepMs = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 4000 }) },
  { weight: 2, arbitrary: fc.constant(0) },
  { weight: 2, arbitrary: fc.integer({ min: -800, max: -1 }) },
  { weight: 1, arbitrary: fc.integer({ min: 4001, max: 25_000 }) },
);
const cost = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 }), fc.integer({ min: 0, max: 6 }));
const consumeOp = fc.record({ kind: fc.constant('consume' as const), stepMs, cost });
/** Per policy: none, or a delta (negative refunds) after merging with a state the key once had. */
const adjustOp = (n: number) =>
  fc.record({
    kind: fc.constant('adjust' as const),
    stepMs,
    per: fc.array(fc.option(fc.record({ deltaUnits: fc.integer({ min: -3, max: 3 }), atLeastFrom: fc.option(fc.nat()) })), { minLength: n, maxLength: n }),
  });
type Op = { kind: 'consume'; stepMs: number; cost: number } | { kind: 'adjust'; stepMs: number; per: ({ deltaUnits: number; atLeastFrom: number | null } | null)[] };

const start = fc.integer({ min: 0, max: 60_000 });

/** Per key of a run: its policy set and its reference. */
interface Lane {
  readonly key: string;
  readonly policies: PolicySet;
  readonly reference: Reference;
}

/**
 * The newest expiry the store's clock has passed, among the states it holds:
 * the memory store may forget such a state (and has no lag margin, unlike
 * Redis' TTL margin and the RTDB sweeper's grace), so a later call lagging
 * behind it would see a fresh window; that gap is store-contract-sets.test.ts'
 * known-gap test. Elsewhere lagging calls are asked as generated.
 */
function forgettableUntilMs(lanes: readonly Lane[], newestMs: number): number {
  let floor = Number.NEGATIVE_INFINITY;
  for (const { policies, reference } of lanes) {
    policies.forEach((policy, i) => {
      const state = reference.states[i] ?? null;
      const expiresAtMs = state === null ? floor : algorithmFor(policy).expiresAtMs(state, policy);
      if (expiresAtMs <= newestMs && expiresAtMs > floor) floor = expiresAtMs;
    });
  }
  return floor;
}

/** `before`, except that each policy whose state had expired by `nowMs` may read as it does in `after` (gone). */
function expiredAsEmpty(before: unknown, after: unknown, policies: PolicySet, reference: Reference, nowMs: number): unknown {
  if (!Array.isArray(before) || !Array.isArray(after)) return before;
  return before.map((value, i) => {
    const policy = policies[i] as RateLimitPolicy;
    const state = reference.states[i] ?? null;
    const expired = state === null || algorithmFor(policy).expiresAtMs(state, policy) <= nowMs;
    return expired ? after[i] : value;
  });
}

/** Folds `ops` through the store and the references side by side; every consume must match, and refusals write nothing. */
async function replay(b: Backend, sets: readonly PolicySet[], startOffsetMs: number, ops: readonly (Op & { lane?: number })[]): Promise<void> {
  const lanes: Lane[] = sets.map((policies) => ({ key: freshKey(), policies, reference: new Reference(policies) }));
  let nowMs = BASE_MS + startOffsetMs;
  let newestMs = nowMs;
  for (const [i, op] of ops.entries()) {
    nowMs += op.stepMs;
    if (b.name === 'memory') nowMs = Math.max(nowMs, forgettableUntilMs(lanes, newestMs));
    newestMs = Math.max(newestMs, nowMs);
    const { key, policies, reference } = lanes[(op.lane ?? 0) % lanes.length] as Lane;
    const where = `call ${i} (${op.kind} on ${key} at BASE_MS + ${nowMs - BASE_MS})`;
    if (op.kind === 'adjust') {
      const adjustments: (Adjustment<unknown> | null)[] = policies.map((_, j) => {
        const p = op.per[j] ?? null;
        if (p === null) return null;
        const from = p.atLeastFrom === null ? null : reference.history[p.atLeastFrom % reference.history.length];
        return { deltaUnits: p.deltaUnits, atLeast: from?.[j] ?? null };
      });
      reference.adjust(nowMs, adjustments);
      await b.store.adjust(key, nowMs, policies, adjustments);
      // A cost-0 read at the same instant shows the stored states and writes nothing.
      expect({ where, after: observed(await b.store.consume(key, nowMs, policies, 0), policies, nowMs) }).toEqual({ where, after: reference.consume(nowMs, 0) });
      continue;
    }
    const expected = reference.consume(nowMs, op.cost);
    const before = expected.allowed ? undefined : await b.raw(key, policies);
    const actual = observed(await b.store.consume(key, nowMs, policies, op.cost), policies, nowMs);
    expect({ where, cost: op.cost, decision: actual }).toEqual({ where, cost: op.cost, decision: expected });
    if (before !== undefined) {
      // A refusal writes nothing; but the memory store may drop a state that has expired by nowMs (its
      // generations rotate on every call), and an expired state reads as empty on every store.
      const after = await b.raw(key, policies);
      const kept = b.name === 'memory' ? expiredAsEmpty(before, after, policies, reference, nowMs) : before;
      expect({ where, storedAfterRefusal: after }).toEqual({ where, storedAfterRefusal: kept });
    }
  }
}

reportSqliteSkipped('the store contract (random sequences)');
describe.each(withSqlite(['memory', 'rtdb', 'redis', 'redis-cluster'] as const))('the %s store', (name) => {
  test.each([...CASES, ...SETS])('%s: random consumes give exactly the decisions and states of folding decideSet, and a refusal stores nothing', async (_, policies) => {
    const b = backend(name);
    await fc.assert(
      fc.asyncProperty(start, fc.array(consumeOp, { minLength: 1, maxLength: 24 }), (offset, ops) => replay(b, [policies], offset, ops)),
      { numRuns: RUNS[name] },
    );
  });

  test.each([...CASES, ...SETS])('%s: refunds and atLeast merges among consumes leave exactly the states of folding adjustSet', async (_, policies) => {
    const b = backend(name);
    const ops = fc.array(fc.oneof(consumeOp, adjustOp(policies.length)), { minLength: 1, maxLength: 20 });
    await fc.assert(
      fc.asyncProperty(start, ops, (offset, sequence) => replay(b, [policies], offset, sequence)),
      { numRuns: RUNS[name] },
    );
  });

  // Keys share what a store keeps besides states (the memory store's generations, sized by the longest
  // expiry seen): an hour window beside ten-second ones, with jumps of many minutes.
  test('keys of different policy sets, interleaved, each fold exactly like their own reference', async () => {
    const b = backend(name);
    const sets = [...[...CASES, ...SETS].map(([, set]) => set), HOUR];
    const lane = fc.integer({ min: 0, max: sets.length - 1 });
    const jump = fc.integer({ min: 25_000, max: 2_000_000 });
    const op = fc.oneof(
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('consume' as const), stepMs, cost, lane }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('consume' as const), stepMs: jump, cost, lane }) },
      { weight: 1, arbitrary: fc.tuple(adjustOp(5), lane).map(([a, l]) => ({ ...a, lane: l })) },
    );
    await fc.assert(
      fc.asyncProperty(start, fc.array(op, { minLength: 1, maxLength: 40 }), (offset, ops) => replay(b, sets, offset, ops)),
      { numRuns: RUNS[name] },
    );
  });
});
