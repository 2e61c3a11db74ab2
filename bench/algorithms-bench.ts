import path from 'node:path';
import type { App } from 'firebase-admin/app';
import { getDatabase, type Database } from 'firebase-admin/database';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { createClient } from 'redis';
import { ALGORITHM_NAMES, type AlgorithmName } from '../src/library/window/algorithms';
import { windowNumberAt } from '../src/library/window/fixed-window';
import { createRateLimiter } from '../src/library/limiter/create-rate-limiter';
import type { PolicySet } from '../src/library/window/policy';
import type { LimitStore } from '../src/library/limiter/limit-store';
import type { RateLimiter } from '../src/library/limiter/rate-limiter';
import { RedisWindowStore } from '../src/library/backends/redis/redis-store';
import { RtdbWindowStore } from '../src/library/backends/rtdb/rtdb-store';
import { startRedisServer } from '../test/support/redis-server';
import { startRtdbTestServer, type RtdbTestServer } from '../test/support/rtdb-server';
import { createAdminApp, deleteAdminApp } from '../test/support/rtdb-server/admin-app';
import { benchKeys, benchPolicy, MEMORY_CANDIDATES, WINDOW_MS, type BlockRequest } from './algorithms-memory';
import { startBenchChild, type BenchChild } from './bench-child';
import { median, printTable, type BenchTable } from './bench-table';
import { startDelayProxy } from './delay-proxy';

/**
 * Every algorithm on every store, beside the peers that offer it and the
 * store's own floor, measured in one run: `npm run bench -- algorithms`.
 *
 * - memory: express-rate-limit's MemoryStore.increment is the reference
 *   (each candidate in its own process, see algorithms-memory.ts);
 * - redis: a PING on the connection the decision uses;
 * - rtdb: a bare set() of the same node through the same 1 ms-each-way
 *   delay, beside firebase's own transaction (the floor of any transaction).
 *
 * Within a store the candidates run in interleaved rounds, rotated so none
 * always follows another, after a warm-up; a row is the median over rounds
 * of each round's figure (memory: mean µs per call of a block; redis, rtdb:
 * the median latency of the round's calls, made call by call in turn across
 * the candidates), so a burst of load from the machine's other jobs moves
 * one round, not the result. Decisions are sequential: latency,
 * not throughput under concurrency.
 *
 * `npx tsx bench/algorithms-bench.ts memory` (or redis, rtdb) runs one store's rows.
 */

const MEMORY = { keys: 1000, warmupCalls: 50_000, rounds: 21, callsPerBlock: 10_000 };
/**
 * How the memory children load our TypeScript: by default TypeScript's own
 * CommonJS emit, the code `npm start` runs (bench/typescript-emit.cjs);
 * BENCH_LOADER=tsx loads it as the other benches do (tsx's esbuild emit, which
 * reads every imported binding through getters). The peers are JavaScript
 * packages, loaded alike either way.
 */
const MEMORY_LOADER: 'typescript' | 'tsx' = process.env.BENCH_LOADER === 'tsx' ? 'tsx' : 'typescript';
const REDIS = { keys: 1000, warmupCalls: 1000, rounds: 15, callsPerBlock: 400 };
const RTDB = { keys: 16, warmupCalls: 48, rounds: 21, callsPerBlock: 30, delayMs: 1 };

/** Issue targets: ratio to the store's baseline, at most. */
const TARGET = { memory: 1, redis: 1.2, rtdb: 1.1 } as const;

type StoreName = 'memory' | 'redis' | 'rtdb';

interface Candidate {
  readonly store: StoreName;
  readonly algorithm: AlgorithmName | null;
  readonly label: string;
  /** The candidate this one's ratio is taken against (itself for a baseline). */
  baseline?: Candidate;
  /** The most this row may be, as a ratio to its baseline; undefined: none. */
  readonly target?: number;
  /** Memory: runs one round's block; resolves with its figure in µs per decision. */
  readonly block?: (round: number) => Promise<number>;
  /** Redis, rtdb: one decision (call number i), timed by interleaveCalls. */
  readonly call?: (i: number) => Promise<unknown>;
}

interface Measured {
  readonly candidate: Candidate;
  /** µs per decision, one per round. */
  readonly rounds: readonly number[];
}

