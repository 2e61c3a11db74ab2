import os from 'node:os';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { createClient } from 'redis';
import { createRateLimiter } from '../src/library/limiter/create-rate-limiter';
import type { PolicySet, RateLimitPolicy } from '../src/library/window/policy';
import type { RateLimiter } from '../src/library/limiter/rate-limiter';
import { RedisWindowStore } from '../src/library/backends/redis/redis-store';
import { startRedisServer } from '../test/support/redis-server';
import { median, microseconds, percentile, printTable, timeCalls, type BenchTable } from './bench-table';
import { runScriptTime } from './redis-script-time';

/**
 * Latency of one Redis-backed decision, as a ratio to a bare PING on the same
 * client library, server and run: the ratio is what carries across machines,
 * the microseconds are not. Candidates run in interleaved, rotated blocks so
 * that drift (CPU frequency, GC, the other core's load) hits every row alike.
 */

const KEY_COUNT = 1_000;
const ROUNDS = 20;
const CALLS_PER_ROUND = 1_000; // ROUNDS x CALLS_PER_ROUND = 20,000 decisions per candidate
const WARMUP_CALLS = 2_000;
const WINDOW_MS = 60_000;

/** High enough that every decision is allowed: we time the common path, not refusals. */
const POLICY: RateLimitPolicy = { name: 'bench', limit: 1_000_000_000, windowMs: WINDOW_MS };
/** The same policy as the one-policy set the stores take. */
const POLICIES: PolicySet = [POLICY];

interface Candidate {
  readonly name: string;
  readonly call: (key: string) => Promise<unknown>;
  /** The PING row this candidate's ratio is taken against. */
  readonly baseline: string;
  /** Rows shown for diagnosis only, not part of the comparison the issue asks for. */
  readonly diagnostic?: boolean;
}

const BARE_PING = 'PING (bare node-redis client)';
const STORE_PING = "PING (RedisWindowStore's own connection)";

export async function runRedisBench(): Promise<BenchTable[]> {
  const server = await startRedisServer();
  const client = createClient({ url: server.url, disableOfflineQueue: true });
  let store: RedisWindowStore | undefined;
  let limiter: RateLimiter | undefined;
  try {
    await client.connect();
    store = new RedisWindowStore({ url: server.url, keyPrefix: 'bench-fl:' });
    if (!(await store.whenReady(5000))) throw new Error('bench: RedisWindowStore did not connect');
    // A short probe interval so the connect-time outage (its first calls beat the connection) ends at once.
    limiter = await createRateLimiter({ store: new RedisWindowStore({ url: server.url, keyPrefix: 'bench-rl:' }), policy: POLICY, probeIntervalMs: 50 });
    const rlr = new RateLimitRedisStore({
      sendCommand: (...args: string[]) => client.sendCommand(args) as Promise<never>,
      prefix: 'bench-rlr:',
    });
    await rlr.init({ windowMs: WINDOW_MS } as Parameters<RateLimitRedisStore['init']>[0]);
    // rate-limiter-flexible speaks node-redis v4+ when told so (useRedisPackage); it sends a full EVAL each call.
    const rlf = new RateLimiterRedis({ storeClient: client, useRedisPackage: true, keyPrefix: 'bench-rlf', points: POLICY.limit, duration: WINDOW_MS / 1000 });

    const s = store;
    const l = limiter;
    const candidates: Candidate[] = [
      { name: BARE_PING, call: () => client.sendCommand(['PING']), baseline: BARE_PING },
      // Same connection and same deadline wrapper as consume: the like-for-like baseline for our rows.
      { name: STORE_PING, call: () => s.ping(), baseline: STORE_PING },
      { name: 'RedisWindowStore.consume (EVALSHA)', call: (k) => s.consume(k, Date.now(), POLICIES, 1), baseline: STORE_PING },
      { name: 'createRateLimiter(redis).consume', call: (k) => l.consume(k), baseline: STORE_PING },
      { name: 'rate-limit-redis RedisStore.increment', call: (k) => rlr.increment(k), baseline: BARE_PING },
      { name: 'rate-limiter-flexible RateLimiterRedis.consume', call: (k) => rlf.consume(k), baseline: BARE_PING },
    ];

    // The limiter must be on the shared path, or we would be timing its local window.
    const deadlineMs = Date.now() + 5000;
    while (!(await l.consume('bench-probe')).shared) {
      if (Date.now() > deadlineMs) throw new Error('bench: createRateLimiter(redis) still answers locally; Redis not reachable');
      await new Promise((r) => setTimeout(r, 20));
    }

    const keys = Array.from({ length: KEY_COUNT }, (_, i) => `tok_${i.toString(36).padStart(6, '0')}`);
    const samples = new Map<string, number[]>(candidates.map((c) => [c.name, []]));
    for (const candidate of candidates) await timeCalls(candidate.call, keys, 0, WARMUP_CALLS, null);
    for (let round = 0; round < ROUNDS; round++) {
      for (let j = 0; j < candidates.length; j++) {
        const candidate = candidates[(round + j) % candidates.length] as Candidate;
        await timeCalls(candidate.call, keys, round * CALLS_PER_ROUND, CALLS_PER_ROUND, samples.get(candidate.name) ?? null);
      }
    }

    const stats = new Map(
      candidates.map((c) => {
        const sorted = [...(samples.get(c.name) ?? [])].sort((a, b) => a - b);
        return [c.name, { c, p50: median(sorted), p99: percentile(sorted, 99), n: sorted.length }] as const;
      }),
    );
    const info = (await client.sendCommand(['INFO', 'server'])) as string;
    const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';

    const scriptTime = await runScriptTime(client, keys, POLICIES);

    const latency: BenchTable = {
      title: `Redis decision latency (${ROUNDS} rounds x ${CALLS_PER_ROUND} sequential calls over ${KEY_COUNT} keys, interleaved)`,
      columns: ['implementation', 'p50 µs', 'p99 µs', 'x PING (p50)', 'x PING (p99)', 'x bare PING (p50)', 'samples'],
      rows: [...stats.values()].map((st) => {
        const base = stats.get(st.c.baseline);
        return [
          st.c.diagnostic === true ? `(${st.c.name})` : st.c.name,
          microseconds(st.p50),
          microseconds(st.p99),
          st.p50 / (base?.p50 ?? Number.NaN),
          st.p99 / (base?.p99 ?? Number.NaN),
          st.p50 / (stats.get(BARE_PING)?.p50 ?? Number.NaN),
          st.n,
        ];
      }),
      notes: [
        'per-call wall time from process.hrtime.bigint around each awaited call; one connection per row group, loopback, no pipelining',
        "'x PING' is against the PING on the row's own client: the bare client for rate-limit-redis and rate-limiter-flexible (they share it), the store's connection for the firelimit rows",
        `redis-server ${redisVersion} on 127.0.0.1, node ${process.version}, node-redis (redis) client, ${os.cpus()[0]?.model ?? 'unknown cpu'}`,
        'issue author, loopback: PING 71 µs; rate-limit-redis 1.24x PING; rate-limiter-flexible 1.39-1.43x. Target: RedisWindowStore.consume <= 1.15x PING (p50)',
      ],
    };
    return [latency, scriptTime];
  } finally {
    await limiter?.close();
    await store?.close();
    client.destroy();
    await server.close();
  }
}

if (require.main === module) {
  runRedisBench().then((tables) => tables.forEach(printTable), (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
