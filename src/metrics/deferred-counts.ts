import type { Counter, LabelValues } from 'prom-client';

/**
 * Counter increments kept in a plain map and handed to the prom-client
 * Counter when it is collected (a scrape, `registry.metrics()`, `get()`).
 * A direct `inc()` validates and hashes its labels on every call, which on
 * the request path costs more than the request's own limiter decision; here
 * a call costs one string key and a map lookup, and the hashing happens once
 * per label set per scrape. The totals a scrape sees are the same.
 */
export class DeferredCounts<L extends string> {
  private readonly pending = new Map<string, { readonly labels: LabelValues<L>; value: number }>();

  constructor(private readonly labelNames: readonly L[]) {}

  /** Adds `value` under `labels`; `key` names the label set (the values joined), checked against it. */
  add(key: string, labels: LabelValues<L>, value: number): void {
    const held = this.pending.get(key);
    if (held === undefined) {
      this.pending.set(key, { labels, value });
      return;
    }
    if (this.sameLabels(held.labels, labels)) held.value += value;
    // Two label sets on one key (a separator inside a value): kept apart under a key of their own.
    else this.add(`${key}\u0000${JSON.stringify(labels)}`, labels, value);
  }

  /** Moves every pending sum into `counter`; call it from the counter's `collect`. */
  flushInto(counter: Counter<L>): void {
    for (const { labels, value } of this.pending.values()) counter.inc(labels, value);
    this.pending.clear();
  }

  private sameLabels(a: LabelValues<L>, b: LabelValues<L>): boolean {
    for (const name of this.labelNames) if (a[name] !== b[name]) return false;
    return true;
  }
}
