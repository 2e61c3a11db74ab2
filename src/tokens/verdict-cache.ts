import type { AuthenticatedToken, CachedVerdict } from './token-record';

/**
 * A bounded map from a credential's hash to what verifying it found, each
 * entry with its own expiry. Iteration order is use order (re-inserted on
 * hit), so the least recently used entry is evicted first.
 */
export class VerdictCache<V> {
  private readonly map = new Map<string, { readonly value: V; readonly expiresAtMs: number }>();
  constructor(private readonly maxEntries: number) {
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
  }

  get size(): number {
    return this.map.size;
  }

  get(key: string, nowMs: number): V | undefined {
    const entry = this.map.get(key);
    if (entry === undefined) return undefined;
    this.map.delete(key);
    if (entry.expiresAtMs <= nowMs) return undefined;
    this.map.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V, expiresAtMs: number): void {
    this.map.delete(key);
    while (this.map.size >= this.maxEntries) {
      const oldest = this.map.keys().next();
      if (oldest.done) break;
      this.map.delete(oldest.value);
    }
    this.map.set(key, { value, expiresAtMs });
  }

  delete(key: string): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }
}

const INVALID: CachedVerdict = { kind: 'invalid' };
const UNKNOWN: CachedVerdict = { kind: 'unknown' };

/**
 * What a token verifier remembers: valid and invalid verdicts in two bounded
 * caches, so a flood of bad credentials (invalid verdicts) cannot evict the
 * callers who are known good, plus the verifications in flight, so concurrent
 * asks for one hash share one check. The verifier keeps its own checks and
 * decides how long each verdict lives.
 */
export class VerdictCaches {
  private readonly valid: VerdictCache<AuthenticatedToken>;
  private readonly invalid: VerdictCache<true>;
  private readonly inFlight = new Map<string, Promise<AuthenticatedToken | undefined>>();

  /** @param maxEntries entries kept per kind (valid, invalid). */
  constructor(maxEntries: number) {
    this.valid = new VerdictCache(maxEntries);
    this.invalid = new VerdictCache(maxEntries);
  }

  get sizes(): { valid: number; invalid: number } {
    return { valid: this.valid.size, invalid: this.invalid.size };
  }

  /** The cached verdict for `hash` at `nowMs`, else the one in flight, else `verify()`'s, shared until it settles. */
  get(hash: string, nowMs: number, verify: () => Promise<AuthenticatedToken | undefined>): Promise<AuthenticatedToken | undefined> {
    const valid = this.valid.get(hash, nowMs);
    if (valid !== undefined) return Promise.resolve(valid);
    if (this.invalid.get(hash, nowMs) !== undefined) return Promise.resolve(undefined);
    const pending = this.inFlight.get(hash);
    if (pending !== undefined) return pending;
    const check = verify().finally(() => this.inFlight.delete(hash));
    this.inFlight.set(hash, check);
    return check;
  }

  /** Records a verdict (a token, or undefined for invalid) until `expiresAtMs`, replacing any of the other kind. */
  remember(hash: string, token: AuthenticatedToken | undefined, expiresAtMs: number): void {
    if (token !== undefined) {
      this.invalid.delete(hash);
      this.valid.set(hash, token, expiresAtMs);
    } else {
      this.valid.delete(hash);
      this.invalid.set(hash, true, expiresAtMs);
    }
  }

  /** The cached verdict for `hash` at `nowMs`, without verifying anything. */
  peek(hash: string, nowMs: number): CachedVerdict {
    const valid = this.valid.get(hash, nowMs);
    if (valid !== undefined) return { kind: 'valid', token: valid };
    return this.invalid.get(hash, nowMs) !== undefined ? INVALID : UNKNOWN;
  }

  /** Forgets every cached verdict; verifications in flight still settle and are remembered. */
  clear(): void {
    this.valid.clear();
    this.invalid.clear();
  }
}
