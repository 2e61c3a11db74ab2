import path from 'node:path';
import { createClient } from 'redis';
import type { RateLimitPolicy } from '../src/library/window/policy';
import { startRedisServer, type RedisServer } from '../test/support/redis-server';
import { readWriteStats, startRtdbTestServer, type RtdbTestServer } from '../test/support/rtdb-server';
import { startBenchChild, type BenchChild } from './bench-child';
import { percentile, printTable, type BenchTable } from './bench-table';
import type { HotKeyBackend, RunReport, RunRequest, WorkerConfig } from './hot-key-worker';

/**
 * `npm run bench -- hot-key` (issue 18): PROCESSES processes, each with its
 * own store client and its own limiter (bench/hot-key-worker.ts), all on ONE
 * key of one fixed-window policy, offered OFFER_FACTOR × the limit open loop
 * for WINDOWS windows, on the RTDB test server (its own process) and on a
 * real redis-server, with hot-key leases (ADR 0066) off (today's figures)
 * and on (`hotKeys: {}`, the defaults). Fresh processes per row.
 *
 * Admitted calls are bucketed by the window they were counted in (the
 * decision's resetAtMs), so "over-admission" is the worst window's admitted
 * minus the limit. "Local answers" are decisions with `shared: false`: on
 * RTDB, what ADR 0064 answers from the instance's own window when the key
 * stays contended. Store writes: RTDB, the writes the test server applied
 * (readWriteStats; the firebase client folds its queued transactions on one
 * node into one write) and the stale ones it refused; Redis, EVALSHA/EVAL
 * calls (INFO commandstats). Both per second of the run, counted from the
 * run's start to its last answer. Nothing is asserted but that it ran.
 *
 * Knobs (each overrides both backends' profile below): HOT_KEY_BENCH_LIMIT,
 * HOT_KEY_BENCH_WINDOW_MS, HOT_KEY_BENCH_WINDOWS, HOT_KEY_BENCH_HOT_RATE;
 * HOT_KEY_BENCH_PROCESSES (10),
 * HOT_KEY_BENCH_OFFER_FACTOR (2), HOT_KEY_BENCH_BACKENDS (rtdb,redis).
 */

