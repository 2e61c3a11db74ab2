import { createClient } from 'redis';
import { RedisWindowStore } from '../src/library/backends/redis/redis-store';
import { RedisUpstreamQuotaStore } from '../src/library/backends/redis/upstream-redis-store';
import type { UpstreamCaller } from '../src/library/schedule/upstream-holder';
import type { UpstreamPolicy } from '../src/library/schedule/upstream-policy';
import type { UpstreamOutcome } from '../src/library/schedule/upstream-schedule';
import { startRedisServer } from '../test/support/redis-server';
import { median, type BenchTable } from './bench-table';

/**
 * Part of `npm run bench -- upstream-hot-key`: the Redis upstream script's
 * own time per call (INFO commandstats, so no round trip in it) with 0 to
 * 1,000 reservations held on the key (issue 18 item 5: the script used to
 * parse and rewrite them all on every call).
 *
 * Time is injected; the key holds `held` reservations of distinct tokens,
 * 200 ms apart (10 a second, headroom 1, 100 ms grace), and each step keeps
 * that number: at the front slot its token claims it echoing the id (a
 * write), a new token queues at the end (a write), and the next token asks
 * again without its id (token_reservations_full, its share being 1: no
 * write). With nothing held, the same three calls on one token: it queues
 * on the empty queue, asks again early without its id, and claims its slot,
 * which leaves nothing held again. Levels are interleaved over ROUNDS rounds;
 * a cell is the median round.
 */

const HELD = [0, 1, 10, 100, 1000];
const ROUNDS = 7;
const STEPS = 200;
const POLICY: UpstreamPolicy = { limit: 10, windowMs: 1000, headroomBp: 10_000, maxWaitMs: 400_000, dailyBudget: 0, graceMs: 100, maxReservations: 1000, maxReservationsPerHolder: 1 };

interface Level {
  readonly held: number;
  readonly key: string;
  /** The tokens holding the queue, front first, with their slots. */
  readonly queue: { caller: UpstreamCaller; slotAtMs: number }[];
  /** For held 0: when the next step's token queues (the last claim's slot). */
  nextRunAtMs: number;
  readonly usecPerCall: number[];
  calls: number;
}

let tokenSeq = 0;
const newCaller = (): UpstreamCaller => ({ tokenId: `tok_bench_${String(++tokenSeq).padStart(10, '0')}`, tool: 'search' });

function expectOutcome(outcome: UpstreamOutcome, status: UpstreamOutcome['status'], what: string): UpstreamOutcome {
  if (outcome.status !== status) throw new Error(`bench: ${what} was ${JSON.stringify(outcome)}, expected ${status}`);
  return outcome;
}

async function fill(store: RedisUpstreamQuotaStore, level: Level, atMs: number): Promise<void> {
  expectOutcome((await store.schedule(level.key, atMs, newCaller(), POLICY)).outcome, 'run', 'the first call on an empty key');
  level.nextRunAtMs = atMs;
  for (let i = 0; i < level.held; i++) {
    const caller = newCaller();
    const outcome = expectOutcome((await store.schedule(level.key, atMs, caller, POLICY)).outcome, 'reserved', 'a queueing call');
    level.queue.push({ caller, slotAtMs: (outcome as { slotAtMs: number }).slotAtMs });
  }
}

async function step(store: RedisUpstreamQuotaStore, level: Level): Promise<number> {
  if (level.held === 0) {
    // Nothing held between steps: a token queues, asks again early without its id, then claims its slot.
    const nowMs = level.nextRunAtMs;
    const caller = newCaller();
    const queued = expectOutcome((await store.schedule(level.key, nowMs, caller, POLICY)).outcome, 'reserved', 'a new token queueing on an empty queue');
    const slotAtMs = (queued as { slotAtMs: number }).slotAtMs;
    expectOutcome((await store.schedule(level.key, nowMs, caller, POLICY)).outcome, 'rejected', 'the token asking early without its id');
    expectOutcome((await store.schedule(level.key, slotAtMs, { ...caller, claimSlotAtMs: slotAtMs }, POLICY)).outcome, 'run', 'the token claiming its slot');
    level.nextRunAtMs = slotAtMs;
    return 3;
  }
  const front = level.queue.shift() as { caller: UpstreamCaller; slotAtMs: number };
  const nowMs = front.slotAtMs;
  expectOutcome((await store.schedule(level.key, nowMs, { ...front.caller, claimSlotAtMs: front.slotAtMs }, POLICY)).outcome, 'run', 'the front claiming its slot');
  const caller = newCaller();
  const queued = expectOutcome((await store.schedule(level.key, nowMs, caller, POLICY)).outcome, 'reserved', 'a new token queueing at the end');
  level.queue.push({ caller, slotAtMs: (queued as { slotAtMs: number }).slotAtMs });
  const next = level.queue[0] as { caller: UpstreamCaller };
  expectOutcome((await store.schedule(level.key, nowMs, next.caller, POLICY)).outcome, 'rejected', 'the next token asking early without its id');
  return 3;
}

export async function measureUpstreamRedisHeld(): Promise<BenchTable> {
  const server = await startRedisServer();
  const client = createClient({ url: server.url });
  const redis = new RedisWindowStore({ url: server.url, keyPrefix: 'bench:' });
  const store = new RedisUpstreamQuotaStore({ redis, ttlMarginMs: 3_600_000 });
  try {
    await client.connect();
    if (!(await redis.whenReady(10_000))) throw new Error('bench: redis store did not become ready');
    const atMs = Date.now();
    const levels: Level[] = HELD.map((held) => ({ held, key: `held${held}`, queue: [], nextRunAtMs: 0, usecPerCall: [], calls: 0 }));
    for (const level of levels) await fill(store, level, atMs);
    for (let round = 0; round < ROUNDS; round++) {
      for (const level of levels) {
        await client.sendCommand(['CONFIG', 'RESETSTAT']);
        let calls = 0;
        for (let i = 0; i < STEPS; i++) calls += await step(store, level);
        const info = String(await client.sendCommand(['INFO', 'commandstats']));
        const match = /cmdstat_evalsha:calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/.exec(info);
        if (match === null || Number(match[1]) !== calls) throw new Error(`bench: INFO commandstats counted ${match?.[1]} EVALSHA, expected ${calls}`);
        level.usecPerCall.push(Number(match[2]));
        level.calls += calls;
      }
    }
    const usec = levels.map((level) => median(level.usecPerCall));
    const [none, one] = usec as [number, number];
    return {
      title: `Redis upstream script, server time per call by reservations held (INFO commandstats; ${ROUNDS} rounds of ${STEPS} steps per level, median round)`,
      columns: ['reservations held', 'calls', 'µs per EVALSHA', '× none', '× one held'],
      rows: levels.map((level, i) => [level.held, level.calls, usec[i] as number, (usec[i] as number) / none, (usec[i] as number) / one]),
      notes: [`every round's µs per EVALSHA: ${levels.map((level) => `${level.held} held: ${level.usecPerCall.map((u) => u.toFixed(1)).join(' / ')}`).join('; ')}`],
    };
  } finally {
    await store.close();
    await redis.close();
    client.destroy();
    await server.close();
  }
}
