import fc from 'fast-check';
import { createClient, createCluster } from 'redis';
import type { Adjustment } from '../../src/library/window/algorithms';
import { adjustFixedWindow, decideFixedWindow, windowNumberAt, type FixedWindowState, type WindowAdjustment } from '../../src/library/window/fixed-window';
import { adjustSet, decideSet } from '../../src/library/window/decide-set';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import { toDecision, WindowRateLimiter } from '../../src/library/limiter/rate-limiter';
import { silentLogger } from '../../src/shared/logger';
import { DeadlineGuard } from '../support/deadline-guard';
import { formatRedisWindowValue, parseRedisWindowValue } from '../support/redis-window-value';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { startRedisCluster } from '../support/redis-cluster';
import { startRedisServer } from '../support/redis-server';
import { ADJUST_VECTORS, FIXED_WINDOW_VECTORS } from '../unit/redis-vectors';

// The Redis store's one script (lua/set-script.ts), given a set of one
// fixed-window policy, and the pure decideSet the other stores run are two
// copies of one decision; this suite is what keeps them one. Every vector and
// every random walk goes through both, on a real redis-server, in the layout
// every deployment has always had: the value of `prefix + key` is
// "windowNumber:count". (algorithm-lua-twins.test.ts holds each twin alone to
// its algorithm; this holds the script the store actually sends.)

const PREFIX = 'twin:';

/** What the tests read and write by hand, on either topology. */
interface RawClient {
  get(key: string): Promise<unknown>;
  set(key: string, value: string, options?: { PX: number }): Promise<unknown>;
  del(key: string): Promise<unknown>;
  pTTL(key: string): Promise<unknown>;
}