async function interleave(candidates: readonly Candidate[], rounds: number): Promise<Measured[]> {
  const samples = new Map<Candidate, number[]>(candidates.map((c) => [c, []]));
  for (let round = 0; round < rounds; round++) {
    for (let j = 0; j < candidates.length; j++) {
      const candidate = candidates[(round + j) % candidates.length] as Candidate;
      samples.get(candidate)?.push(await (candidate.block as (round: number) => Promise<number>)(round));
    }
  }
  return candidates.map((candidate) => ({ candidate, rounds: samples.get(candidate) ?? [] }));
}

/**
 * Latency rows: each round makes `calls` decisions per candidate, call by call
 * in turn (A B C, then B C A, ...), so every candidate meets the same moments
 * of the machine's other load, which on a shared two-core box moves latency by
 * more than the differences measured. A round's figure per candidate is the
 * median of its calls in that round, in µs.
 */
async function interleaveCalls(candidates: readonly Candidate[], rounds: number, calls: number): Promise<Measured[]> {
  const samples = new Map<Candidate, number[]>(candidates.map((c) => [c, []]));
  for (let round = 0; round < rounds; round++) {
    const latencies = candidates.map((): number[] => []);
    for (let i = 0; i < calls; i++) {
      for (let j = 0; j < candidates.length; j++) {
        const index = (round + i + j) % candidates.length;
        const call = (candidates[index] as Candidate).call as (i: number) => Promise<unknown>;
        const started = process.hrtime.bigint();
        await call(round * calls + i);
        (latencies[index] as number[]).push(Number(process.hrtime.bigint() - started) / 1000);
      }
    }
    candidates.forEach((candidate, index) => samples.get(candidate)?.push(median(latencies[index] as number[])));
  }
  return candidates.map((candidate) => ({ candidate, rounds: samples.get(candidate) ?? [] }));
}

/** Connection, JIT and (on RTDB) every key's listener and node warm before anything counts. */
async function warmUp(candidates: readonly Candidate[], calls: number): Promise<void> {
  for (const candidate of candidates) {
    const call = candidate.call as (i: number) => Promise<unknown>;
    for (let i = 0; i < calls; i++) await call(i);
  }
}

/** An algorithm's two rows on a shared store: the store's own consume, and createRateLimiter's on a store of that kind. */
function storeAndLimiterRows(
  row: { readonly store: 'redis' | 'rtdb'; readonly algorithm: AlgorithmName; readonly storeLabel: string; readonly baseline: Candidate },
  store: LimitStore,
  limiter: RateLimiter,
  key: (i: number) => string,
): Candidate[] {
  const policies: PolicySet = [benchPolicy(row.algorithm)];
  const common = { store: row.store, algorithm: row.algorithm, baseline: row.baseline, target: TARGET[row.store] };
  return [
    { ...common, label: row.storeLabel, call: (i) => store.consume(key(i), Date.now(), policies, 1) },
    { ...common, label: `createRateLimiter({ backend: '${row.store}' }).consume`, call: (i) => limiter.consume(key(i)) },
  ];
}

// ---------------------------------------------------------------- memory

async function measureMemory(): Promise<Measured[]> {
  const file = path.join(__dirname, 'algorithms-memory.ts');
  const args = (id: string) => ['--candidate', id, String(MEMORY.keys), String(MEMORY.warmupCalls)];
  const children: BenchChild<unknown>[] = [];
  try {
    // Started together (each warms up on its own), timed one at a time.
    const started = await Promise.all(MEMORY_CANDIDATES.map((c) => startBenchChild(file, args(c.id), { name: `memory candidate ${c.id}`, loader: MEMORY_LOADER })));
    children.push(...started);
    const candidates: Candidate[] = MEMORY_CANDIDATES.map((c, i) => {
      const child = started[i] as BenchChild<unknown>;
      const request: BlockRequest = { offset: 0, calls: MEMORY.callsPerBlock };
      return {
        store: 'memory',
        algorithm: c.algorithm,
        label: c.label,
        target: c.ours && c.algorithm === 'fixed-window' ? TARGET.memory : undefined,
        block: async (round) => {
          const { nsPerCall } = await child.request<{ nsPerCall: number }>({ ...request, offset: round * MEMORY.callsPerBlock });
          return nsPerCall / 1000;
        },
      };
    });
    const reference = candidates[0] as Candidate;
    for (const c of candidates) c.baseline = reference;
    return await interleave(candidates, MEMORY.rounds);
  } finally {
    await Promise.all(children.map((child) => child.stop()));
  }
}

