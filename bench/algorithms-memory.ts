import { MemoryStore } from 'express-rate-limit';
import { TokenBucket } from 'limiter';
import { BurstyRateLimiter, RateLimiterMemory } from 'rate-limiter-flexible';
import type { AlgorithmName } from '../src/library/window/algorithms';
import { createRateLimiter } from '../src/library/limiter/create-rate-limiter';
import { MAX_SLIDING_LOG_LIMIT, type PolicySet, type RateLimitPolicy } from '../src/library/window/policy';
import { MemoryWindowStore } from '../src/library/memory/memory-store';
import { sendCpuUsage } from './bench-child';
import { printTable } from './bench-table';

/**
 * The in-process candidates of `npm run bench -- algorithms`, each run in a
 * process of its own (this file, forked by algorithms-bench.ts with
 * `--candidate ID`). Alone in its process a candidate's code is compiled for
 * its own calls only, as in a service that uses one limiter: in one shared
 * process the harness's call site and our generic decide would see every
 * algorithm and every library, and whichever ran later would pay for the others'
 * type feedback.
 */

export const WINDOW_MS = 60_000;

/**
 * High enough that every decision is allowed: we time the common path, not
 * refusals. The sliding log keeps one entry per call and is capped at
 * MAX_SLIDING_LOG_LIMIT, so it gets that cap; no key reaches it in one run.
 */
export function benchPolicy(algorithm: AlgorithmName): RateLimitPolicy {
  const limit = algorithm === 'sliding-log' ? MAX_SLIDING_LOG_LIMIT : 1_000_000_000;
  return { name: 'bench', algorithm, limit, windowMs: WINDOW_MS };
}

export function benchKeys(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `tok_${i.toString(36).padStart(6, '0')}`);
}

type Call = (key: string) => unknown;

export interface MemoryCandidate {
  readonly id: string;
  readonly algorithm: AlgorithmName;
  readonly label: string;
  readonly ours: boolean;
  /** A synchronous API: called without await (it never returns a promise). */
  readonly sync?: boolean;
  /** Runs in the child only. */
  readonly build: () => Promise<Call>;
}

const ours = (algorithm: AlgorithmName): MemoryCandidate[] => {
  const policy = benchPolicy(algorithm);
  const policies: PolicySet = [policy];
  return [
    {
      id: `${algorithm}/store`,
      algorithm,
      label: 'MemoryWindowStore.consume',
      ours: true,
      build: async () => {
        const store = new MemoryWindowStore();
        return (key) => store.consume(key, Date.now(), policies, 1);
      },
    },
    {
      id: `${algorithm}/limiter`,
      algorithm,
      label: 'createRateLimiter (memory store).consume',
      ours: true,
      build: async () => {
        const limiter = await createRateLimiter({ policy });
        return (key) => limiter.consume(key);
      },
    },
    {
      id: `${algorithm}/limiter-sync`,
      algorithm,
      label: 'createRateLimiter (memory store).consumeSync (no promise)',
      ours: true,
      sync: true,
      build: async () => {
        const limiter = await createRateLimiter({ policy });
        return (key) => limiter.consumeSync?.(key);
      },
    },
  ];
};

const BIG = 1_000_000_000;

