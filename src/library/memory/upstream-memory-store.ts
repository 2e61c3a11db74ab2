import { assertValidKey } from '../window/key';
import { holderIdOf, type UpstreamCaller } from '../schedule/upstream-holder';
import { assertValidUpstreamPolicy, type UpstreamPolicy } from '../schedule/upstream-policy';
import type { UpstreamQuotaStore, UpstreamScheduled } from '../schedule/upstream-quota-store';
import { scheduleUpstream } from '../schedule/upstream-schedule';
import type { UpstreamState } from '../schedule/upstream-state';

/**
 * The upstream quota in this process only (one instance, tests). Atomic
 * because the decision runs synchronously between two awaits. One entry per
 * quota key, and quota keys come from config, so the map stays as small as
 * the config; nothing is evicted, so a caller whose clock lags never finds a
 * forgotten cursor.
 */
export class MemoryUpstreamQuotaStore implements UpstreamQuotaStore {
  readonly backend = 'memory' as const;
  private readonly states = new Map<string, UpstreamState>();

  schedule(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy, restore: UpstreamState | null = null): Promise<UpstreamScheduled> {
    try {
      return Promise.resolve(this.scheduleSync(key, nowMs, caller, policy, restore));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  scheduleSync(key: string, nowMs: number, caller: UpstreamCaller, policy: UpstreamPolicy, restore: UpstreamState | null = null): UpstreamScheduled {
    assertValidKey(key);
    assertValidUpstreamPolicy(policy);
    if (!Number.isSafeInteger(nowMs)) throw new RangeError(`nowMs must be an integer, got ${nowMs}`);
    const state = this.states.get(key) ?? restore;
    const { outcome, next } = scheduleUpstream(state, nowMs, holderIdOf(caller), policy, caller.claimSlotAtMs ?? null);
    if (next !== null) this.states.set(key, next);
    return { outcome, state: next ?? state };
  }

  /** Drops `key`'s state, so the next call starts from its `restore` (or empty). */
  forget(key: string): void {
    this.states.delete(key);
  }

  /** The state held for `key` (null: none), without touching it. */
  peek(key: string): UpstreamState | null {
    return this.states.get(key) ?? null;
  }

  async close(): Promise<void> {
    this.states.clear();
  }
}
