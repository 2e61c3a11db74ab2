import { silentLogger, type Logger } from '../../../shared/logger';
import type { Adjustment } from '../../window/algorithm';
import { compiledSetOf, type CompiledPolicySet } from '../../window/compiled-policy-set';
import { adjustSet, assertValidAdjustments, decideSet } from '../../window/decide-set';
import type { LimitStore, StoreDecision } from '../../limiter/limit-store';
import type { PolicySet, RateLimitPolicy } from '../../window/policy';
import { STATE_CODECS } from '../../support/state-codecs';
import type { NodeSqliteModule } from './node-sqlite';
import { SqliteConnection } from './sqlite-connection';
import { SqliteSweeper } from './sqlite-sweeper';

export interface SqliteWindowStoreOptions {
  /** The database file (SQLITE_PATH); its directory is created. Every process given this file shares the counters. */
  readonly path: string;
  /** Each limiter counts in its own key space in the one file. Default 'limits'. */
  readonly namespace?: string;
  /**
   * SQLite's busy timeout: the longest a decision waits for another process's
   * write lock, then fails to the outage guard. The service passes
   * RATE_LIMIT_TIMEOUT_MS, one deadline as for Redis. Default 1000.
   */
  readonly timeoutMs?: number;
  /** How long a row outlives its state's expiry before the sweep removes it, for a clock that steps back. Default 10000. */
  readonly lagMarginMs?: number;
  /** How often expired rows are swept; 0: never (tests with injected times in the past). Default 60000. */
  readonly sweepIntervalMs?: number;
  /** The sweep's clock, the one the decisions' nowMs comes from. Default Date.now. */
  readonly clock?: () => number;
  /** Default: silent. */
  readonly logger?: Logger;
  /** node:sqlite; default: this runtime's, refused with the remedy where it has none. */
  readonly sqlite?: NodeSqliteModule;
}

export const DEFAULT_SQLITE_NAMESPACE = 'limits';
export const DEFAULT_SQLITE_TIMEOUT_MS = 1000;
export const DEFAULT_SQLITE_LAG_MARGIN_MS = 10_000;
export const DEFAULT_SQLITE_SWEEP_INTERVAL_MS = 60_000;

const SELECT_ONE = 'SELECT value FROM firelimit_limits WHERE namespace = ? AND key = ? AND slot = ?';
const SELECT_KEY = 'SELECT slot, value FROM firelimit_limits WHERE namespace = ? AND key = ?';
const UPSERT = `INSERT INTO firelimit_limits (namespace, key, slot, value, expires_at_ms) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (namespace, key, slot) DO UPDATE SET value = excluded.value, expires_at_ms = excluded.expires_at_ms`;
const DELETE_SLOT = 'DELETE FROM firelimit_limits WHERE namespace = ? AND key = ? AND slot = ?';
/** The fleet's heartbeats (ADR 0067) are rows of one key no limit can have ('.' is in no valid key): slot = instance id, value = its last beat; the sweep removes them with their expiry. */
const FLEET_KEY = 'fleet.instances';
const COUNT_LIVE = 'SELECT count(*) AS live FROM firelimit_limits WHERE namespace = ? AND key = ? AND CAST(value AS INTEGER) >= ?';

/**
 * Limit states in one SQLite file on this host: one row per policy of a
 * limited key, holding the algorithm's compact string (state-codecs.ts, the
 * form Redis and RTDB keep). Each decision is one BEGIN IMMEDIATE transaction
 * that reads the key's rows, runs the pure decideSet and writes only if every
 * policy allows, so all processes on the file (one host's workers, a restart)
 * see one count. A locked or failing file is an outage, not a crash: the
 * SqliteStoreError goes to the limiter's guard and its failure policy.
 */
export class SqliteWindowStore implements LimitStore {
  readonly backend = 'sqlite' as const;
  readonly shared = true;
  readonly connection: SqliteConnection;

  private readonly namespace: string;
  private readonly lagMarginMs: number;
  private readonly sweeper: SqliteSweeper;

