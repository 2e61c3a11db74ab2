import os from 'node:os';
import { MemoryStore } from 'express-rate-limit';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { createRateLimiter } from '../src/library/limiter/create-rate-limiter';
import type { PolicySet, RateLimitPolicy } from '../src/library/window/policy';
import { MemoryWindowStore } from '../src/library/memory/memory-store';
import { median, microseconds, percentile, printTable, timeCalls, type BenchTable } from './bench-table';
import { serveBenchRequests, startBenchChild } from './bench-child';

/**
 * Cost of one in-process decision, per call, for our memory store and full
 * limiter against a bare Map and the two libraries people would otherwise
 * reach for. Candidates run in interleaved blocks in the same process so that
 * CPU frequency, GC and JIT drift hit every row alike.
 */

const KEY_COUNT = 1_000;
const ROUNDS = 10;
const CALLS_PER_ROUND = 2_000;
const WARMUP_CALLS = 20_000;
const WINDOW_MS = 60_000;

/** High enough that every decision is allowed: we time the common path, not refusals. */
const POLICY: RateLimitPolicy = { name: 'bench', limit: 1_000_000_000, windowMs: WINDOW_MS };
/** The same policy as the one-policy set the stores take. */
const POLICIES: PolicySet = [POLICY];

/**
 * How our TypeScript is loaded for the timing: by default in a child process
 * through TypeScript's own emit (./typescript-emit.cjs), the code the image
 * runs (ADR 0021); BENCH_LOADER=tsx times it in this process under tsx, as
 * before 2026-12-05 (every imported binding a getter, about 10-20 % of a call).
 */
const LOADER: 'typescript' | 'tsx' = process.env.BENCH_LOADER === 'tsx' ? 'tsx' : 'typescript';
const CHILD_FLAG = '--memory-bench-child';

/**
 * The least a limiter whose answer is a Decision can do: a fixed window kept
 * in place in a Map entry (as express-rate-limit keeps its own), Date.now(),
 * the three objects a one-policy Decision is (the Decision, its `policies`
 * array, the PolicyDecision) and the promise. A diagnostic floor, not a
 * candidate: what no memory limiter with this answer can go below.
 */
function decisionFloor(): (key: string) => Promise<unknown> {
  const entries = new Map<string, { windowNumber: number; count: number }>();
  const { limit, windowMs, name: policyName } = POLICY;
  return (key) => {
    const nowMs = Date.now();
    let entry = entries.get(key);
    if (entry === undefined) {
      entry = { windowNumber: 0, count: 0 };
      entries.set(key, entry);
    }
    const ownWindow = Math.floor(nowMs / windowMs);
    const windowNumber = entry.windowNumber > ownWindow ? entry.windowNumber : ownWindow;
    const spent = entry.windowNumber === windowNumber ? entry.count : 0;
    const resetAtMs = (windowNumber + 1) * windowMs;
    const allowed = spent + 1 <= limit;
    entry.windowNumber = windowNumber;
    entry.count = allowed ? spent + 1 : spent;
    const remaining = Math.max(0, limit - entry.count);
    const retryAfterMs = allowed ? 0 : resetAtMs - nowMs;
    const named = { allowed, limit, remaining, resetAtMs, retryAfterMs, policyName, windowMs, perWindow: limit, algorithm: 'fixed-window' };
    // Field by field, as decisionHeadedBy builds it: on Node 20 a spread with extra properties costs about 1 µs.
    const reason = allowed ? 'within_limit' : 'limit';
    return Promise.resolve({ allowed, limit, remaining, resetAtMs, retryAfterMs, policyName, windowMs, perWindow: limit, algorithm: 'fixed-window', shared: false, reason, policies: [named] });
  };
}

interface Candidate {
  readonly name: string;
  /** Returns a promise only for async APIs; the harness awaits it inside the timed region. */
  readonly call: (key: string) => unknown;
  readonly async: boolean;
  /** Rows shown for diagnosis only, not part of the comparison the issue asks for. */
  readonly diagnostic?: boolean;
}