export const MEMORY_CANDIDATES: readonly MemoryCandidate[] = [
  {
    id: 'fixed-window/express-rate-limit',
    algorithm: 'fixed-window',
    label: 'express-rate-limit MemoryStore.increment',
    ours: false,
    build: async () => {
      const store = new MemoryStore();
      store.init({ windowMs: WINDOW_MS } as Parameters<MemoryStore['init']>[0]);
      return (key) => store.increment(key);
    },
  },
  {
    id: 'fixed-window/rate-limiter-flexible',
    algorithm: 'fixed-window',
    label: 'rate-limiter-flexible RateLimiterMemory.consume',
    ours: false,
    build: async () => {
      const limiter = new RateLimiterMemory({ points: BIG, duration: WINDOW_MS / 1000 });
      return (key) => limiter.consume(key);
    },
  },
  ...ours('fixed-window'),
  ...ours('sliding-window'),
  ...ours('sliding-log'),
  {
    id: 'token-bucket/limiter-async',
    algorithm: 'token-bucket',
    label: 'limiter TokenBucket.removeTokens (a bucket per key in a Map)',
    ours: false,
    build: async () => {
      const buckets = tokenBuckets();
      return (key) => buckets(key).removeTokens(1);
    },
  },
  {
    id: 'token-bucket/limiter-sync',
    algorithm: 'token-bucket',
    label: 'limiter TokenBucket.tryRemoveTokens (sync, no promise)',
    ours: false,
    sync: true,
    build: async () => {
      const buckets = tokenBuckets();
      return (key) => buckets(key).tryRemoveTokens(1);
    },
  },
  {
    id: 'token-bucket/rate-limiter-flexible-bursty',
    algorithm: 'token-bucket',
    label: 'rate-limiter-flexible BurstyRateLimiter.consume (two fixed windows)',
    ours: false,
    build: async () => {
      const limiter = new BurstyRateLimiter(
        new RateLimiterMemory({ points: BIG, duration: WINDOW_MS / 1000 }),
        new RateLimiterMemory({ keyPrefix: 'burst', points: BIG, duration: WINDOW_MS / 1000 }),
      );
      return (key) => limiter.consume(key);
    },
  },
  ...ours('token-bucket'),
  ...ours('leaky-bucket'),
];

/** The `limiter` package limits one thing; per key means a bucket per key. A new bucket starts empty, so it is filled. */
function tokenBuckets(): (key: string) => TokenBucket {
  const buckets = new Map<string, TokenBucket>();
  return (key) => {
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = new TokenBucket({ bucketSize: BIG, tokensPerInterval: BIG, interval: WINDOW_MS });
      bucket.content = BIG;
      buckets.set(key, bucket);
    }
    return bucket;
  };
}

export interface BlockRequest {
  readonly offset: number;
  readonly calls: number;
}

/** Child mode: build one candidate, warm it up, then time blocks on request (mean CPU ns per call). */
async function child(id: string, keyCount: number, warmupCalls: number): Promise<void> {
  const candidate = MEMORY_CANDIDATES.find((c) => c.id === id);
  if (candidate === undefined) throw new Error(`unknown memory candidate ${id}`);
  const call = await candidate.build();
  const keys = benchKeys(keyCount);
  const sync = candidate.sync === true;
  await timeBlock(call, keys, 0, warmupCalls, sync);
  process.send?.({ ready: id });
  process.on('message', (message: BlockRequest | 'cpu' | 'stop') => {
    if (message === 'stop') process.exit(0);
    if (message === 'cpu') {
      sendCpuUsage();
      return;
    }
    void timeBlock(call, keys, message.offset, message.calls, sync).then((nsPerCall) => process.send?.({ nsPerCall }));
  });
}

/**
 * Mean CPU time of this process per call over `calls` sequential calls (one
 * reading per block, so the clock costs nothing per call; the garbage
 * collector's threads included). CPU, not wall time: on a shared two-core
 * machine a block of a few ms is often preempted by another job, which wall
 * time would charge to whichever candidate was running.
 */
async function timeBlock(call: Call, keys: readonly string[], offset: number, calls: number, sync: boolean): Promise<number> {
  const started = process.cpuUsage();
  if (sync) {
    for (let i = 0; i < calls; i++) call(keys[(offset + i) % keys.length] as string);
  } else {
    for (let i = 0; i < calls; i++) await call(keys[(offset + i) % keys.length] as string);
  }
  const { user, system } = process.cpuUsage(started);
  return ((user + system) * 1000) / calls;
}

if (require.main === module && process.argv[2] === '--log-bytes') {
  // `npx tsx bench/algorithms-memory.ts --log-bytes`: a full sliding log's bytes per entry, memory and Redis.
  void import('./sliding-log-bytes').then(({ runSlidingLogBytes }) => runSlidingLogBytes().then(printTable));
} else if (require.main === module) {
  const [flag, id, keyCount, warmupCalls] = process.argv.slice(2);
  if (flag !== '--candidate' || id === undefined) throw new Error('usage: algorithms-memory.ts --candidate ID KEYS WARMUP');
  child(id, Number(keyCount), Number(warmupCalls)).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