  constructor(options: SqliteWindowStoreOptions) {
    const timeoutMs = positiveInteger('timeoutMs', options.timeoutMs ?? DEFAULT_SQLITE_TIMEOUT_MS);
    this.lagMarginMs = nonNegativeInteger('lagMarginMs', options.lagMarginMs ?? DEFAULT_SQLITE_LAG_MARGIN_MS);
    const sweepIntervalMs = nonNegativeInteger('sweepIntervalMs', options.sweepIntervalMs ?? DEFAULT_SQLITE_SWEEP_INTERVAL_MS);
    this.namespace = options.namespace ?? DEFAULT_SQLITE_NAMESPACE;
    if (this.namespace === '') throw new TypeError('SqliteWindowStore: namespace must not be empty');
    this.connection = new SqliteConnection({ path: options.path, busyTimeoutMs: timeoutMs, logger: options.logger ?? silentLogger, ...(options.sqlite !== undefined ? { sqlite: options.sqlite } : {}) });
    this.sweeper = new SqliteSweeper({ connection: this.connection, namespace: this.namespace, graceMs: this.lagMarginMs });
    if (sweepIntervalMs > 0) this.sweeper.start(sweepIntervalMs, options.clock ?? Date.now, options.logger ?? silentLogger);
  }

  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    // Not an async function: the work is synchronous, and a second promise per decision is waste.
    try {
      return Promise.resolve(this.consumeSync(key, nowMs, policies, cost));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    try {
      assertValidAdjustments(policies, adjustments);
      this.connection.immediate(() => {
        const set = compiledSetOf(policies);
        const next = adjustSet(this.read(key, set), nowMs, policies, adjustments);
        if (next !== null) this.write(key, set, next);
      });
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  consumeSync(key: string, nowMs: number, policies: PolicySet, cost: number): StoreDecision {
    const set = compiledSetOf(policies);
    return this.connection.immediate(() => {
      const result = decideSet(this.read(key, set), nowMs, policies, cost);
      if (result.changed) this.write(key, set, result.states);
      return result;
    });
  }

  heartbeat(instanceId: string, nowMs: number, ttlMs: number): Promise<number> {
    try {
      const live = this.connection.immediate(() => {
        this.connection.statement(UPSERT).run(this.namespace, FLEET_KEY, instanceId, String(nowMs), nowMs + 2 * ttlMs);
        return Number(this.connection.statement(COUNT_LIVE).get(this.namespace, FLEET_KEY, nowMs - ttlMs)?.live ?? 1);
      });
      return Promise.resolve(live);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async leaveFleet(instanceId: string): Promise<void> {
    this.connection.immediate(() => this.connection.statement(DELETE_SLOT).run(this.namespace, FLEET_KEY, instanceId));
  }

  /** Removes the rows that expired more than the lag margin before `nowMs`; the number removed. */
  sweep(nowMs: number): number {
    return this.sweeper.sweepOnce(nowMs);
  }

  async close(): Promise<void> {
    this.sweeper.stop();
    this.connection.close();
  }

  /** The key's states under the set, parsed by each policy's codec: junk, like a missing row, is empty. */
  private read(key: string, set: CompiledPolicySet): unknown[] {
    if (set.size === 1) {
      const row = this.connection.statement(SELECT_ONE).get(this.namespace, key, set.slots[0] as string);
      return [parse(set, 0, row?.value)];
    }
    const values = new Map<string, unknown>();
    for (const row of this.connection.statement(SELECT_KEY).all(this.namespace, key)) values.set(row.slot as string, row.value);
    return set.slots.map((slot, i) => parse(set, i, values.get(slot)));
  }

  private write(key: string, set: CompiledPolicySet, states: readonly unknown[]): void {
    for (let i = 0; i < set.size; i++) {
      const slot = set.slots[i] as string;
      const state = states[i] ?? null;
      if (state === null) {
        this.connection.statement(DELETE_SLOT).run(this.namespace, key, slot);
        continue;
      }
      const policy = set.policies[i] as RateLimitPolicy;
      // The state's own expiry; the sweep adds the lag margin when it judges a row old.
      const expiresAtMs = (set.algorithms[i] as CompiledPolicySet['algorithms'][number]).expiresAtMs(state, policy);
      const value = STATE_CODECS[set.algorithmNames[i] as keyof typeof STATE_CODECS].format(state);
      this.connection.statement(UPSERT).run(this.namespace, key, slot, value, expiresAtMs);
    }
  }
}

function parse(set: CompiledPolicySet, index: number, value: unknown): unknown {
  if (typeof value !== 'string') return null;
  return STATE_CODECS[set.algorithmNames[index] as keyof typeof STATE_CODECS].parse(value);
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`SqliteWindowStore: ${name} must be a positive integer, got ${value}`);
  return value;
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`SqliteWindowStore: ${name} must be a non-negative integer, got ${value}`);
  return value;
}
