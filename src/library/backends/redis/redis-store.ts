import { readFileSync } from 'node:fs';
import { lateOutcomeOf, mapLateOutcome, withDeadline, withLateOutcome } from '../../limiter/backend-guard';
import { silentLogger } from '../../../shared/logger';
import type { Adjustment } from '../../window/algorithm';
import { assertValidAdjustments } from '../../window/decide-set';
import type { PolicySet } from '../../window/policy';
import type { LimitStore, StoreDecision } from '../../limiter/limit-store';
import { SET_SCRIPT, SET_SCRIPT_SHA1 } from './lua/set-script';
import { FLEET_HEARTBEAT_KEY, FLEET_HEARTBEAT_SCRIPT, FLEET_HEARTBEAT_SHA1 } from './lua/fleet-heartbeat';
import { adjustCommand, assertAdjustReply, decideCommand, decisionFromSetReply } from './redis-set-command';
import { isNoScriptError, REDIS_BAD_REPLY, REDIS_TIMEOUT, RedisStoreError } from './redis-store-error';
import { openRedisConnection, type RedisConnection } from './redis-connection';
import { RedisErrorReporter } from './redis-error-reporter';
import { parseRedisSeeds, type RedisMode } from './redis-url';
import { clusterSlotOfKey } from './cluster-slot';
import type { RedisStoreOptions } from '../../store-options';


/** The options of createRedisStore (src/library/store-options.ts: typed without the redis package). */
export type RedisWindowStoreOptions = RedisStoreOptions;

export const DEFAULT_REDIS_KEY_PREFIX = 'firelimit:';
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 1000;
export const DEFAULT_REDIS_TTL_MARGIN_MS = 10_000;
export const DEFAULT_REDIS_MAX_PENDING_COMMANDS = 1000;
type CommandArgs = readonly string[];

/** One of our scripts: its text, and the SHA1 EVALSHA names it by. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha1: string;
}

const SET: LuaScript = { name: 'policy set', source: SET_SCRIPT, sha1: SET_SCRIPT_SHA1 };
const FLEET: LuaScript = { name: 'fleet heartbeat', source: FLEET_HEARTBEAT_SCRIPT, sha1: FLEET_HEARTBEAT_SHA1 };

/**
 * Limit states in Redis, one key per policy of a limited key holding the
 * algorithm's compact string (the default single fixed window: `prefix + key`
 * = "windowNumber:count", as before). Each decision is one EVALSHA of the set
 * script (lua/set-script.ts), which runs every policy's Lua twin and writes
 * only if all allow; the script is loaded on first use and again whenever Redis answers NOSCRIPT
 * (SCRIPT FLUSH, a restart, a failover to a replica that never saw it).
 *
 * Redis being down is an outage, not a crash: the constructor only starts
 * connecting, and while disconnected every call fails at once (no offline
 * queue) so the limiter's guard can answer from the local window.
 */
export class RedisWindowStore implements LimitStore {
  readonly backend = 'redis' as const;
  readonly shared = true;

  private readonly client: RedisConnection;
  private readonly url: string;
  private readonly mode: RedisMode;
  /** Cluster only: the slot range serving a key, so the limiter keeps one outage per shard (ADR 0061). */
  readonly shardOf?: (key: string) => string | undefined;
  private readonly keyPrefix: string;
  private readonly ttlMarginArg: string;
  private readonly commandTimeoutMs: number;
  /** Per script and shard (the routing key's node): one SCRIPT LOAD however many calls met NOSCRIPT there at once. */
  private readonly scriptLoading = new Map<string, Promise<void>>();
  private readonly errors: RedisErrorReporter;
  private scriptLoadCount = 0;
  private closed = false;

