import path from 'node:path';
import { resolveUpstreamPolicy, type UpstreamPolicy } from '../src/limiter/upstream/upstream-policy';
import { startRtdbTestServer, type RtdbTestServer } from '../test/support/rtdb-server';
import { startBenchChild, type BenchChild } from './bench-child';
import { percentile, type BenchTable } from './bench-table';
import { startDelayProxy, type DelayProxy } from './delay-proxy';
import type { StepReport, StepRequest } from './upstream-hot-key-worker';

/**
 * `npm run bench -- upstream-hot-key`: how many decisions a second the one
 * upstream quota key takes from three processes on RTDB (the test server in
 * its own process, reached directly or through a 1 ms-each-way relay) before
 * firebase's transactions start failing with `maxretry`.
 *
 * Each process has its own firebase-admin client and offers its third of the
 * rate open loop (bench/upstream-hot-key-worker.ts), every call from a new
 * token, for STEP_MS per step, rates doubling. Three workloads, side by side
 * at each rate:
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
 */

/** Offered decisions a second, all three processes together. UPSTREAM_BENCH_RATES=30,60 for a short run. */
const RATES = (process.env.UPSTREAM_BENCH_RATES ?? '30,60,120,240,480,960').split(',').map(Number);
const STEP_MS = 3000;
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

interface Network {
  readonly name: string;
  readonly host: string;
  readonly databaseUrl: string;
}

let keySeq = 0;

async function runStep(children: readonly BenchChild<unknown>[], workload: Workload, perSecond: number): Promise<StepReport[]> {
  const key = `hot${++keySeq}_${Date.now()}`;
  const startAtMs = Date.now() + 300;
  const request: StepRequest = { key, policy: workload.policy, cached: workload.cached, perSecond: perSecond / PROCESSES, durationMs: STEP_MS, startAtMs };
  return Promise.all(children.map((child) => child.request<StepReport>(request)));
}

function row(network: string, workload: Workload, perSecond: number, reports: readonly StepReport[]): (string | number)[] {
  const sum = (pick: (r: StepReport) => number) => reports.reduce((total, r) => total + pick(r), 0);
  const latencies = reports.flatMap((r) => r.latenciesMs);
  const transactions = sum((r) => r.transactions);
  const offered = sum((r) => r.offered);
  return [
    network,
    workload.name,
    perSecond,
    Math.round((sum((r) => r.answeredInTime) * 1000) / STEP_MS),
    sum((r) => r.maxretry),
    sum((r) => r.otherErrors),
    `${sum((r) => r.runs)}/${sum((r) => r.reserved)}/${sum((r) => r.rejected)}`,
    transactions === 0 ? 0 : sum((r) => r.updateRuns) / transactions,
    sum((r) => r.confirmingWrites),
    offered === 0 ? 0 : (100 * sum((r) => r.answeredLocally)) / offered,
    latencies.length === 0 ? Number.NaN : percentile(latencies, 50),
    latencies.length === 0 ? Number.NaN : percentile(latencies, 99),
  ];
}

export async function runUpstreamHotKeyBench(): Promise<BenchTable> {
  const server: RtdbTestServer = await startRtdbTestServer();
  const proxy: DelayProxy = await startDelayProxy(server.port, 1);
  const networks: Network[] = [
    { name: 'loopback', host: server.host, databaseUrl: server.databaseUrl },
    { name: '+1 ms each way', host: `127.0.0.1:${proxy.port}`, databaseUrl: `http://127.0.0.1:${proxy.port}?ns=${server.namespace}` },
  ];
  const rows: (string | number)[][] = [];
  const firstMaxRetry = new Map<string, number | undefined>();
  const file = path.join(__dirname, 'upstream-hot-key-worker.ts');
  try {
    for (const network of networks) {
      const children = await Promise.all(
        Array.from({ length: PROCESSES }, (_, i) => startBenchChild(file, [network.host, network.databaseUrl, `p${i}`], { name: `upstream worker ${i}` })),
      );
      try {
        for (const perSecond of RATES) {
          // Rotated so no workload always runs first at a rate.
          for (let j = 0; j < WORKLOADS.length; j++) {
            const workload = WORKLOADS[(j + RATES.indexOf(perSecond)) % WORKLOADS.length] as Workload;
            const label = `${network.name}: ${workload.name}`;
            // Past its first maxretry a workload only drains slower (each failed call ran 25 times): skip it.
            if (firstMaxRetry.get(label) !== undefined) continue;
            const reports = await runStep(children, workload, perSecond);
            if (process.env.UPSTREAM_BENCH_VERBOSE) console.error(network.name, workload.name, perSecond, JSON.stringify(reports.map((r) => ({ ...r, latenciesMs: r.latenciesMs.length }))));
            rows.push(row(network.name, workload, perSecond, reports));
            if (!firstMaxRetry.has(label)) firstMaxRetry.set(label, undefined);
            if (firstMaxRetry.get(label) === undefined && reports.some((r) => r.maxretry > 0)) firstMaxRetry.set(label, perSecond);
          }
        }
      } finally {
        await Promise.all(children.map((child) => child.stop()));
      }
    }
  } finally {
    // The test server's process is unref'd (a forgotten close must not hold jest); this process has
    // no other handle left by now, so without one of its own it would exit before the kill is seen.
    const keepAlive = setInterval(() => undefined, 1000);
    await proxy.close();
    await server.close();
    clearInterval(keepAlive);
  }
  rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1])) || (a[2] as number) - (b[2] as number));
  return {
    title: `One upstream quota key on RTDB, ${PROCESSES} processes, ${STEP_MS / 1000} s per rate`,
    columns: ['network', 'workload', 'offered/s', 'answered/s', 'maxretry', 'other errors', 'run/reserved/rejected', 'update runs per txn', 'confirming writes', '% answered locally', 'p50 ms', 'p99 ms'],
    rows,
    notes: [...firstMaxRetry.entries()].map(([label, rate]) => `${label}: ${rate === undefined ? `no maxretry up to ${RATES[RATES.length - 1]}/s offered` : `first maxretry at ${rate}/s offered`}`),
  };
}
