import fc from 'fast-check';
import { createClient } from 'redis';
import { ALGORITHMS, ALGORITHM_NAMES, type Algorithm, type AlgorithmName, type AlgorithmStates, type LimitParams } from '../../src/library/window/algorithms';
import { FIXED_WINDOW_TWIN, formatFixedWindowValue, parseFixedWindowValue } from '../../src/library/backends/redis/lua/fixed-window';
import { LEAKY_BUCKET_TWIN, formatLeakyBucketValue, parseLeakyBucketValue } from '../../src/library/backends/redis/lua/leaky-bucket';
import { SLIDING_LOG_TWIN, formatSlidingLogValue, parseSlidingLogValue } from '../../src/library/backends/redis/lua/sliding-log';
import { SLIDING_WINDOW_TWIN, formatSlidingWindowValue, parseSlidingWindowValue } from '../../src/library/backends/redis/lua/sliding-window';
import { TOKEN_BUCKET_TWIN, formatTokenBucketValue, parseTokenBucketValue } from '../../src/library/backends/redis/lua/token-bucket';
import { DEFAULT_TTL_MARGIN_MS, adjustArgs, decideArgs, decisionFromReply, writtenFromReply, type LuaTwin } from '../../src/library/backends/redis/lua/twin-protocol';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { ALGORITHM_VECTORS, type AdjustVector, type DecideVector } from '../unit/algorithm-vectors';

// Every algorithm is written twice, in TypeScript and in Lua; this suite is
// what keeps each pair one. Every vector and every random interleaving of
// decisions and adjustments goes through both, on a real redis-server, and
// must give the same decision and leave the same state after every step.

interface Pair<S> {
  readonly algorithm: Algorithm<S>;
  readonly twin: LuaTwin;
  readonly format: (state: S) => string;
  readonly parse: (value: string | null) => S | null;
  /** States that mean the same as no key (the sliding log deletes an emptied key). */
  readonly isEmpty?: (state: S) => boolean;
}

const PAIRS: { readonly [K in AlgorithmName]: Pair<AlgorithmStates[K]> } = {
  'fixed-window': { algorithm: ALGORITHMS['fixed-window'], twin: FIXED_WINDOW_TWIN, format: formatFixedWindowValue, parse: parseFixedWindowValue },
  'sliding-window': { algorithm: ALGORITHMS['sliding-window'], twin: SLIDING_WINDOW_TWIN, format: formatSlidingWindowValue, parse: parseSlidingWindowValue },
  'sliding-log': {
    algorithm: ALGORITHMS['sliding-log'],
    twin: SLIDING_LOG_TWIN,
    format: formatSlidingLogValue,
    parse: parseSlidingLogValue,
    isEmpty: (state) => state.entries.length === 0,
  },
  'token-bucket': { algorithm: ALGORITHMS['token-bucket'], twin: TOKEN_BUCKET_TWIN, format: formatTokenBucketValue, parse: parseTokenBucketValue },
  'leaky-bucket': { algorithm: ALGORITHMS['leaky-bucket'], twin: LEAKY_BUCKET_TWIN, format: formatLeakyBucketValue, parse: parseLeakyBucketValue },
};

let server: RedisServer;
let client: ReturnType<typeof createClient>;
let keySeq = 0;

beforeAll(async () => {
  server = await startRedisServer();
  client = createClient({ url: server.url });
  await client.connect();
  // Loaded up front so every call can be EVALSHA; Redis must name each script by our SHA1.
  for (const name of ALGORITHM_NAMES) {
    const { twin } = PAIRS[name];
    expect(await client.sendCommand(['SCRIPT', 'LOAD', twin.script])).toBe(twin.sha1);
  }
});

afterAll(async () => {
  client?.destroy();
  await server?.close();
});

function freshKey(name: string): string {
  keySeq += 1;
  return `twin:${name}:${keySeq}`;
}