  constructor(options: RedisWindowStoreOptions) {
    this.mode = options.mode ?? 'standalone';
    const seeds = parseRedisSeeds(options.url, this.mode);
    const commandTimeoutMs = positiveInteger('commandTimeoutMs', options.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS);
    const ttlMarginMs = positiveInteger('ttlMarginMs', options.ttlMarginMs ?? DEFAULT_REDIS_TTL_MARGIN_MS);
    const maxPending = positiveInteger('maxPendingCommands', options.maxPendingCommands ?? DEFAULT_REDIS_MAX_PENDING_COMMANDS);
    this.url = options.url;
    this.keyPrefix = options.keyPrefix ?? DEFAULT_REDIS_KEY_PREFIX;
    if (this.mode === 'cluster' && /[{}]/.test(this.keyPrefix)) {
      throw new RangeError('RedisWindowStore: in cluster mode keyPrefix may not contain "{" or "}": the store puts the hash tag around each limited key itself, and a tag in the prefix would put every key on one shard');
    }
    if (options.tlsCaFile !== undefined && !seeds.every((seed) => seed.tls)) {
      throw new RangeError('RedisWindowStore: tlsCaFile is set but the URL is redis://; use rediss:// for TLS, or drop the CA file');
    }
    this.ttlMarginArg = String(ttlMarginMs);
    this.commandTimeoutMs = commandTimeoutMs;
    const logger = options.logger ?? silentLogger;
    this.errors = new RedisErrorReporter({ url: options.url, mode: this.mode, commandTimeoutMs, logger, isReady: () => this.client.isReady });
    this.client = openRedisConnection({
      mode: this.mode,
      seeds,
      ...(options.tlsCaFile !== undefined ? { tlsCa: readFileSync(options.tlsCaFile, 'utf8') } : {}),
      maxPendingCommands: maxPending,
      commandTimeoutMs,
      onError: (error) => {
        if (!this.closed) this.errors.markDown(error);
      },
      onReady: () => this.errors.markUp(),
    });
    if (this.mode === 'cluster') {
      const client = this.client;
      // The slot of the decision's keys (each starts with the prefix and the tag): computed here, not asked of the cluster.
      this.shardOf = (key) => client.shardOfSlot?.(clusterSlotOfKey(this.keyPrefix + this.tagged(key)));
    }
  }

  /** SCRIPT LOADs performed so far (first use, and each NOSCRIPT); for tests and metrics. */
  get scriptLoads(): number {
    return this.scriptLoadCount;
  }

  /**
   * Resolves true once connected, or false after `timeoutMs`; never rejects.
   * For startup warm-up and tests: consume works without it, failing fast until connected.
   */
  async whenReady(timeoutMs: number): Promise<boolean> {
    if (this.client.isReady) return true;
    if (this.closed) return false;
    return this.client.whenReady(timeoutMs);
  }

