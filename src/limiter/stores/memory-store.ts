import { adjustFixedWindow, assertValidAdjustment, decideFixedWindow, type WindowAdjustment } from '../algorithms/fixed-window';
import type { WindowDecision } from '../decision';
import type { RateLimitPolicy } from '../policy';
import type { WindowStore } from '../window-store';

interface MutableState {
  windowNumber: number;
  count: number;
}

/**
 * Windows in this process only. Two generations of maps rotate every
 * `rotationMs` (the longest window seen): a key not touched for two rotations
 * is dropped wholesale, so memory is bounded by the keys active in the last
 * two windows, with no per-key timers and no sweep. A dropped key's window had
 * already ended, so eviction never forgets a live count.
 */
export class MemoryWindowStore implements WindowStore {
  readonly backend = 'memory' as const;
  readonly shared = false;

  // Values are this store's own mutable copies, updated in place: one map
  // lookup per decision instead of a lookup and a set.
  private current = new Map<string, MutableState>();
  private previous = new Map<string, MutableState>();
  private rotationMs = 0;
  private generationStartMs = Number.NEGATIVE_INFINITY;

  consume(key: string, nowMs: number, policy: RateLimitPolicy, cost: number): Promise<WindowDecision> {
    // Not an async function: it would add a second promise per decision.
    try {
      return Promise.resolve(this.consumeSync(key, nowMs, policy, cost));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  adjust(key: string, nowMs: number, policy: RateLimitPolicy, adjustment: WindowAdjustment): Promise<void> {
    try {
      this.adjustSync(key, nowMs, policy, adjustment);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  adjustSync(key: string, nowMs: number, policy: RateLimitPolicy, adjustment: WindowAdjustment): void {
    assertValidAdjustment(adjustment);
    const state = this.stateOf(key, nowMs, policy.windowMs);
    const next = adjustFixedWindow(state ?? null, nowMs, policy, adjustment);
    if (next === null) return;
    this.store(key, state, next);
  }

  /** Synchronous twin of consume, for the local fallback path that must not wait. */
  consumeSync(key: string, nowMs: number, policy: RateLimitPolicy, cost: number): WindowDecision {
    const state = this.stateOf(key, nowMs, policy.windowMs);
    const { decision, next } = decideFixedWindow(state ?? null, nowMs, policy, cost);
    if (next !== null) this.store(key, state, next);
    return decision;
  }

  /** The key's state, moved into the current generation when found in the previous one. */
  private stateOf(key: string, nowMs: number, windowMs: number): MutableState | undefined {
    this.rotate(nowMs, windowMs);
    let state = this.current.get(key);
    if (state === undefined) {
      state = this.previous.get(key);
      if (state !== undefined) {
        this.previous.delete(key);
        this.current.set(key, state);
      }
    }
    return state;
  }

  private store(key: string, state: MutableState | undefined, next: { windowNumber: number; count: number }): void {
    if (state === undefined) {
      this.current.set(key, { windowNumber: next.windowNumber, count: next.count });
    } else {
      state.windowNumber = next.windowNumber;
      state.count = next.count;
    }
  }

  /** Keys held now, both generations; for tests and metrics. */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  async close(): Promise<void> {
    this.current.clear();
    this.previous.clear();
  }

  private rotate(nowMs: number, windowMs: number): void {
    if (windowMs > this.rotationMs) this.rotationMs = windowMs;
    const elapsedMs = nowMs - this.generationStartMs;
    if (elapsedMs < this.rotationMs) return;
    if (elapsedMs >= 2 * this.rotationMs) {
      this.previous = new Map();
    } else {
      this.previous = this.current;
    }
    this.current = new Map();
    // Aligned to window boundaries, so the two generations span at most the
    // last two windows even when traffic starts mid-window.
    this.generationStartMs = Math.floor(nowMs / this.rotationMs) * this.rotationMs;
  }
}
