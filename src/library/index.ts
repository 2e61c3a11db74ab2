/**
 * `firelimit`: the limiter, its stores and the types of its answers. What
 * this file exports is the package's contract (semver from 0.x, CHANGELOG.md);
 * nothing outside src/library imports past it (lint: eslint.config.mjs).
 * Nothing here loads `redis` or `firebase-admin` until their store is created.
 */

// The limiter
export { createRateLimiter, DEFAULT_PROBE_INTERVAL_MS, DEFAULT_TIMEOUT_MS, type RateLimiterOptions } from './limiter/create-rate-limiter';
export type { ConsumeOptions, FailurePolicy, RateLimiter } from './limiter/rate-limiter';
export type { LimiterEvents } from './limiter/limiter-events';
export { OutageGuard, MIN_OUTAGE_RETRY_AFTER_MS, type OutageGuardOptions, type OutageState } from './limiter/outage-guard';
export { outageGuardFor, ShardedGuard } from './limiter/sharded-guard';
export type { BackendFailureCause, BackendGuard } from './limiter/backend-guard';
export { WaitBudget } from './limiter/wait-budget';
export { FleetEstimate, DEFAULT_FLEET_INTERVAL_MS, type FleetEstimateOptions } from './limiter/fleet-estimate';
export { OUTAGE_SHARE_MODES, type OutageShareMode } from './limiter/outage-share';

// Stores
export { createMemoryStore, createRedisStore, createRtdbStore, createSqliteStore, type RtdbStoreOptions, type SqliteStoreOptions } from './stores';
export { findNodeSqlite, NODE_SQLITE_MINIMUM, SqliteUnavailableError, sqliteUnavailableMessage } from './backends/sqlite/node-sqlite';
export type { RedisStoreOptions, RtdbDatabase, RtdbStoreTuning, RtdbSweepTuning } from './store-options';
export { BACKEND_NAMES, type BackendName, type LimitStore, type StoreDecision } from './limiter/limit-store';
export { InvalidRedisUrlError, parseRedisSeeds, type RedisMode } from './backends/redis/redis-url';

// Policies and decisions
export { ALGORITHM_NAMES, BURST_ALGORITHMS, hasBurst, type AlgorithmName } from './window/algorithm';
export { algorithmOf, assertValidPolicySet, MAX_POLICIES_PER_SET, MAX_SLIDING_LOG_LIMIT, type PolicySet, type RateLimitPolicy } from './window/policy';
export type { HotKeyLeaseOptions } from './window/hot-key-lease';
export type { Decision, DecisionReason, PolicyDecision } from './window/decision';
export { combineDecisions } from './window/combine-decisions';
export { describePolicy, type PolicyDescription } from './window/describe-policy';
export { encodeKeyPart, InvalidKeyError, MAX_KEY_BYTES } from './window/key';
/** For tools that show what a policy would answer without a store (the /developers page): the pure algorithm of a policy. */
export { algorithmFor } from './window/decide-set';
/** The Decision a limiter returns for a set of per-policy answers (the tightest leads). */
export { toDecision } from './limiter/limiter-decisions';

// The logging port a limiter and its stores log through
export { createLogger, silentLogger, type LogFields, type Logger, type LogSink, type Severity } from '../shared/logger';