async function put<S>(pair: Pair<S>, key: string, state: S | null): Promise<void> {
  if (state === null) await client.del(key);
  else await client.set(key, pair.format(state), { PX: 600_000 });
}

async function read<S>(pair: Pair<S>, key: string): Promise<{ state: S | null; raw: string | null; pttlMs: number }> {
  const raw = (await client.get(key)) as string | null;
  return { state: pair.parse(raw), raw, pttlMs: Number(await client.pTTL(key)) };
}

/** What the TypeScript side's state looks like once stored: an emptied log is no key at all. */
function stored<S>(pair: Pair<S>, state: S | null): S | null {
  return state !== null && pair.isEmpty?.(state) === true ? null : state;
}

async function luaDecide<S>(pair: Pair<S>, key: string, nowMs: number, params: LimitParams, cost: number, command: 'EVAL' | 'EVALSHA' = 'EVALSHA') {
  const script = command === 'EVAL' ? pair.twin.script : pair.twin.sha1;
  const reply = await client.sendCommand([command, script, '1', key, ...decideArgs(nowMs, params, cost)]);
  return decisionFromReply(reply, pair.algorithm.maxCost(params));
}

async function luaAdjust<S>(pair: Pair<S>, key: string, nowMs: number, params: LimitParams, deltaUnits: number, atLeast: S | null): Promise<boolean> {
  const reply = await client.sendCommand(['EVALSHA', pair.twin.sha1, '1', key, ...adjustArgs(nowMs, params, deltaUnits, atLeast === null ? null : pair.format(atLeast))]);
  return writtenFromReply(reply);
}

function expectTtl(pttlMs: number, expiresAtMs: number, nowMs: number): void {
  const expected = Math.max(1, expiresAtMs - nowMs + DEFAULT_TTL_MARGIN_MS);
  expect(pttlMs).toBeGreaterThan(0);
  expect(pttlMs).toBeLessThanOrEqual(expected);
  expect(pttlMs).toBeGreaterThan(expected - 5_000);
}