// ---------------------------------------------------------------- redis

async function measureRedis(): Promise<Measured[]> {
  const server = await startRedisServer();
  const client = createClient({ url: server.url, disableOfflineQueue: true });
  const store = new RedisWindowStore({ url: server.url, keyPrefix: 'bench-alg:' });
  const limiters: RateLimiter[] = [];
  try {
    await client.connect();
    if (!(await store.whenReady(5000))) throw new Error('bench: RedisWindowStore did not connect');
    const keys = benchKeys(REDIS.keys);
    const key = (i: number) => keys[i % keys.length] as string;

    const barePing: Candidate = { store: 'redis', algorithm: null, label: 'PING (bare node-redis client)', call: () => client.sendCommand(['PING']) };
    const storePing: Candidate = { store: 'redis', algorithm: null, label: "PING (RedisWindowStore's connection)", call: () => store.ping() };
    barePing.baseline = barePing;
    storePing.baseline = storePing;
    const candidates: Candidate[] = [barePing, storePing];

    for (const algorithm of ALGORITHM_NAMES) {
      const limiter = await createRateLimiter({ store: new RedisWindowStore({ url: server.url, keyPrefix: `bench-rl-${algorithm}:` }), policy: benchPolicy(algorithm) });
      limiters.push(limiter);
      if (!(await limiter.whenReady(5000))) throw new Error(`bench: createRateLimiter(redis, ${algorithm}) did not connect`);
      // The limiter has its own connection; its PING there costs what the store's does (same server, same client options).
      candidates.push(...storeAndLimiterRows({ store: 'redis', algorithm, storeLabel: 'RedisWindowStore.consume (one EVALSHA)', baseline: storePing }, store, limiter, key));
    }
    // rate-limiter-flexible speaks node-redis v4+ when told so (useRedisPackage); fixed window only.
    const rlf = new RateLimiterRedis({ storeClient: client, useRedisPackage: true, keyPrefix: 'bench-rlf', points: 1_000_000_000, duration: WINDOW_MS / 1000 });
    candidates.push({ store: 'redis', algorithm: 'fixed-window', label: 'rate-limiter-flexible RateLimiterRedis.consume', baseline: barePing, call: (i) => rlf.consume(key(i)) });

    await warmUp(candidates, REDIS.warmupCalls);
    for (const limiter of limiters) {
      if (!(await limiter.consume('bench-probe')).shared) throw new Error('bench: createRateLimiter(redis) answered locally; Redis not reachable');
    }
    const measured = await interleaveCalls(candidates, REDIS.rounds, REDIS.callsPerBlock);
    // Apart from the round trip: what each command costs inside Redis, the part no client change can remove.
    const serverTimes = [`PING ${(await serverUsecPerCall(client, 'ping', () => store.ping())).toFixed(1)}`];
    for (const algorithm of ALGORITHM_NAMES) {
      const policies: PolicySet = [benchPolicy(algorithm)];
      const usec = await serverUsecPerCall(client, 'evalsha', (i) => store.consume(key(i), Date.now(), policies, 1));
      serverTimes.push(`${algorithm} EVALSHA ${usec.toFixed(1)}`);
    }
    redisServerNote = `redis: server time per command (INFO commandstats usec_per_call, ${SERVER_STAT_CALLS} calls each after the rounds): ${serverTimes.join(', ')} µs`;
    return measured;
  } finally {
    await Promise.all(limiters.map((limiter) => limiter.close()));
    await store.close();
    client.destroy();
    await server.close();
  }
}

const SERVER_STAT_CALLS = 1000;
let redisServerNote: string | undefined;

