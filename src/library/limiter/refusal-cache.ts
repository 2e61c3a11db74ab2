import { decideSet, setExpiresAtMs, type SetDecision } from '../window/decide-set';
import type { PolicySet } from '../window/policy';

/** Bound on the cache; past it, expired entries are swept before adding. */
export const MAX_REFUSED_KEYS = 100_000;

interface Entry {
  readonly states: readonly unknown[];
  readonly untilMs: number;
}

/**
 * Keys the shared store refused, with the states it reported, so a client
 * that keeps calling while over its limit costs no round trip: the pure
 * decision is re-run on those states. Others can only spend more of a shared
 * budget, so a refusal computed on an older state is still true; a call the
 * cached states would allow goes to the store (and the entry goes). No clock:
 * the limiter passes `nowMs`.
 */
export class RefusalCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxKeys = MAX_REFUSED_KEYS) {}

  get size(): number {
    return this.entries.size;
  }

  /** The refusal the cached states give this call, or undefined: ask the store. */
  refusal(cacheKey: string, nowMs: number, policies: PolicySet, cost: number): SetDecision | undefined {
    const entry = this.entries.get(cacheKey);
    if (entry === undefined) return undefined;
    // A cost-0 read is always allowed, so it falls through to the store like any call these states allow.
    if (nowMs < entry.untilMs) {
      const result = decideSet(entry.states, nowMs, policies, cost);
      if (!result.allowed) return result;
    }
    if (cost > 0 || nowMs >= entry.untilMs) this.entries.delete(cacheKey);
    return undefined;
  }

  /** Remembers a refusal of the shared store, until its states are empty again. */
  remember(cacheKey: string, states: readonly unknown[], policies: PolicySet, nowMs: number): void {
    const untilMs = setExpiresAtMs(states, policies);
    if (untilMs === null || untilMs <= nowMs) return;
    if (this.entries.size >= this.maxKeys) {
      for (const [k, entry] of this.entries) if (entry.untilMs <= nowMs) this.entries.delete(k);
      // Still full of live entries: forget the oldest; the store will refuse it again anyway.
      if (this.entries.size >= this.maxKeys) {
        const oldest = this.entries.keys().next();
        if (!oldest.done) this.entries.delete(oldest.value);
      }
    }
    this.entries.set(cacheKey, { states, untilMs });
  }

  /**
   * A read that reached the store (cost 0) replaces the states cached for the
   * key, if any: other instances may have refunded since, which the cached
   * states cannot know. States that still refuse keep refusing without the
   * store; states that allow let the next call through to it.
   */
  refresh(cacheKey: string, states: readonly unknown[], policies: PolicySet, nowMs: number): void {
    if (!this.entries.has(cacheKey)) return;
    this.entries.delete(cacheKey);
    this.remember(cacheKey, states, policies, nowMs);
  }

  /** A refund made the key less spent than the cached states say. */
  forget(cacheKey: string): void {
    this.entries.delete(cacheKey);
  }

  clear(): void {
    this.entries.clear();
  }
}
