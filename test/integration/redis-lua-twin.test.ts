import fc from 'fast-check';
import { createClient } from 'redis';
import { adjustFixedWindow, decideFixedWindow, type FixedWindowState } from '../../src/limiter/algorithms/fixed-window';
import type { RateLimitPolicy } from '../../src/limiter/policy';
import { formatRedisWindowValue, parseRedisWindowValue } from '../support/redis-window-value';
import { RedisWindowStore } from '../../src/limiter/stores/redis-store';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { ADJUST_VECTORS, FIXED_WINDOW_VECTORS } from '../unit/redis-vectors';

// The Lua script and decideFixedWindow are two copies of one decision; this
// suite is what keeps them one. Every vector and every random walk goes through
// both, on a real redis-server.

const PREFIX = 'twin:';

let server: RedisServer;
let store: RedisWindowStore;
let raw: ReturnType<typeof createClient>;
let keySeq = 0;

beforeAll(async () => {
  server = await startRedisServer();
  store = new RedisWindowStore({ url: server.url, keyPrefix: PREFIX });
  raw = createClient({ url: server.url });
  await raw.connect();
  expect(await store.whenReady(5000)).toBe(true);
});

afterAll(async () => {
  await store?.close();
  raw?.destroy();
  await server?.close();
});

function freshKey(): string {
  keySeq += 1;
  return `k${keySeq}`;
}

async function putState(key: string, state: FixedWindowState | null): Promise<void> {
  if (state === null) await raw.del(PREFIX + key);
  else await raw.set(PREFIX + key, formatRedisWindowValue(state.windowNumber, state.count), { PX: 600_000 });
}

async function readState(key: string): Promise<{ state: FixedWindowState | null; raw: string | null; pttlMs: number }> {
  const value = (await raw.get(PREFIX + key)) as string | null;
  const pttlMs = Number(await raw.pTTL(PREFIX + key));
  return { state: parseRedisWindowValue(value), raw: value, pttlMs };
}

function policyOf(p: { limit: number; windowMs: number }): RateLimitPolicy {
  return { name: 'twin', limit: p.limit, windowMs: p.windowMs };
}

describe('fixed-window vectors: TypeScript and Lua give the same answer', () => {
  test.each(FIXED_WINDOW_VECTORS.map((v) => [v.name, v] as const))('%s', async (_name, vector) => {
    const policy = policyOf(vector.policy);

    const ts = decideFixedWindow(vector.state, vector.nowMs, policy, vector.cost);
    expect(ts.decision).toEqual(vector.expected);
    expect(ts.next).toEqual(vector.next);

    const key = freshKey();
    await putState(key, vector.state);
    const before = await readState(key);
    const lua = await store.consume(key, vector.nowMs, policy, vector.cost);
    const after = await readState(key);

    expect(lua).toEqual(vector.expected);
    if (vector.next === null) {
      // Nothing written: same bytes, and the TTL was not refreshed.
      expect(after.raw).toBe(before.raw);
      expect(after.pttlMs).toBeLessThanOrEqual(before.pttlMs);
    } else {
      expect(after.state).toEqual(vector.next);
      expect(after.raw).toBe(formatRedisWindowValue(vector.next.windowNumber, vector.next.count));
      // Time left in the window (by the caller's clock) plus the 10 s margin.
      const expectedTtlMs = vector.expected.resetAtMs - vector.nowMs + 10_000;
      expect(after.pttlMs).toBeGreaterThan(0);
      expect(after.pttlMs).toBeLessThanOrEqual(expectedTtlMs);
      expect(after.pttlMs).toBeGreaterThan(expectedTtlMs - 5_000);
    }
  });

  test('a value the script did not write is treated as no state, like null in TypeScript', async () => {
    const key = freshKey();
    await raw.set(PREFIX + key, 'not-a-window');
    const policy = policyOf({ limit: 5, windowMs: 60_000 });
    const nowMs = 1_700_000_000_123;
    const lua = await store.consume(key, nowMs, policy, 1);
    expect(lua).toEqual(decideFixedWindow(null, nowMs, policy, 1).decision);
    expect((await readState(key)).state).toEqual({ windowNumber: 28_333_333, count: 1 });
  });
});

interface Step {
  readonly stepMs: number;
  readonly cost: number;
  readonly policyIndex: number;
}