describe.each(['standalone', 'cluster'] as const)('on %s Redis', (topology) => {
  let close: () => Promise<void>;
  let store: RedisWindowStore;
  let raw: RawClient;
  let keySeq = 0;
  /** The key as the store names it: in a cluster the limited key is the hash tag. */
  const keyOf = (key: string): string => PREFIX + (topology === 'cluster' ? `{${key}}` : key);

  beforeAll(async () => {
    if (topology === 'cluster') {
      const cluster = await startRedisCluster();
      store = new RedisWindowStore({ url: cluster.url, mode: 'cluster', keyPrefix: PREFIX });
      const client = createCluster({ rootNodes: [{ url: cluster.url.split(',')[0] as string }] });
      await client.connect();
      raw = client;
      close = async () => {
        client.destroy();
        await cluster.close();
      };
    } else {
      const server = await startRedisServer();
      store = new RedisWindowStore({ url: server.url, keyPrefix: PREFIX });
      const client = createClient({ url: server.url });
      await client.connect();
      raw = client;
      close = async () => {
        client.destroy();
        await server.close();
      };
    }
    expect(await store.whenReady(5000)).toBe(true);
  });

  afterAll(async () => {
    await store?.close();
    await close?.();
  });

  function freshKey(): string {
    keySeq += 1;
    return `k${keySeq}`;
  }

  async function putState(key: string, state: FixedWindowState | null): Promise<void> {
    if (state === null) await raw.del(keyOf(key));
    else await raw.set(keyOf(key), formatRedisWindowValue(state.windowNumber, state.count), { PX: 600_000 });
  }

  async function readState(key: string): Promise<{ state: FixedWindowState | null; raw: string | null; pttlMs: number }> {
    const value = (await raw.get(keyOf(key))) as string | null;
    const pttlMs = Number(await raw.pTTL(keyOf(key)));
    return { state: parseRedisWindowValue(value), raw: value, pttlMs };
  }

  function policyOf(p: { limit: number; windowMs: number }): RateLimitPolicy {
    return { name: 'twin', limit: p.limit, windowMs: p.windowMs };
  }

  /** The default set: exactly one fixed-window policy. */
  function setOf(p: { limit: number; windowMs: number }): PolicySet {
    return [policyOf(p)];
  }

  /**
   * The old store-level adjustment as the generic one stores take now: the
   * count known for its window becomes `atLeast` (a state of that window), the
   * delta is unchanged.
   */
  function generic(adjustment: WindowAdjustment): Adjustment<FixedWindowState> {
    return { atLeast: { windowNumber: adjustment.windowNumber, count: adjustment.atLeastCount }, deltaUnits: adjustment.deltaUnits };
  }

  /** The window an adjustment at `nowMs` lands in: ours, or a newer one already stored. */
  function windowOfRecord(state: FixedWindowState | null, nowMs: number, windowMs: number): number {
    return Math.max(windowNumberAt(nowMs, windowMs), state?.windowNumber ?? 0);
  }

  describe('fixed-window vectors: TypeScript and Lua give the same answer', () => {
    test.each(FIXED_WINDOW_VECTORS.map((v) => [v.name, v] as const))('%s', async (_name, vector) => {
      const policies = setOf(vector.policy);

      const fixed = decideFixedWindow(vector.state, vector.nowMs, policies[0], vector.cost);
      expect(fixed.decision).toEqual(vector.expected);
      expect(fixed.next).toEqual(vector.next);
      // What every store makes atomic: the same answer for a set of this one policy.
      const ts = decideSet([vector.state], vector.nowMs, policies, vector.cost);
      expect(ts).toEqual({ decisions: [vector.expected], allowed: vector.expected.allowed, states: [vector.next ?? vector.state], changed: vector.next !== null });

      const key = freshKey();
      await putState(key, vector.state);
      const before = await readState(key);
      const lua = await store.consume(key, vector.nowMs, policies, vector.cost);
      const after = await readState(key);

      expect(lua).toEqual({ allowed: ts.allowed, decisions: ts.decisions, states: ts.states });
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
      await raw.set(keyOf(key), 'not-a-window');
      const policies = setOf({ limit: 5, windowMs: 60_000 });
      const nowMs = 1_700_000_000_123;
      const lua = await store.consume(key, nowMs, policies, 1);
      const ts = decideSet([null], nowMs, policies, 1);
      expect(lua).toEqual({ allowed: ts.allowed, decisions: ts.decisions, states: ts.states });
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
  // Each a set of one fixed-window policy, so all of them count in the one key `prefix + key`.
  const POLICIES: readonly PolicySet[] = [
    [{ name: 'a', limit: 1, windowMs: 1000 }],
    [{ name: 'b', limit: 3, windowMs: 1000 }],
    [{ name: 'c', limit: 5, windowMs: 2500 }],
    [{ name: 'd', limit: 10, windowMs: 7000 }],
    [{ name: 'e', limit: 120, windowMs: 60_000 }],
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
            const policies = POLICIES[step.policyIndex] as PolicySet;
            const ts = decideSet([state], nowMs, policies, step.cost);
            const lua = await store.consume(key, nowMs, policies, step.cost);
            expect(lua).toEqual({ allowed: ts.allowed, decisions: ts.decisions, states: ts.states });
            if (ts.changed) state = ts.states[0] as FixedWindowState;
            expect((await readState(key)).state).toEqual(state);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  describe('adjust vectors: TypeScript and Lua store the same window', () => {
    test.each(ADJUST_VECTORS.map((v) => [v.name, v] as const))('%s', async (_name, vector) => {
      const policies = setOf({ limit: 1_000, windowMs: vector.windowMs });
      expect(adjustFixedWindow(vector.state, vector.nowMs, policies[0], vector.adjustment)).toEqual(vector.next);
      const key = freshKey();
      await putState(key, vector.state);
      const before = await readState(key);
      let tsNext: FixedWindowState | null;
      if (vector.adjustment.windowNumber === windowOfRecord(vector.state, vector.nowMs, vector.windowMs)) {
        const adjustment = generic(vector.adjustment);
        const ts = adjustSet([vector.state], vector.nowMs, policies, [adjustment]);
        tsNext = ts === null ? null : (ts[0] as FixedWindowState);
        expect(tsNext).toEqual(vector.next);
        await store.adjust(key, vector.nowMs, policies, [adjustment]);
      } else {
        // A refund meant for a window that has passed. A generic Adjustment names
        // no window (it lands in the window of record), so dropping it is the
        // limiter's part now: it knows the decision it refunds. Through the
        // limiter, on this store and this script, it must still write nothing.
        expect(vector.adjustment.deltaUnits).toBeLessThan(0);
        tsNext = vector.next;
        const limiter = new WindowRateLimiter({
          store,
          guard: new DeadlineGuard({ backend: 'redis', timeoutMs: 5_000, logger: silentLogger }),
          policies,
          failurePolicy: 'fail-closed',
          clock: () => vector.nowMs,
          logger: silentLogger,
        });
        const windowEndMs = (vector.adjustment.windowNumber + 1) * vector.windowMs;
        const spentInThatWindow = { allowed: true, limit: policies[0].limit, remaining: 0, resetAtMs: windowEndMs, retryAfterMs: 0 };
        const spent = toDecision({ allowed: true, decisions: [spentInThatWindow] }, policies, true);
        await limiter.refund(key, spent, { policies, cost: -vector.adjustment.deltaUnits });
      }
      const after = await readState(key);
      if (tsNext === null) {
        expect(after.raw).toBe(before.raw);
        expect(after.pttlMs).toBeLessThanOrEqual(before.pttlMs);
      } else {
        expect(after.state).toEqual(tsNext);
        expect(after.raw).toBe(formatRedisWindowValue(tsNext.windowNumber, tsNext.count));
        expect(after.pttlMs).toBeGreaterThan(0);
      }
    });

    test('property: random interleavings of decisions and adjustments leave identical state', async () => {
      const policies = POLICIES[2] as PolicySet;
      const { windowMs } = policies[0];
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
              const ts = decideSet([state], nowMs, policies, o.cost);
              expect(await store.consume(key, nowMs, policies, o.cost)).toEqual({ allowed: ts.allowed, decisions: ts.decisions, states: ts.states });
              if (ts.changed) state = ts.states[0] as FixedWindowState;
            } else {
              const windowNumber = Math.max(0, Math.floor(nowMs / windowMs) + o.windowOffset);
              const adjustment = generic({ windowNumber, atLeastCount: o.atLeastCount, deltaUnits: o.deltaUnits });
              const next = adjustSet([state], nowMs, policies, [adjustment]);
              await store.adjust(key, nowMs, policies, [adjustment]);
              if (next !== null) state = next[0] as FixedWindowState;
            }
            expect((await readState(key)).state).toEqual(state);
          }
        }),
        { numRuns: 100 },
      );
    });
  });
});
