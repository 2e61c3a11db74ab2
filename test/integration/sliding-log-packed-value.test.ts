import { createClient } from 'redis';
import { slidingLog, type SlidingLogState } from '../../src/library/window/algorithms';
import { stateSlotOf, type PolicySet, type RateLimitPolicy } from '../../src/library/window/policy';
import { formatSlidingLogValue, parseSlidingLogValue, SLIDING_LOG_TWIN } from '../../src/library/backends/redis/lua/sliding-log';
import { decideArgs, decisionFromReply } from '../../src/library/backends/redis/lua/twin-protocol';
import { RedisWindowStore } from '../../src/library/backends/redis/redis-store';
import { startRedisServer, type RedisServer } from '../support/redis-server';

// The sliding log's packed value (issue 22), on a real redis-server: the Lua twin alone and the
// store's set script read what older releases wrote, refuse the same junk the TypeScript parser
// refuses, and write the value formatSlidingLogValue writes. algorithm-lua-twins.test.ts holds
// the twin to the vectors; this holds the encoding.

const PREFIX = 'packed:';
const POLICY: RateLimitPolicy = { name: 'log', algorithm: 'sliding-log', limit: 1_000, windowMs: 60_000 };
const POLICIES: PolicySet = [POLICY];
const NOW_MS = 1_764_000_000_000;

let server: RedisServer;
let client: ReturnType<typeof createClient>;
let store: RedisWindowStore;
let keySeq = 0;

beforeAll(async () => {
  server = await startRedisServer();
  client = createClient({ url: server.url });
  await client.connect();
  store = new RedisWindowStore({ url: server.url, keyPrefix: PREFIX });
  expect(await store.whenReady(5000)).toBe(true);
});

afterAll(async () => {
  await store?.close();
  client?.destroy();
  await server?.close();
});

/** A fresh limited key, and the Redis key the store keeps its log under. */
function freshKey(): { key: string; redisKey: string } {
  keySeq += 1;
  const key = `k${keySeq}`;
  return { key, redisKey: `${PREFIX}${key}:${stateSlotOf(POLICY)}` };
}

async function twinDecide(redisKey: string, nowMs: number, cost: number) {
  const reply = await client.sendCommand(['EVAL', SLIDING_LOG_TWIN.script, '1', redisKey, ...decideArgs(nowMs, POLICY, cost)]);
  return decisionFromReply(reply, POLICY.limit);
}

const OLD_FORM: readonly [string, SlidingLogState][] = [
  ['one entry', { entries: [[NOW_MS - 5_000, 1]] }],
  ['entries of several units, one already out of the window', { entries: [[NOW_MS - 70_000, 4], [NOW_MS - 5_000, 2], [NOW_MS - 10, 3]] }],
];

describe.each([
  ['the Lua twin alone', 'twin'],
  ['the store (set script)', 'store'],
] as const)('%s', (_name, via) => {
  const decide = async (key: string, redisKey: string, nowMs: number, cost: number) =>
    via === 'twin' ? twinDecide(redisKey, nowMs, cost) : (await store.consume(key, nowMs, POLICIES, cost)).decisions[0];

  test.each(OLD_FORM)('a value in the unpacked form of older releases keeps its count: %s', async (_case, state) => {
    const { key, redisKey } = freshKey();
    await client.set(redisKey, state.entries.map(([t, u]) => `${t}:${u}`).join(','), { PX: 600_000 });
    const expected = slidingLog.decide(state, NOW_MS, POLICY, 1);
    expect(await decide(key, redisKey, NOW_MS, 1)).toEqual(expected.decision);
    const written = (await client.get(redisKey)) as string;
    expect(written.startsWith('~')).toBe(true);
    expect(written).toBe(formatSlidingLogValue(expected.next as SlidingLogState));
    expect(parseSlidingLogValue(written)).toEqual(expected.next);
  });

  test('a full log of 1,000 is written packed, and its 1,001st call is refused until the oldest leaves', async () => {
    const { key, redisKey } = freshKey();
    let state: SlidingLogState | null = null;
    for (let i = 0; i < 1_000; i++) {
      const nowMs = NOW_MS + i * 60;
      const expected = slidingLog.decide(state, nowMs, POLICY, 1);
      expect(await decide(key, redisKey, nowMs, 1)).toEqual(expected.decision);
      state = expected.next;
    }
    expect(parseSlidingLogValue((await client.get(redisKey)) as string)).toEqual(state);
    const refused = await decide(key, redisKey, NOW_MS + 60_000 - 1, 1);
    expect(refused).toEqual(slidingLog.decide(state, NOW_MS + 60_000 - 1, POLICY, 1).decision);
    expect(refused?.allowed).toBe(false);
  });

  test.each(['~', '~1,0', '~5,,1', '~,5', '~5,', '~5:0', '~5:', '~x', '9500', '~9007199254740991,1'])('junk %j reads as the TypeScript parser reads it (no log)', async (junk) => {
    const { key, redisKey } = freshKey();
    await client.set(redisKey, junk, { PX: 600_000 });
    expect(parseSlidingLogValue(junk)).toBeNull();
    expect(await decide(key, redisKey, NOW_MS, 1)).toEqual(slidingLog.decide(null, NOW_MS, POLICY, 1).decision);
  });
});