// Small limits and short windows so refusals, window changes and clocks that
// step backwards (another instance's lagging clock) all come up often.
const POLICIES: readonly RateLimitPolicy[] = [
  { name: 'a', limit: 1, windowMs: 1000 },
  { name: 'b', limit: 3, windowMs: 1000 },
  { name: 'c', limit: 5, windowMs: 2500 },
  { name: 'd', limit: 10, windowMs: 7000 },
  { name: 'e', limit: 120, windowMs: 60_000 },
];

const stepArb: fc.Arbitrary<Step> = fc.record({
  stepMs: fc.oneof(fc.integer({ min: -3000, max: 3000 }), fc.integer({ min: 0, max: 120_000 }), fc.constant(0)),
  cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 12 })),
  policyIndex: fc.integer({ min: 0, max: POLICIES.length - 1 }),
});

test('property: random walks of (time step, cost, policy) give identical decisions and state', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: 4_000_000_000_000 }),
      fc.array(stepArb, { minLength: 1, maxLength: 40 }),
      async (startMs, steps) => {
        const key = freshKey();
        let state: FixedWindowState | null = null;
        let nowMs = startMs;
        for (const step of steps) {
          nowMs = Math.max(0, nowMs + step.stepMs);
          const policy = POLICIES[step.policyIndex] as RateLimitPolicy;
          const ts = decideFixedWindow(state, nowMs, policy, step.cost);
          const lua = await store.consume(key, nowMs, policy, step.cost);
          expect(lua).toEqual(ts.decision);
          if (ts.next !== null) state = ts.next;
          expect((await readState(key)).state).toEqual(state);
        }
      },
    ),
    { numRuns: 150 },
  );
});

describe('adjust vectors: TypeScript and Lua store the same window', () => {
  test.each(ADJUST_VECTORS.map((v) => [v.name, v] as const))('%s', async (_name, vector) => {
    const policy = policyOf({ limit: 1_000, windowMs: vector.windowMs });
    expect(adjustFixedWindow(vector.state, vector.nowMs, policy, vector.adjustment)).toEqual(vector.next);

    const key = freshKey();
    await putState(key, vector.state);
    const before = await readState(key);
    await store.adjust(key, vector.nowMs, policy, vector.adjustment);
    const after = await readState(key);
    if (vector.next === null) {
      expect(after.raw).toBe(before.raw);
      expect(after.pttlMs).toBeLessThanOrEqual(before.pttlMs);
    } else {
      expect(after.state).toEqual(vector.next);
      expect(after.pttlMs).toBeGreaterThan(0);
    }
  });

  test('property: random interleavings of decisions and adjustments leave identical state', async () => {
    const policy = POLICIES[2] as RateLimitPolicy;
    const op = fc.oneof(
      fc.record({ kind: fc.constant('consume' as const), stepMs: fc.integer({ min: -1000, max: 3000 }), cost: fc.integer({ min: 0, max: 3 }) }),
      fc.record({
        kind: fc.constant('adjust' as const),
        stepMs: fc.integer({ min: -1000, max: 3000 }),
        windowOffset: fc.integer({ min: -1, max: 1 }),
        atLeastCount: fc.integer({ min: 0, max: 8 }),
        deltaUnits: fc.integer({ min: -4, max: 4 }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 10_000_000, max: 4_000_000_000_000 }), fc.array(op, { minLength: 1, maxLength: 30 }), async (startMs, ops) => {
        const key = freshKey();
        let state: FixedWindowState | null = null;
        let nowMs = startMs;
        for (const o of ops) {
          nowMs = Math.max(0, nowMs + o.stepMs);
          if (o.kind === 'consume') {
            const ts = decideFixedWindow(state, nowMs, policy, o.cost);
            expect(await store.consume(key, nowMs, policy, o.cost)).toEqual(ts.decision);
            if (ts.next !== null) state = ts.next;
          } else {
            const windowNumber = Math.max(0, Math.floor(nowMs / policy.windowMs) + o.windowOffset);
            const adjustment = { windowNumber, atLeastCount: o.atLeastCount, deltaUnits: o.deltaUnits };
            const next = adjustFixedWindow(state, nowMs, policy, adjustment);
            await store.adjust(key, nowMs, policy, adjustment);
            if (next !== null) state = next;
          }
          expect((await readState(key)).state).toEqual(state);
        }
      }),
      { numRuns: 100 },
    );
  });
});
