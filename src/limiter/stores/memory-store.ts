import { decideFixedWindow, type FixedWindowState } from '../algorithms/fixed-window';
import type { WindowDecision } from '../decision';
import type { RateLimitPolicy } from '../policy';
import type { WindowStore } from '../window-store';

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

  private current = new Map<string, FixedWindowState>();
  private previous = new Map<string, FixedWindowState>();
  private rotationMs = 0;
  private generationStartMs = Number.NEGATIVE_INFINITY;

  async consume(key: string, nowMs: number, policy: RateLimitPolicy, cost: number): Promise<WindowDecision> {
    return this.consumeSync(key, nowMs, policy, cost);
  }

  /** Synchronous twin of consume, for the local fallback path that must not wait. */
  consumeSync(key: string, nowMs: number, policy: RateLimitPolicy, cost: number): WindowDecision {
    this.rotate(nowMs, policy.windowMs);
    let state = this.current.get(key);
    if (state === undefined) {
      state = this.previous.get(key);
      if (state !== undefined) {
        this.previous.delete(key);
        this.current.set(key, state);
      }
    }
    const { decision, next } = decideFixedWindow(state ?? null, nowMs, policy, cost);
    if (next !== null) this.current.set(key, next);
    return decision;
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
