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