/** Redis's own µs per `command` over SERVER_STAT_CALLS calls of `run`, from INFO commandstats (reset first). */
async function serverUsecPerCall(client: { sendCommand(args: string[]): Promise<unknown> }, command: string, run: (i: number) => Promise<unknown>): Promise<number> {
  await client.sendCommand(['CONFIG', 'RESETSTAT']);
  for (let i = 0; i < SERVER_STAT_CALLS; i++) await run(i);
  const info = String(await client.sendCommand(['INFO', 'commandstats']));
  const match = new RegExp(`cmdstat_${command}:calls=\\d+,usec=\\d+,usec_per_call=([\\d.]+)`).exec(info);
  return match === null ? Number.NaN : Number(match[1]);
}

// ---------------------------------------------------------------- rtdb

async function measureRtdb(): Promise<Measured[]> {
  const server = await startRtdbTestServer();
  const proxy = await startDelayProxy(server.port, RTDB.delayMs);
  // The same server through the proxy; createAdminApp only reads host and databaseUrl.
  const proxied = { ...server, host: `127.0.0.1:${proxy.port}`, databaseUrl: `http://127.0.0.1:${proxy.port}?ns=${server.namespace}` } as RtdbTestServer;
  let app: App | undefined;
  const closers: (() => Promise<void>)[] = [];
  try {
    app = createAdminApp(proxied);
    const database: Database = getDatabase(app);
    const keys = benchKeys(RTDB.keys);
    const key = (i: number) => keys[i % keys.length] as string;

    // The node the default fixed window writes, { [windowNumber]: count, e: windowEndMs }: the same bytes on the wire.
    const windowNode = (count: number) => {
      const windowNumber = windowNumberAt(Date.now(), WINDOW_MS);
      return { [String(windowNumber)]: count, e: (windowNumber + 1) * WINDOW_MS };
    };
    let sets = 0;
    const setCall = (i: number) => database.ref(`bench/set/${key(i)}`).set(windowNode(++sets));
    const set: Candidate = { store: 'rtdb', algorithm: null, label: `set() of a fixed-window node (+${RTDB.delayMs} ms each way)`, call: setCall };
    set.baseline = set;
    // The floor under any transaction-based store: firebase's own transaction on a listened node, nothing of ours around it.
    for (const k of keys) database.ref(`bench/bare/${k}`).on('value', () => undefined);
    closers.push(async () => {
      for (const k of keys) database.ref(`bench/bare/${k}`).off('value');
    });
    const bareCall = (i: number) =>
      database.ref(`bench/bare/${key(i)}`).transaction((current: Record<string, number> | null) => windowNode((current?.[String(windowNumberAt(Date.now(), WINDOW_MS))] ?? 0) + 1), undefined, false);
    const bare: Candidate = { store: 'rtdb', algorithm: null, label: 'firebase transaction on a listened node (no decision; the floor)', baseline: set, call: bareCall };
    const candidates: Candidate[] = [set, bare];
    const limiters: RateLimiter[] = [];

    for (const algorithm of ALGORITHM_NAMES) {
      const store = new RtdbWindowStore({ database, rootPath: `bench/store/${algorithm}`, sweepIntervalMs: 0 });
      const limiter = await createRateLimiter({ store: new RtdbWindowStore({ database, rootPath: `bench/limiter/${algorithm}`, sweepIntervalMs: 0 }), policy: benchPolicy(algorithm) });
      closers.push(() => store.close(), () => limiter.close());
      limiters.push(limiter);
      candidates.push(...storeAndLimiterRows({ store: 'rtdb', algorithm, storeLabel: 'RtdbWindowStore.consume (one transaction)', baseline: set }, store, limiter, key));
    }
    await warmUp(candidates, RTDB.warmupCalls);
    for (const limiter of limiters) {
      if (!(await limiter.consume(key(0))).shared) throw new Error('bench: createRateLimiter(rtdb) answered locally');
    }
    return await interleaveCalls(candidates, RTDB.rounds, RTDB.callsPerBlock);
  } finally {
    // The server's child process is unref'd: keep the loop alive until it has exited, or the table is never printed.
    const keepAlive = setInterval(() => undefined, 1000);
    try {
      for (const close of closers) await close();
      if (app !== undefined) await deleteAdminApp(app);
      await proxy.close();
      await server.close();
    } finally {
      clearInterval(keepAlive);
    }
  }
}

