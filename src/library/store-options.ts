import type { Logger } from '../shared/logger';
import type { ContentionRetryOptions } from './limiter/contention';
import type { RedisMode } from './backends/redis/redis-url';

/**
 * The options of the shared stores, typed here without `redis` or
 * `firebase-admin`: the package's declarations must typecheck for a user who
 * installed neither (both are optional peer dependencies).
 */

export interface RedisStoreOptions {
  /**
   * `redis://[:password@]host[:port][/db]` or `rediss://...`; in cluster mode one or more seed nodes,
   * comma-separated, without /db. Never logged, scrubbed from every error.
   */
  readonly url: string;
  /**
   * 'cluster': Redis Cluster through node-redis' cluster client, each limited key's keys under one
   * hash tag (`prefix{key}...`) so a decision is one script on one shard. Default 'standalone'.
   */
  readonly mode?: RedisMode;
  /** A PEM CA bundle's path for rediss:// (REDIS_TLS_CA_FILE), read once here. Default: Node's trusted CAs. */
  readonly tlsCaFile?: string;
  /**
   * Prepended to every key, so several deployments can share one Redis. Default 'firelimit:'. In
   * cluster mode it may not contain '{' or '}': the hash tag must come from the key, or every key would share one slot.
   */
  readonly keyPrefix?: string;
  /** Deadline for one Redis command; past it the command is abandoned. Default 1000. */
  readonly commandTimeoutMs?: number;
  /** How long a key outlives its window, for instances whose clocks lag. Default 10000. */
  readonly ttlMarginMs?: number;
  /** Commands allowed in flight before new ones fail at once instead of queueing. Default 1000. */
  readonly maxPendingCommands?: number;
  /** Default: silent. */
  readonly logger?: Logger;
}

/** How often and how much a sweeper removes. Every field documents its default. */
export interface RtdbSweepTuning {
  /**
   * One sweeper per database and root at a time: a timed run first takes a
   * lease in the database (`sweeperLeases/`), and an instance that finds it
   * held skips the run. false: every instance sweeps (their work overlaps,
   * harmlessly). Default true.
   */
  readonly singleSweeper?: boolean;
  /**
   * A node is removed only once its `e` is this far in the past, so an
   * instance whose clock lags the sweeper's by less than this is never still
   * counting in a window that gets removed (docs/clocks.md). Default 60000.
   */
  readonly graceMs?: number;
  /** Keys asked for per query (`limitToFirst`); their deletes run in parallel. Default 100. */
  readonly batchSize?: number;
  /** Queries per run at most, so one run's work is bounded. Default 10. */
  readonly maxBatchesPerRun?: number;
  /** Each wait between runs is `intervalMs` × (1 ± jitter), so instances started together drift apart. Default 0.2. */
  readonly jitter?: number;
  /** When a run stopped at `maxBatchesPerRun` with work left, the next one starts after this instead. Default 1000. */
  readonly backlogDelayMs?: number;
  /**
   * A node with a window but no `e` (written before `e` existed) is given
   * `e = now + legacyTtlMs` on its first sweep and removed once that passes.
   * Must be at least the longest window kept under the root. Default 86400000 (a day).
   */
  readonly legacyTtlMs?: number;
}

/** Everything of an RTDB store but its database. */
export interface RtdbStoreTuning {
  /** Where the keys live, e.g. 'rateLimits'. Each segment must be a valid key. */
  readonly rootPath: string;
  /** Keys whose node this instance keeps listened to (LRU). 0 turns the cache off. Default 1000. */
  readonly maxListenedKeys?: number;
  /** A key's listener is dropped after this many of its windows pass unused. Default 2. */
  readonly listenerIdleWindows?: number;
  /**
   * Mean ms between sweeps that remove this root's expired keys (see
   * RtdbSweeper). 0 turns the timer off; `sweepOnce()` still works. Default 60000.
   */
  readonly sweepIntervalMs?: number;
  /** The rest of the sweeper's knobs (grace, batch size, ...); each documents its default. */
  readonly sweep?: RtdbSweepTuning;
  /** The sweeper's time (decisions take `nowMs` from the caller instead). Default Date.now. */
  readonly clock?: () => number;
  /** Where a failing sweep is reported (once). Default: silent. */
  readonly logger?: Logger;
  /**
   * How a transaction that gave up with `maxretry` (other writers kept winning
   * the key) is retried before the key is answered locally (src/library/limiter/contention.ts).
   * Default: 2 retries, full-jitter backoff from 20 ms.
   */
  readonly contention?: ContentionRetryOptions;
}

/**
 * What firelimit needs of a firebase-admin `Database` (`getDatabase(app)`),
 * named structurally so these declarations do not import firebase-admin.
 */
export interface RtdbDatabase {
  ref(path?: string): unknown;
}
