import type { DataSnapshot, Reference } from 'firebase-admin/database';

/**
 * Keeps a `value` listener on the nodes of recently used keys, so the
 * client's cache holds their current value and a transaction's first run is
 * usually right: one put per decision instead of listen + rejected put + put
 * + unlisten (see docs/adr/0002-rtdb-transaction-cache.md for the figures).
 *
 * The price is bandwidth: every write to a listened node, by any instance, is
 * pushed to this one. So listeners are bounded twice: a key idle for
 * `idleWindows` of its windows loses its listener, and past `maxKeys` the
 * least recently used key loses it.
 *
 * Idleness is measured in the `nowMs` the limiter passes in, not a clock read
 * here, so tests with an injected clock see the same behaviour; it is checked
 * on each use, oldest entries first.
 */
export interface ListenerCacheOptions {
  /** Default 1000. */
  readonly maxKeys: number;
  /** Default 2. */
  readonly idleWindows: number;
}

export interface ListenedNode {
  readonly ref: Reference;
  /** True while a listener has delivered the server's value and still holds it current. */
  readonly tracksServer: () => boolean;
}

interface Entry {
  readonly ref: Reference;
  readonly onValue: (snapshot: DataSnapshot) => void;
  /** The last value the server delivered, any instance's write included. */
  value: unknown;
  /** True once the server's value arrived: from then on the cache tracks the server. */
  ready: boolean;
  /** The cache stopped tracking (listen cancelled, e.g. permission denied). */
  cancelled: boolean;
  expiresAtMs: number;
}

export class ListenerCache {
  /** Map order is use order: the first entry is the least recently used. */
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly options: ListenerCacheOptions) {
    if (!Number.isSafeInteger(options.maxKeys) || options.maxKeys < 0) {
      throw new RangeError(`maxListenedKeys must be a non-negative integer, got ${options.maxKeys}`);
    }
    if (!(options.idleWindows > 0)) {
      throw new RangeError(`listenerIdleWindows must be positive, got ${options.idleWindows}`);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Marks `path` used at `nowMs` and makes sure it is listened to. Returns its
   * Reference (kept with the listener, so a hot key does not build a new one
   * per call) and a probe that says whether the cache tracks the server.
   */
  touch(path: string, makeRef: () => Reference, nowMs: number, windowMs: number): ListenedNode {
    this.sweep(nowMs);
    let entry = this.entries.get(path);
    if (entry !== undefined && entry.cancelled) {
      this.drop(path, entry);
      entry = undefined;
    }
    if (entry === undefined) {
      if (this.options.maxKeys === 0) return { ref: makeRef(), tracksServer: () => false };
      while (this.entries.size >= this.options.maxKeys) this.dropOldest();
      entry = this.listen(makeRef());
    } else {
      this.entries.delete(path); // re-inserted below: moves to most recently used
    }
    entry.expiresAtMs = nowMs + this.options.idleWindows * windowMs;
    this.entries.set(path, entry);
    const probe = entry;
    return { ref: entry.ref, tracksServer: () => probe.ready && !probe.cancelled };
  }

  /**
   * The last value the server pushed for `path`, if it is listened to and
   * delivered one: possibly stale (during an outage it is the last value
   * before the connection dropped), never optimistic (our own pending writes
   * raise no local events). Does not count as a use.
   */
  lastValue(path: string): unknown {
    const entry = this.entries.get(path);
    return entry !== undefined && entry.ready && !entry.cancelled ? entry.value : undefined;
  }

  /** Stops every listener; after this the process can exit. */
  close(): void {
    for (const [path, entry] of this.entries) this.drop(path, entry);
  }

  private listen(ref: Reference): Entry {
    const entry: Entry = {
      ref,
      onValue: (snapshot: DataSnapshot) => {
        entry.value = snapshot.val();
        entry.ready = true;
      },
      value: null,
      ready: false,
      cancelled: false,
      expiresAtMs: 0,
    };
    ref.on('value', entry.onValue, () => {
      // The server ended the listen (rules). Transactions still work or fail on their own.
      entry.cancelled = true;
    });
    return entry;
  }

  private sweep(nowMs: number): void {
    for (const [path, entry] of this.entries) {
      // Use order approximates expiry order (windows differ per policy); stop at the first live one.
      if (entry.expiresAtMs > nowMs) return;
      this.drop(path, entry);
    }
  }

  private dropOldest(): void {
    const oldest = this.entries.entries().next();
    if (!oldest.done) this.drop(oldest.value[0], oldest.value[1]);
  }

  private drop(path: string, entry: Entry): void {
    this.entries.delete(path);
    entry.ready = false;
    entry.ref.off('value', entry.onValue);
  }
}