// ---------------------------------------------------------------- table

function rowsOf(measured: readonly Measured[]): (string | number)[][] {
  const byCandidate = new Map(measured.map((m) => [m.candidate, m]));
  return measured.map(({ candidate, rounds }) => {
    const us = median([...rounds]);
    const base = byCandidate.get(candidate.baseline ?? candidate) as Measured;
    const isBaseline = base.candidate === candidate;
    const ratio = us / median([...base.rounds]);
    // Per round against the baseline's same round: how far noise moves the ratio.
    const perRound = rounds.map((value, i) => value / (base.rounds[i] as number)).sort((a, b) => a - b);
    const spread = `${(perRound[0] as number).toFixed(2)}-${(perRound[perRound.length - 1] as number).toFixed(2)}`;
    const target = candidate.target === undefined ? '' : `<= ${candidate.target}x: ${ratio <= candidate.target ? 'met' : 'MISSED'}`;
    return [
      candidate.store,
      candidate.algorithm ?? '-',
      isBaseline ? `${candidate.label} [baseline]` : candidate.label,
      us,
      Math.round(1e6 / us),
      isBaseline ? '1' : `${ratio.toFixed(2)}x`,
      isBaseline ? '' : spread,
      target,
    ];
  });
}

const MEASURE: Readonly<Record<StoreName, () => Promise<Measured[]>>> = { memory: measureMemory, redis: measureRedis, rtdb: measureRtdb };

export async function runAlgorithmsBench(stores: readonly StoreName[] = ['memory', 'redis', 'rtdb']): Promise<BenchTable> {
  const started = Date.now();
  const rows: (string | number)[][] = [];
  for (const store of stores) rows.push(...rowsOf(await MEASURE[store]()));
  return {
    title: 'Every algorithm on every store, beside its peers (sequential decisions, interleaved rounds, medians)',
    columns: ['store', 'algorithm', 'implementation', 'µs/decision', 'decisions/s', 'x baseline', 'per-round x', 'target'],
    rows,
    notes: [
      `memory: ${MEMORY.rounds} rounds x ${MEMORY.callsPerBlock} calls over ${MEMORY.keys} keys per candidate, each in its own process (our code loaded by ${MEMORY_LOADER === 'tsx' ? 'tsx' : "TypeScript's own CommonJS emit, as npm start runs it"}), after ${MEMORY.warmupCalls} warm-up calls; a round's figure is the block's mean CPU time per call (the process's, await and GC included; CPU so that another job preempting a block is not charged to it); baseline express-rate-limit MemoryStore.increment for every row`,
      `redis: ${REDIS.rounds} rounds x ${REDIS.callsPerBlock} calls over ${REDIS.keys} keys, real redis-server on loopback; candidates called in turn call by call, a round's figure is the median latency of its calls; baseline PING on the row's own client (the store's connection for ours, the bare client for rate-limiter-flexible)`,
      `rtdb: ${RTDB.rounds} rounds x ${RTDB.callsPerBlock} calls over ${RTDB.keys} keys in steady use, candidates called in turn call by call, RTDB test server through a proxy adding ${RTDB.delayMs} ms each way; baseline a bare set() of the node the default fixed window writes, through the same proxy; the floor row is firebase's transaction alone (listened node, same node, one put with its hash)`,
      ...(redisServerNote === undefined ? [] : [redisServerNote]),
      "per-round x: the lowest and highest of the rounds' ratios (each round against the baseline's same round)",
      'policies: limit 1e9 per 60 s (sliding-log: its cap, 1000), so every decision is allowed; sliding-log keys hold one entry per call made on them, up to a few hundred by the end of the memory rounds',
      `targets (issue): memory fixed window <= express-rate-limit increment; each algorithm on Redis <= ${TARGET.redis}x PING; on RTDB <= ${TARGET.rtdb}x set(); took ${((Date.now() - started) / 1000).toFixed(0)} s`,
    ],
  };
}

if (require.main === module) {
  const stores = process.argv.slice(2).filter((arg): arg is StoreName => Object.hasOwn(MEASURE, arg));
  runAlgorithmsBench(stores.length > 0 ? stores : undefined).then(printTable, (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