function suite<S>(name: AlgorithmName, pair: Pair<S>, vectors: { decide: readonly DecideVector<S>[]; adjust: readonly AdjustVector<S>[] }): void {
  const { algorithm } = pair;

  describe(`${name}: decide vectors, TypeScript and Lua`, () => {
    test.each(vectors.decide.map((v) => [v.name, v] as const))('%s', async (_name, vector) => {
      const ts = algorithm.decide(vector.state, vector.nowMs, vector.params, vector.cost);
      expect(ts.decision).toEqual(vector.expected);
      expect(ts.next).toEqual(vector.next);

      const key = freshKey(name);
      await put(pair, key, vector.state);
      const before = await read(pair, key);
      expect(await luaDecide(pair, key, vector.nowMs, vector.params, vector.cost)).toEqual(vector.expected);
      const after = await read(pair, key);
      if (vector.next === null) {
        expect(after.raw).toBe(before.raw);
        expect(after.pttlMs).toBeLessThanOrEqual(before.pttlMs);
      } else {
        expect(after.raw).toBe(pair.format(vector.next));
        expectTtl(after.pttlMs, algorithm.expiresAtMs(vector.next, vector.params), vector.nowMs);
      }
    });

    test('EVAL of the text answers as EVALSHA does', async () => {
      const vector = vectors.decide[0] as DecideVector<S>;
      const key = freshKey(name);
      await put(pair, key, vector.state);
      expect(await luaDecide(pair, key, vector.nowMs, vector.params, vector.cost, 'EVAL')).toEqual(vector.expected);
    });

    test('a value the script did not write reads as the TypeScript parser reads it (junk: no state)', async () => {
      const key = freshKey(name);
      const params = { limit: 5, windowMs: 60_000 };
      for (const junk of ['', 'junk', '1:2:3:4', '-5:1', ',1:1', '1:1,,2:1', '2:1,1:1', '1:0']) {
        // Whatever the TypeScript reading of the value is (mostly null; "" is an empty log), Lua reads the same.
        const expected = algorithm.decide(pair.parse(junk), 1_700_000_000_123, params, 1).decision;
        await client.set(key, junk);
        expect(await luaDecide(pair, key, 1_700_000_000_123, params, 1)).toEqual(expected);
      }
    });
  });

  describe(`${name}: adjust vectors, TypeScript and Lua`, () => {
    test.each(vectors.adjust.map((v) => [v.name, v] as const))('%s', async (_name, vector) => {
      const ts = algorithm.adjust(vector.state, vector.nowMs, vector.params, vector.adjustment);
      expect(ts).toEqual(vector.next);

      const key = freshKey(name);
      await put(pair, key, vector.state);
      const before = await read(pair, key);
      const written = await luaAdjust(pair, key, vector.nowMs, vector.params, vector.adjustment.deltaUnits, vector.adjustment.atLeast);
      const after = await read(pair, key);
      expect(written).toBe(vector.next !== null);
      if (vector.next === null) {
        expect(after.raw).toBe(before.raw);
        expect(after.pttlMs).toBeLessThanOrEqual(before.pttlMs);
      } else {
        expect(after.state).toEqual(stored(pair, vector.next));
        if (after.raw !== null) expectTtl(after.pttlMs, algorithm.expiresAtMs(vector.next, vector.params), vector.nowMs);
      }
    });
  });

  test(`${name}: property: random interleavings of decide and adjust give identical decisions and state`, async () => {
    const paramsArb = fc.constantFrom<LimitParams>(
      { limit: 1, windowMs: 1000 },
      { limit: 3, windowMs: 1000 },
      { limit: 5, windowMs: 2500, burst: 2 },
      { limit: 7, windowMs: 60_000 },
      { limit: 4, windowMs: 7000, burst: 9 },
    );
    const opArb = fc.record({
      adjust: fc.boolean(),
      stepMs: fc.oneof(fc.integer({ min: -3000, max: 3000 }), fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 120_000 })),
      cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 10 })),
      deltaUnits: fc.integer({ min: -4, max: 4 }),
      atLeastAgo: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null }),
      /** Adjust: merge with another instance's view instead (its own walk), so merges do real work. */
      atLeastOther: fc.boolean(),
      otherCost: fc.integer({ min: 0, max: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(paramsArb, fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.array(opArb, { minLength: 1, maxLength: 25 }), async (params, startMs, ops) => {
        const key = freshKey(name);
        let state: S | null = null;
        let other: S | null = null;
        const past: (S | null)[] = [];
        let nowMs = startMs;
        for (const op of ops) {
          nowMs = Math.max(0, nowMs + op.stepMs);
          past.push(state);
          other = algorithm.decide(other, nowMs, params, op.otherCost).next ?? other;
          if (op.adjust) {
            const snapshot = op.atLeastAgo === null ? null : (past[Math.max(0, past.length - 1 - op.atLeastAgo)] ?? null);
            const atLeast = op.atLeastOther ? other : snapshot;
            const next = algorithm.adjust(state, nowMs, params, { atLeast, deltaUnits: op.deltaUnits });
            expect(await luaAdjust(pair, key, nowMs, params, op.deltaUnits, atLeast)).toBe(next !== null);
            if (next !== null) state = next;
          } else {
            const ts = algorithm.decide(state, nowMs, params, op.cost);
            expect(await luaDecide(pair, key, nowMs, params, op.cost)).toEqual(ts.decision);
            if (ts.next !== null) state = ts.next;
          }
          expect((await read(pair, key)).state).toEqual(stored(pair, state));
        }
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 60) },
    );
  });
}

for (const name of ALGORITHM_NAMES) {
  // Each pair is typed by its own name; the suite needs only Pair<S> for some S.
  suite<unknown>(name, PAIRS[name] as Pair<unknown>, ALGORITHM_VECTORS[name] as { decide: readonly DecideVector<unknown>[]; adjust: readonly AdjustVector<unknown>[] });
}
