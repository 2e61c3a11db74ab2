import path from 'node:path';
import { resolveUpstreamPolicy, type UpstreamPolicy } from '../src/library/schedule/upstream-policy';
import { startRtdbTestServer, type RtdbTestServer } from '../test/support/rtdb-server';
import { startBenchChild, type BenchChild } from './bench-child';
import { percentile, type BenchTable } from './bench-table';
import type { StepReport, StepRequest } from './upstream-hot-key-worker';
import { measureUpstreamRedisHeld } from './upstream-redis-held';

/**
 * `npm run bench -- upstream-hot-key`: how many decisions a second the one
 * upstream quota key takes from three processes on RTDB (the test server in
 * its own process, on loopback) before firebase's transactions start failing
 * with `maxretry`.
 *
 * Each process has its own firebase-admin client and offers its third of the
 * rate open loop (bench/upstream-hot-key-worker.ts), every call from a new
 * token, for STEP_MS per step, rates doubling, each workload in fresh
 * processes, until maxretry appears or calls are still retrying 10 s after
 * the step. "Kept up" means at least 95 % answered within 1 s of the step's
 * end. Three workloads:
 *
 * - every call writes: a quota so large that each call runs (the key's raw
 *   write throughput under contention);
 * - the flood, store only: 15/min; after the first ~14 slots the queue is full
 *   and nearly every call is rejected. RtdbUpstreamQuotaStore answers a
 *   rejection on its listened view without writing only while no other
 *   transaction of its own is in flight on the key; under concurrency it
 *   writes the value back to have the server confirm it, and those writes
 *   contend;
 * - the flood through CachedUpstreamQuota (1 s staleness): rejections are
 *   answered from the last state seen, with no transaction at all.
 *
 * "answered/s" counts answers that arrived before the step's end + 1 s: what
 * the key sustained, not a backlog drained afterwards. A workload's rates
 * stop at its first maxretry. The three processes and the server share the
 * machine's cores, so the figures are a floor for a real RTDB, where the
 * server has its own machines and round trips are longer (more retries).
 *
 * Before those, on Redis: the upstream script's own time per call by the
 * reservations held, 0 to 1,000 (bench/upstream-redis-held.ts).
 * UPSTREAM_BENCH_SKIP_RTDB=1 runs that part only.
 */

/** Offered decisions a second, all three processes together. UPSTREAM_BENCH_RATES=30,60 for a short run. */
const RATES = (process.env.UPSTREAM_BENCH_RATES ?? '30,60,120,240,480,960,1920').split(',').map(Number);
const STEP_MS = 2000;
const PROCESSES = 3;

interface Workload {
  readonly name: string;
  readonly policy: UpstreamPolicy;
  readonly cached: boolean;
}

const WORKLOADS: readonly Workload[] = [
  { name: 'every call writes (a quota that never queues)', policy: resolveUpstreamPolicy({ limit: 1_000_000, windowMs: 1000, headroom: 1, graceMs: 0, maxReservations: 1000 }), cached: false },
  { name: 'flood on 15/min, store only', policy: resolveUpstreamPolicy({ limit: 15, windowMs: 60_000 }), cached: false },
  { name: 'flood on 15/min, cursor cache', policy: resolveUpstreamPolicy({ limit: 15, windowMs: 60_000 }), cached: true },
];

let keySeq = 0;

async function runStep(children: readonly BenchChild<unknown>[], workload: Workload, perSecond: number): Promise<StepReport[]> {
  const key = `hot${++keySeq}_${Date.now()}`;
  const startAtMs = Date.now() + 300;
  const request: StepRequest = { key, policy: workload.policy, cached: workload.cached, perSecond: perSecond / PROCESSES, durationMs: STEP_MS, startAtMs };
  return Promise.all(children.map((child) => child.request<StepReport>(request)));
}

