/**
 * What the pool needs of what it holds: whether calls still run on it, and
 * how to let it go (an upstream session: closed, at once or once its calls
 * have ended).
 */
export interface PooledSession {
  busy(): boolean;
  retire(): void;
}

export interface SessionPoolOptions<T extends PooledSession> {
  /** The most sessions kept open; past it the least recently used one is retired. */
  readonly maxSessions: number;
  /** A session unused this long, with no call running on it, is retired. */
  readonly idleMs: number;
  /** Opens nothing yet: builds the holder of a session, which connects on first use. */
  readonly create: (key: string) => T;
}

interface Entry<T> {
  readonly value: T;
  lastUsedMs: number;
}

/**
 * Upstream sessions by caller (docs/adr/0050-upstream-session-per-caller.md):
 * created on first use, least recently used first out. A Map keeps insertion
 * order, and every use re-inserts its key, so the oldest entry is always
 * first: eviction and the idle sweep look only at the front.
 */
export class SessionPool<T extends PooledSession> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(private readonly options: SessionPoolOptions<T>) {
    if (!Number.isInteger(options.maxSessions) || options.maxSessions < 1) throw new RangeError(`session pool: maxSessions must be a whole number >= 1, got ${options.maxSessions}`);
    if (!Number.isFinite(options.idleMs) || options.idleMs < 0) throw new RangeError(`session pool: idleMs must be >= 0, got ${options.idleMs}`);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The session for `key`, created if it has none; marks it used at `nowMs`. */
  get(key: string, nowMs: number): T {
    this.sweep(nowMs);
    const found = this.entries.get(key);
    if (found !== undefined) {
      this.entries.delete(key);
      found.lastUsedMs = nowMs;
      this.entries.set(key, found);
      return found.value;
    }
    this.makeRoom();
    const value = this.options.create(key);
    this.entries.set(key, { value, lastUsedMs: nowMs });
    return value;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Retires every session unused for idleMs with no call running on it. */
  sweep(nowMs: number): void {
    for (const [key, entry] of this.entries) {
      if (nowMs - entry.lastUsedMs < this.options.idleMs) return;
      // A busy one stays (its call outlasted the idle time); those behind it are swept on a later use.
      if (entry.value.busy()) continue;
      this.entries.delete(key);
      entry.value.retire();
    }
  }

  /** Removes `key`'s session if it is `value` (not a newer one), and retires it. */
  remove(key: string, value: T): void {
    if (this.entries.get(key)?.value !== value) return;
    this.entries.delete(key);
    value.retire();
  }

  /** Retires every session; the pool is empty after. */
  clear(): T[] {
    const values = [...this.entries.values()].map((entry) => entry.value);
    this.entries.clear();
    for (const value of values) value.retire();
    return values;
  }

  /** Full: the least recently used idle session goes; if every one is busy, the least recently used (it closes once its calls end). */
  private makeRoom(): void {
    if (this.entries.size < this.options.maxSessions) return;
    let victim: string | undefined;
    for (const [key, entry] of this.entries) {
      if (!entry.value.busy()) {
        victim = key;
        break;
      }
    }
    victim ??= this.entries.keys().next().value as string;
    const entry = this.entries.get(victim) as Entry<T>;
    this.entries.delete(victim);
    entry.value.retire();
  }
}