const numberFromEnv = (name: string, fallback: number): number => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number, got ${raw}`);
  return value;
};

/**
 * Per backend, a load the machine's store sustains for a key at 2x: Redis
 * takes 4,000 decisions a second; the RTDB test server, in one process on
 * the same 2 cores, commits only a few transactions a second on one key that
 * 10 clients contend for, so RTDB runs at 400/s offered on a 10 s window
 * and leases from 20 decisions a second per instance (the service's RTDB
 * default of RATE_LIMIT_HOT_KEY_RATE_PER_SECOND). The knobs override both.
 */
interface Profile {
  readonly limit: number;
  readonly windowMs: number;
  readonly windows: number;
  readonly hotRatePerSecond: number | undefined;
}

const PROFILES: Readonly<Record<HotKeyBackend, Profile>> = {
  rtdb: { limit: 2000, windowMs: 10_000, windows: 3, hotRatePerSecond: 20 },
  redis: { limit: 2000, windowMs: 1000, windows: 5, hotRatePerSecond: undefined },
};

function profileOf(backend: HotKeyBackend): Profile {
  const base = PROFILES[backend];
  return {
    limit: numberFromEnv('HOT_KEY_BENCH_LIMIT', base.limit),
    windowMs: numberFromEnv('HOT_KEY_BENCH_WINDOW_MS', base.windowMs),
    windows: numberFromEnv('HOT_KEY_BENCH_WINDOWS', base.windows),
    hotRatePerSecond: process.env.HOT_KEY_BENCH_HOT_RATE === undefined ? base.hotRatePerSecond : numberFromEnv('HOT_KEY_BENCH_HOT_RATE', 200),
  };
}

const PROCESSES = numberFromEnv('HOT_KEY_BENCH_PROCESSES', 10);
const OFFER_FACTOR = numberFromEnv('HOT_KEY_BENCH_OFFER_FACTOR', 2);
const BACKENDS = (process.env.HOT_KEY_BENCH_BACKENDS ?? 'rtdb,redis').split(',') as HotKeyBackend[];
const WORKER = path.join(__dirname, 'hot-key-worker.ts');

/** What a backend gives the workers, and how its writes are counted. */
interface Backend {
  readonly name: string;
  readonly worker: Pick<WorkerConfig, 'backend' | 'host' | 'databaseUrl' | 'redisUrl'>;
  /** Writes (and, for RTDB, stale writes refused) so far. */
  writes(): Promise<{ writes: number; staleWrites?: number }>;
  close(): Promise<void>;
}

async function rtdbBackend(): Promise<Backend> {
  const server: RtdbTestServer = await startRtdbTestServer();
  return {
    name: 'RTDB test server',
    worker: { backend: 'rtdb', host: server.host, databaseUrl: server.databaseUrl },
    writes: () => readWriteStats(server),
    close: async () => {
      // The server's process is unref'd; without a handle of our own this process could exit before the kill is seen.
      const keepAlive = setInterval(() => undefined, 1000);
      await server.close();
      clearInterval(keepAlive);
    },
  };
}

async function redisBackend(): Promise<Backend> {
  const server: RedisServer = await startRedisServer();
  const client = createClient({ url: server.url });
  await client.connect();
  return {
    name: 'redis-server',
    worker: { backend: 'redis', redisUrl: server.url },
    writes: async () => {
      // Every decision, lease take and give-back of the store is one script call.
      const info = String(await client.sendCommand(['INFO', 'commandstats']));
      const calls = [...info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
      return { writes: calls };
    },
    close: async () => {
      client.destroy();
      await server.close();
    },
  };
}

let keySeq = 0;

interface Row {
  readonly label: string;
  readonly startAtMs: number;
  readonly reports: readonly RunReport[];
  readonly writesPerSecond: number;
  readonly staleWritesPerSecond: number | undefined;
}

async function runRow(backend: Backend, profile: Profile, leases: boolean): Promise<Row> {
  const policy: RateLimitPolicy = { name: 'hot', limit: profile.limit, windowMs: profile.windowMs };
  const offeredPerSecond = (OFFER_FACTOR * profile.limit * 1000) / profile.windowMs;
  const children: BenchChild<unknown>[] = await Promise.all(
    Array.from({ length: PROCESSES }, (_, i) => {
      const config: WorkerConfig = { ...backend.worker, policy, leases, tag: `p${i}`, ...(profile.hotRatePerSecond === undefined ? {} : { hotRatePerSecond: profile.hotRatePerSecond }) };
      return startBenchChild(WORKER, [JSON.stringify(config)], { name: `hot-key worker ${i}` });
    }),
  );
  try {
    const key = `hot${++keySeq}_${Date.now()}`;
    const before = await backend.writes();
    // From a window's start, so every window of the run is a whole one.
    const startAtMs = Math.ceil((Date.now() + 1500) / profile.windowMs) * profile.windowMs;
    const request: RunRequest = { key, perSecond: offeredPerSecond / PROCESSES, durationMs: profile.windows * profile.windowMs, startAtMs };
    const reports = await Promise.all(children.map((child) => child.request<RunReport>(request)));
    const elapsedMs = Date.now() - startAtMs;
    const after = await backend.writes();
    const perSecond = (n: number) => (n * 1000) / elapsedMs;
    const stale = after.staleWrites === undefined || before.staleWrites === undefined ? undefined : perSecond(after.staleWrites - before.staleWrites);
    return { label: `${backend.name}, leases ${leases ? 'on' : 'off'}`, startAtMs, reports, writesPerSecond: perSecond(after.writes - before.writes), staleWritesPerSecond: stale };
  } finally {
    await Promise.all(children.map((child) => child.stop()));
  }
}

function tableRow(row: Row, { limit, windowMs, windows }: Profile): (string | number)[] {
  const sum = (pick: (r: RunReport) => number) => row.reports.reduce((total, r) => total + pick(r), 0);
  const byWindow = new Map<string, number>();
  for (const report of row.reports) {
    for (const [resetAtMs, n] of Object.entries(report.admittedByResetAtMs)) byWindow.set(resetAtMs, (byWindow.get(resetAtMs) ?? 0) + n);
  }
  // The run's own windows; a call a lagging process started after the run's end lands in the next one.
  const runWindows = Array.from({ length: windows }, (_, i) => String(row.startAtMs + (i + 1) * windowMs));
  const admitted = runWindows.map((resetAtMs) => byWindow.get(resetAtMs) ?? 0);
  const outside = [...byWindow].filter(([resetAtMs]) => !runWindows.includes(resetAtMs)).reduce((total, [, n]) => total + n, 0);
  const maxAdmitted = Math.max(0, ...admitted, ...[...byWindow.values()]);
  const minAdmitted = Math.min(...admitted);
  const latencies = row.reports.flatMap((r) => r.latenciesMs);
  return [
    row.label,
    Math.round(sum((r) => r.offered) / windows),
    outside,
    maxAdmitted,
    (100 * maxAdmitted) / limit,
    (100 * minAdmitted) / limit,
    maxAdmitted - limit,
    `${sum((r) => r.localAllowed)}/${sum((r) => r.local)}`,
    sum((r) => r.maxretry),
    `${sum((r) => r.otherErrors)}/${sum((r) => r.unanswered)}`,
    `${sum((r) => r.leaseTakes)}/${sum((r) => r.leaseUnits)}`,
    sum((r) => r.adjusts),
    `${Math.min(...row.reports.map((r) => r.fleetInstances))}-${Math.max(...row.reports.map((r) => r.fleetInstances))}`,
    row.writesPerSecond,
    row.staleWritesPerSecond ?? '-',
    percentile(latencies, 50),
    percentile(latencies, 99),
  ];
}

export async function runHotKeyBench(): Promise<BenchTable[]> {
  const tables: BenchTable[] = [];
  for (const name of BACKENDS) {
    const rows: Row[] = [];
    const backend = name === 'rtdb' ? await rtdbBackend() : name === 'redis' ? await redisBackend() : undefined;
    if (backend === undefined) throw new Error(`HOT_KEY_BENCH_BACKENDS: unknown backend ${name}; known: rtdb, redis`);
    const profile = profileOf(name);
    try {
      for (const leases of [false, true]) {
        const row = await runRow(backend, profile, leases);
        if (process.env.HOT_KEY_BENCH_VERBOSE) console.error(row.label, JSON.stringify(row.reports.map((r) => ({ ...r, latenciesMs: r.latenciesMs.length }))));
        rows.push(row);
      }
    } finally {
      await backend.close();
    }
    tables.push(tableOf(rows, profile));
  }
  return tables;
}

function tableOf(rows: readonly Row[], profile: Profile): BenchTable {
  return {
    title: `One key, ${PROCESSES} processes, limit ${profile.limit} per ${profile.windowMs} ms fixed window, ${OFFER_FACTOR}x the limit offered open loop for ${profile.windows} windows; leases from ${profile.hotRatePerSecond ?? 200}/s per instance`,
    columns: [
      'store, hot-key leases',
      'offered/window',
      'admitted after the run',
      'max admitted/window',
      'max % of limit',
      'min % of limit',
      'over-admission (worst)',
      'local allowed/all',
      'maxretry to callers',
      'errors/unanswered',
      'lease takes/units',
      'adjusts',
      'fleet counted',
      'store writes/s',
      'stale writes/s',
      'p50 ms',
      'p99 ms',
    ],
    rows: rows.map((row) => tableRow(row, profile)),
    notes: [
      'admitted per window: allowed decisions bucketed by their resetAtMs, every process together; max over every window, min over the run\'s own; over-admission = worst window - limit; admitted after the run: calls a lagging process started after the last window',
      'local: decisions with shared: false (answered from the process own window, e.g. ADR 0064 contention); errors: rejected consume calls; unanswered: no answer 10 s after the run',
      'lease takes: store consumes of more than 1 unit (a 1-unit take is not told apart); adjusts: leases given back and write-backs of local grants',
      'store writes/s: RTDB, writes the test server applied (stale: transaction writes it refused); Redis, EVALSHA/EVAL calls; from the run start to its last answer',
      'latency: each consume() from its start to its answer, every process together; the processes and the store share the machine',
    ],
  };
}

if (require.main === module) {
  runHotKeyBench().then((tables) => tables.forEach(printTable), (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