function row(workload: Workload, perSecond: number, reports: readonly StepReport[]): (string | number)[] {
  const sum = (pick: (r: StepReport) => number) => reports.reduce((total, r) => total + pick(r), 0);
  const latencies = reports.flatMap((r) => r.latenciesMs);
  const transactions = sum((r) => r.transactions);
  const offered = sum((r) => r.offered);
  return [
    workload.name,
    perSecond,
    Math.round((sum((r) => r.answeredInTime) * 1000) / STEP_MS),
    sum((r) => r.maxretry),
    sum((r) => r.unanswered),
    sum((r) => r.otherErrors),
    `${sum((r) => r.runs)}/${sum((r) => r.reserved)}/${sum((r) => r.rejected)}`,
    transactions === 0 ? 0 : sum((r) => r.updateRuns) / transactions,
    sum((r) => r.confirmingWrites),
    offered === 0 ? 0 : (100 * sum((r) => r.answeredLocally)) / offered,
    latencies.length === 0 ? Number.NaN : percentile(latencies, 50),
    latencies.length === 0 ? Number.NaN : percentile(latencies, 99),
  ];
}

export async function runUpstreamHotKeyBench(): Promise<BenchTable[]> {
  const redis = await measureUpstreamRedisHeld();
  if (process.env.UPSTREAM_BENCH_SKIP_RTDB === '1') return [redis];
  return [redis, await measureRtdbHotKey()];
}

async function measureRtdbHotKey(): Promise<BenchTable> {
  const server: RtdbTestServer = await startRtdbTestServer();
  const rows: (string | number)[][] = [];
  const notes: string[] = [];
  const file = path.join(__dirname, 'upstream-hot-key-worker.ts');
  try {
    for (const workload of WORKLOADS) {
      // Fresh processes per workload: calls still retrying after a failing step must not load the next one.
      const children = await Promise.all(
        Array.from({ length: PROCESSES }, (_, i) => startBenchChild(file, [server.host, server.databaseUrl, `p${i}`], { name: `upstream worker ${i}` })),
      );
      let keptUpTo: number | undefined;
      let lagging: number | undefined;
      let maxretryAt: number | undefined;
      let stuckAt: number | undefined;
      try {
        for (const perSecond of RATES) {
          const reports = await runStep(children, workload, perSecond);
          if (process.env.UPSTREAM_BENCH_VERBOSE) console.error(workload.name, perSecond, JSON.stringify(reports.map((r) => ({ ...r, latenciesMs: r.latenciesMs.length }))));
          rows.push(row(workload, perSecond, reports));
          const total = (pick: (r: StepReport) => number) => reports.reduce((sum, r) => sum + pick(r), 0);
          if (total((r) => r.maxretry) > 0) maxretryAt ??= perSecond;
          if (total((r) => r.unanswered) > 0) stuckAt ??= perSecond;
          // Kept up: at least 95 % answered by the step's end + 1 s, none failed.
          const keptUp = total((r) => r.answeredInTime) >= 0.95 * total((r) => r.offered) && maxretryAt === undefined && stuckAt === undefined;
          if (keptUp && lagging === undefined) keptUpTo = perSecond;
          else lagging ??= perSecond;
          // Past maxretry, or calls still retrying, the processes carry the backlog into the next step: stop.
          if (maxretryAt !== undefined || stuckAt !== undefined) break;
        }
      } finally {
        await Promise.all(children.map((child) => child.stop()));
      }
      const top = RATES[RATES.length - 1];
      notes.push(
        `${workload.name}: kept up to ${keptUpTo ?? 'none'}/s offered; ` +
          `maxretry ${maxretryAt === undefined ? `never (up to ${stuckAt ?? top}/s)` : `first at ${maxretryAt}/s`}` +
          (stuckAt === undefined ? '' : `; calls still retrying 10 s after the step at ${stuckAt}/s`),
      );
    }
  } finally {
    // The test server's process is unref'd (a forgotten close must not hold jest); this process has
    // no other handle left by now, so without one of its own it would exit before the kill is seen.
    const keepAlive = setInterval(() => undefined, 1000);
    await server.close();
    clearInterval(keepAlive);
  }
  return {
    title: `One upstream quota key on the RTDB test server, ${PROCESSES} processes, ${STEP_MS / 1000} s per rate`,
    columns: ['workload', 'offered/s', 'answered/s', 'maxretry', 'unanswered', 'other errors', 'run/reserved/rejected', 'update runs per txn', 'confirming writes', '% answered locally', 'p50 ms', 'p99 ms'],
    rows,
    notes,
  };
}