async function buildCandidates(): Promise<Candidate[]> {
  const map = new Map<string, number>();
  const express = new MemoryStore();
  express.init({ windowMs: WINDOW_MS } as Parameters<MemoryStore['init']>[0]);
  const flexible = new RateLimiterMemory({ points: POLICY.limit, duration: WINDOW_MS / 1000 });
  const store = new MemoryWindowStore();
  const syncStore = new MemoryWindowStore();
  const limiter = await createRateLimiter({ policy: POLICY });
  const syncLimiter = await createRateLimiter({ policy: POLICY });
  return [
    { name: 'empty (timer overhead)', call: () => undefined, async: false, diagnostic: true },
    { name: 'Map get+set', call: (k) => map.set(k, (map.get(k) ?? 0) + 1), async: false },
    { name: 'express-rate-limit MemoryStore.increment', call: (k) => express.increment(k), async: true },
    { name: 'rate-limiter-flexible RateLimiterMemory.consume', call: (k) => flexible.consume(k), async: true },
    { name: 'MemoryWindowStore.consume', call: (k) => store.consume(k, Date.now(), POLICIES, 1), async: true },
    {
      name: 'MemoryWindowStore.consumeSync (no promise)',
      call: (k) => syncStore.consumeSync(k, Date.now(), POLICIES, 1),
      async: false,
      diagnostic: true,
    },
    { name: 'createRateLimiter(memory).consume', call: (k) => limiter.consume(k), async: true },
    { name: 'createRateLimiter(memory).consumeSync (no promise)', call: (k) => syncLimiter.consumeSync?.(k), async: false },
    { name: 'floor: a window in place, the 3 objects of a Decision, a promise', call: decisionFloor(), async: true, diagnostic: true },
  ];
}

export async function runMemoryBench(): Promise<BenchTable> {
  if (LOADER === 'tsx' || process.argv.includes(CHILD_FLAG)) return measure();
  const child = await startBenchChild<{ ready: true }>(__filename, [CHILD_FLAG], { name: 'memory bench', loader: 'typescript' });
  try {
    return await child.request<BenchTable>('run');
  } finally {
    await child.stop();
  }
}

async function measure(): Promise<BenchTable> {
  const keys = Array.from({ length: KEY_COUNT }, (_, i) => `tok_${i.toString(36).padStart(6, '0')}`);
  const candidates = await buildCandidates();
  const samples = new Map<string, number[]>(candidates.map((c) => [c.name, []]));

  for (const candidate of candidates) await timeCalls(candidate.call, keys, 0, WARMUP_CALLS, null, !candidate.async);

  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order each round so no candidate always runs right after another's garbage.
    for (let j = 0; j < candidates.length; j++) {
      const candidate = candidates[(round + j) % candidates.length] as Candidate;
      await timeCalls(candidate.call, keys, round * CALLS_PER_ROUND, CALLS_PER_ROUND, samples.get(candidate.name) ?? null, !candidate.async);
    }
  }

  const stats = candidates.map((c) => {
    const sorted = [...(samples.get(c.name) ?? [])].sort((a, b) => a - b);
    return { c, p50: median(sorted), p99: percentile(sorted, 99), n: sorted.length };
  });
  const mapP50 = stats.find((s) => s.c.name === 'Map get+set')?.p50 ?? Number.NaN;
  const erlP50 = stats.find((s) => s.c.name.startsWith('express-rate-limit'))?.p50 ?? Number.NaN;

  return {
    title: `In-process decision cost (${ROUNDS} rounds x ${CALLS_PER_ROUND} calls over ${KEY_COUNT} keys, interleaved)`,
    columns: ['implementation', 'p50 µs', 'p99 µs', 'x Map (p50)', 'x express-rate-limit (p50)', 'samples'],
    rows: stats.map((s) => [
      s.c.diagnostic === true ? `(${s.c.name})` : s.c.name,
      microseconds(s.p50),
      microseconds(s.p99),
      s.p50 / mapP50,
      s.p50 / erlP50,
      s.n,
    ]),
    notes: [
      'per-call wall time from process.hrtime.bigint around each call (await included for async APIs); the timer itself costs the "empty" row',
      `rows in parentheses are diagnostics, not candidates; warm-up ${WARMUP_CALLS} calls each; node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown cpu'}`,
      `our code loaded by ${LOADER === 'tsx' ? 'tsx, in the bench process (BENCH_LOADER=tsx)' : "TypeScript's own emit in a child process, as the image runs it"}`,
      'issue 22 target: the fixed-window limiter at or below express-rate-limit MemoryStore.increment by p50: consumeSync, the call without a promise the issue asks for where the decision is synchronous; consume, the promise API, beside it (issue 8: MemoryWindowStore.consume)',
    ],
  };
}

if (require.main === module && process.argv.includes(CHILD_FLAG)) {
  process.send?.({ ready: true });
  serveBenchRequests(() => measure());
} else if (require.main === module) {
  runMemoryBench().then(printTable, (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