  async consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    let reply: unknown;
    try {
      reply = await this.evalScript(SET, decideCommand(this.keyPrefix, this.tagged(key), nowMs, this.ttlMarginArg, policies, cost));
    } catch (error) {
      throw lateAs(error, (late) => decisionFromSetReply(late, policies));
    }
    return decisionFromSetReply(reply, policies);
  }

  async adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    assertValidAdjustments(policies, adjustments);
    let reply: unknown;
    try {
      reply = await this.evalScript(SET, adjustCommand(this.keyPrefix, this.tagged(key), nowMs, this.ttlMarginArg, policies, adjustments));
    } catch (error) {
      throw lateAs(error, (late) => assertAdjustReply(late, policies));
    }
    assertAdjustReply(reply, policies);
  }

  /**
   * The limited key as its Redis keys start after the prefix. In a cluster
   * it is the hash tag, `{key}`: every key of one decision (one per policy,
   * `{key}:slot`) then hashes to one slot, so the set stays one script on one
   * shard, while different limited keys spread over all shards. A `}` inside
   * the key ends the tag early, but at the same place in every key of the
   * decision, so they still share a slot. A key that starts with `}` would
   * make the tag empty, and Redis then hashes each whole key, a decision's
   * keys to different slots (CROSSSLOT; found by test/integration/redis-cluster.test.ts):
   * such keys get a control character before them, which no valid key holds
   * (key.ts), so the names stay distinct and the tag is that one character.
   */
  private tagged(key: string): string {
    if (this.mode !== 'cluster') return key;
    return key.startsWith('}') ? `{\u0001${key}}` : `{${key}}`;
  }

  /**
   * Runs another of our scripts on this connection, with the deadline, the
   * NOSCRIPT reload and the scrubbed errors every decision gets: stores of
   * another shape (the upstream quota) share the connection instead of
   * opening their own. Keys get this store's prefix; in a cluster the first
   * key is the hash tag of them all, so every other key must be the first
   * plus a suffix (`q`, `q:holds`), and one call stays on one shard.
   */
  async runScript(script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const first = keys[0];
    if (first !== undefined && keys.some((key) => !key.startsWith(first))) {
      throw new TypeError(`runScript: every key of one ${script.name} call must start with its first key, so they share one hash tag`);
    }
    const tag = first === undefined ? '' : this.tagged(first);
    return this.evalScript(script, ['EVALSHA', script.sha1, String(keys.length), ...keys.map((key) => this.keyPrefix + tag + key.slice(tag === '' ? 0 : (first as string).length)), ...args]);
  }

  async heartbeat(instanceId: string, nowMs: number, ttlMs: number): Promise<number> {
    return Number(await this.runScript(FLEET, [FLEET_HEARTBEAT_KEY], [instanceId, String(nowMs), String(ttlMs), 'beat']));
  }

  async leaveFleet(instanceId: string): Promise<void> {
    await this.runScript(FLEET, [FLEET_HEARTBEAT_KEY], [instanceId, '0', '0', 'leave']);
  }

  /** One PING on the store's own connection: a cheap probe for outage handling, and the bench's baseline. */
  async ping(): Promise<void> {
    await this.send(['PING'], undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // destroy, not close: close waits for replies, and a stalled Redis would never send them.
    this.client.destroy();
  }

  private async evalScript(script: LuaScript, command: CommandArgs): Promise<unknown> {
    // EVALSHA sha numkeys key...: the first key routes the call to its shard.
    const routingKey = command[2] === '0' ? undefined : command[3];
    try {
      return await this.sendWithDeadline(command, routingKey);
    } catch (error) {
      if (!isNoScriptError(error)) throw this.errors.toStoreError(error);
    }
    await this.loadScript(script, routingKey);
    return this.send(command, routingKey);
  }

  /** One SCRIPT LOAD per script and shard however many calls met NOSCRIPT there at once. */
  private loadScript(script: LuaScript, routingKey: string | undefined): Promise<void> {
    const shard = this.mode === 'cluster' && routingKey !== undefined ? `${script.sha1}@${routingKey}` : script.sha1;
    let loading = this.scriptLoading.get(shard);
    if (loading === undefined) {
      loading = this.deadline(() => this.client.loadScript(script.source, routingKey))
        .catch((error: unknown) => {
          throw this.errors.toStoreError(error);
        })
        .then((sha) => {
          this.scriptLoadCount += 1;
          if (sha !== script.sha1) {
            throw new RedisStoreError(REDIS_BAD_REPLY, `redis SCRIPT LOAD returned an unexpected SHA1 for the ${script.name} script`);
          }
        })
        .finally(() => {
          this.scriptLoading.delete(shard);
        });
      this.scriptLoading.set(shard, loading);
    }
    return loading;
  }

  private async send(command: CommandArgs, routingKey: string | undefined): Promise<unknown> {
    try {
      return await this.sendWithDeadline(command, routingKey);
    } catch (error) {
      throw this.errors.toStoreError(error);
    }
  }

  /**
   * The client's own `timeout` only covers a command's wait to be written; once
   * on the wire it would wait for a stalled (SIGSTOPped, partitioned) server
   * forever. So the deadline is ours. The abandoned command keeps its slot in
   * the client's queue until the server answers or the socket drops, which
   * `maxPendingCommands` bounds: past it, calls fail at once instead of piling up.
   */
  private async sendWithDeadline(command: CommandArgs, routingKey: string | undefined): Promise<unknown> {
    try {
      return await this.deadline(() => this.client.send(command, routingKey));
    } catch (error) {
      if (error instanceof RedisStoreError && error.code === REDIS_TIMEOUT) this.client.suspect(routingKey);
      throw error;
    }
  }

  private async deadline(call: () => Promise<unknown>): Promise<unknown> {
    // withDeadline subscribes to the reply, so its late rejection (after the deadline won) is not unhandled.
    const result = await withDeadline(call, this.commandTimeoutMs);
    if (result.ok) {
      this.errors.answered();
      return result.value;
    }
    if (result.cause === 'timeout') {
      // The command is on the wire and may still run: the error says how it ended, so the limiter counts it once.
      throw withLateOutcome(new RedisStoreError(REDIS_TIMEOUT, `redis command did not complete within ${this.commandTimeoutMs} ms`), result.late ?? Promise.resolve({ landed: false }));
    }
    throw result.error;
  }
}

/** A timed-out command's late outcome, seen as the store's answer (a raw reply parsed) instead of the raw reply. */
function lateAs(error: unknown, parse: (reply: unknown) => unknown): unknown {
  const late = lateOutcomeOf(error);
  return late === undefined ? error : withLateOutcome(error as object, mapLateOutcome(late, parse));
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`RedisWindowStore: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}
