import { assertValidKey } from '../../window/key';
import { holderIdOf, type UpstreamCaller } from '../../schedule/upstream-holder';
import { assertValidUpstreamPolicy, type UpstreamPolicy } from '../../schedule/upstream-policy';
import type { UpstreamQuotaStore, UpstreamScheduled } from '../../schedule/upstream-quota-store';
import type { UpstreamState } from '../../schedule/upstream-state';
import { DEFAULT_UPSTREAM_TTL_MARGIN_MS, scheduledFromReply, UPSTREAM_SCHEDULE_SCRIPT, UPSTREAM_SCHEDULE_SHA1, upstreamScheduleArgs, upstreamScheduleKeys } from './lua/upstream-schedule';
import type { LuaScript, RedisWindowStore } from './redis-store';
import { REDIS_BAD_REPLY, RedisStoreError } from './redis-store-error';

export interface RedisUpstreamQuotaStoreOptions {
  /** The limit store whose connection this shares (its prefix, deadline and outage handling). */
  readonly redis: RedisWindowStore;
  /** Before the quota key, after the connection's prefix. Default 'upstream:'. */
  readonly keyPrefix?: string;
  /** How long a state outlives its expiry, for instances whose clocks lag. Default 10000. */
  readonly ttlMarginMs?: number;
}

const SCRIPT: LuaScript = { name: 'upstream schedule', source: UPSTREAM_SCHEDULE_SCRIPT, sha1: UPSTREAM_SCHEDULE_SHA1 };

/**
 * The upstream quota in Redis: one EVALSHA of the scheduler's Lua twin
 * (lua/upstream-schedule.ts) per call on `prefix + 'upstream:' + key` (the
 * head) and its two sorted sets of reservations beside it (`:r`, `:h`), which
 * share its hash tag in a cluster. Redis runs a script alone, so the read,
 * the decision and the write are one step; a rejection writes nothing. The
 * state answered is a view: the head and the first UPSTREAM_VIEW_LIMIT
 * reservations (docs/adr/0063-upstream-reservations-in-sorted-sets.md).
 */
export class RedisUpstreamQuotaStore implements UpstreamQuotaStore {
  readonly backend = 'redis' as const;
  private readonly redis: RedisWindowStore;
  private readonly keyPrefix: string;
  private readonly ttlMarginMs: number;

  constructor(options: RedisUpstreamQuotaStoreOptions) {
    this.redis = options.redis;
    this.keyPrefix = options.keyPrefix ?? 'upstream:';
    this.ttlMarginMs = options.ttlMarginMs ?? DEFAULT_UPSTREAM_TTL_MARGIN_MS;
    if (!Number.isSafeInteger(this.ttlMarginMs) || this.ttlMarginMs < 1) {
      throw new RangeError(`RedisUpstreamQuotaStore: ttlMarginMs must be a positive integer, got ${this.ttlMarginMs}`);
    }
  }

  async schedule(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy, restore: UpstreamState | null = null): Promise<UpstreamScheduled> {
    assertValidKey(key);
    assertValidUpstreamPolicy(policy);
    if (!Number.isSafeInteger(nowMs) || nowMs < 0) throw new RangeError(`nowMs must be a non-negative integer, got ${nowMs}`);
    const reply = await this.redis.runScript(SCRIPT, upstreamScheduleKeys(this.keyPrefix + key), upstreamScheduleArgs(nowMs, holderIdOf(caller), policy, this.ttlMarginMs, restore, caller.claimSlotAtMs ?? null));
    try {
      return scheduledFromReply(reply);
    } catch {
      throw new RedisStoreError(REDIS_BAD_REPLY, 'redis upstream schedule script returned an unexpected reply');
    }
  }

  /** The connection belongs to the limit store; closing it is the owner's call. */
  async close(): Promise<void> {}
}
