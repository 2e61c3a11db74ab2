import { isWholeNumber, spanWords, unfitRetryAfterMs, type Adjustment, type Algorithm, type AlgorithmResult, type LimitParams } from './algorithm';

/**
 * Sliding log: a record of when each admitted unit was spent. Exact: never
 * more than `limit` units in ANY interval [t, t + windowMs). Trade-off: the
 * state grows with the limit (up to `limit` entries of two integers), so it
 * suits small limits (sign-in attempts, expensive tools), not 10 000 a minute.
 *
 * An entry spent at t counts until t + windowMs (exclusive) and is pruned on
 * every decision. Units spent in the same ms share one entry, so the log never
 * holds more than `limit` entries (adjustments fold the oldest into the next
 * to keep that bound: moving units later never frees capacity).
 *
 * resetAtMs: when the newest entry leaves the log (everything is back).
 */
export interface SlidingLogState {
  /** [timestampMs, units], timestamps strictly ascending, units ≥ 1. */
  readonly entries: readonly (readonly [number, number])[];
}

type Entry = readonly [number, number];

function lastTimestamp(state: SlidingLogState | null): number {
  const last = state?.entries[state.entries.length - 1];
  return last === undefined ? 0 : last[0];
}

/** The entries still counting at `nowMs`. */
function live(state: SlidingLogState | null, nowMs: number, windowMs: number): Entry[] {
  return state === null ? [] : state.entries.filter(([t]) => t > nowMs - windowMs);
}

function total(entries: readonly Entry[]): number {
  let sum = 0;
  for (const [, units] of entries) sum += units;
  return sum;
}

function resetAt(entries: readonly Entry[], effectiveNowMs: number, windowMs: number): number {
  const last = entries[entries.length - 1];
  return last === undefined ? effectiveNowMs : last[0] + windowMs;
}

function append(entries: readonly Entry[], atMs: number, units: number): Entry[] {
  const out = entries.slice();
  const last = out[out.length - 1];
  if (last !== undefined && last[0] === atMs) out[out.length - 1] = [atMs, last[1] + units];
  else out.push([atMs, units]);
  return out;
}

function decide(state: SlidingLogState | null, nowMs: number, params: LimitParams, cost: number): AlgorithmResult<SlidingLogState> {
  const { limit, windowMs } = params;
  const effectiveNowMs = Math.max(nowMs, lastTimestamp(state));
  const entries = live(state, effectiveNowMs, windowMs);
  const spent = total(entries);
  const allowed = cost === 0 || spent + cost <= limit;
  const after = allowed && cost > 0 ? append(entries, effectiveNowMs, cost) : entries;
  const resetAtMs = resetAt(after, effectiveNowMs, windowMs);

  let retryAfterMs = 0;
  if (!allowed && cost > limit) retryAfterMs = unfitRetryAfterMs(resetAtMs, nowMs);
  else if (!allowed) {
    // The call fits once enough of the oldest entries have left.
    let left = spent;
    for (const [t, units] of entries) {
      left -= units;
      if (left + cost <= limit) {
        retryAfterMs = t + windowMs - nowMs;
        break;
      }
    }
  }
  return {
    decision: { allowed, limit, remaining: Math.max(0, limit - total(after)), resetAtMs, retryAfterMs },
    next: allowed && cost > 0 ? { entries: after } : null,
  };
}

/**
 * The least spent log that is at least as spent as both, at every later time:
 * units from timestamp t onwards = the larger of the two logs' (suffix maxima).
 */
function merge(a: readonly Entry[], b: readonly Entry[]): Entry[] {
  const times = [...new Set([...a.map(([t]) => t), ...b.map(([t]) => t)])].sort((x, y) => x - y);
  const out: Entry[] = [];
  let ia = a.length - 1;
  let ib = b.length - 1;
  let suffixA = 0;
  let suffixB = 0;
  let merged = 0;
  for (let i = times.length - 1; i >= 0; i--) {
    const t = times[i] as number;
    while (ia >= 0 && (a[ia] as Entry)[0] >= t) suffixA += (a[ia--] as Entry)[1];
    while (ib >= 0 && (b[ib] as Entry)[0] >= t) suffixB += (b[ib--] as Entry)[1];
    const next = Math.max(suffixA, suffixB);
    if (next > merged) out.unshift([t, next - merged]);
    merged = next;
  }
  return out;
}

/** Takes a refund off the newest entries first (a reservation is the newest thing spent). */
function refund(entries: readonly Entry[], units: number): Entry[] {
  const out = entries.slice();
  let owed = units;
  while (owed > 0 && out.length > 0) {
    const [t, u] = out[out.length - 1] as Entry;
    if (u > owed) {
      out[out.length - 1] = [t, u - owed];
      owed = 0;
    } else {
      out.pop();
      owed -= u;
    }
  }
  return out;
}

function adjust(state: SlidingLogState | null, nowMs: number, params: LimitParams, adjustment: Adjustment<SlidingLogState>): SlidingLogState | null {
  const { limit, windowMs } = params;
  const { atLeast, deltaUnits } = adjustment;
  const effectiveNowMs = Math.max(nowMs, lastTimestamp(state), lastTimestamp(atLeast));
  const own = live(state, effectiveNowMs, windowMs);
  let entries = merge(own, live(atLeast, effectiveNowMs, windowMs));
  if (deltaUnits > 0) entries = append(entries, effectiveNowMs, deltaUnits);
  if (deltaUnits < 0) entries = refund(entries, -deltaUnits);
  while (entries.length > limit) {
    const [first, second, ...rest] = entries as [Entry, Entry, ...Entry[]];
    entries = [[second[0], first[1] + second[1]], ...rest];
  }
  const same = entries.length === own.length && entries.every(([t, u], i) => own[i]?.[0] === t && own[i]?.[1] === u);
  return same ? null : { entries };
}

/**
 * A log as the memory store keeps it: each entry's timestamp as ms after
 * `baseMs` (the oldest entry's) beside its units, in one typed array, 8 bytes
 * an entry (a full log of 1,000 as entry arrays took 76 KB, issue 22);
 * Float64Array, 16 bytes, when a value does not fit 32 bits. Both exact.
 */
interface PackedSlidingLog {
  readonly baseMs: number;
  readonly pairs: Uint32Array | Float64Array;
}

const UINT32_MAX = 0xffffffff;

function pack(state: SlidingLogState): PackedSlidingLog {
  const { entries } = state;
  const baseMs = entries.length === 0 ? 0 : (entries[0] as Entry)[0];
  let fits = true;
  for (const [t, units] of entries) {
    if (t - baseMs > UINT32_MAX || units > UINT32_MAX) {
      fits = false;
      break;
    }
  }
  const pairs = fits ? new Uint32Array(entries.length * 2) : new Float64Array(entries.length * 2);
  for (let i = 0; i < entries.length; i++) {
    const [t, units] = entries[i] as Entry;
    pairs[2 * i] = t - baseMs;
    pairs[2 * i + 1] = units;
  }
  return { baseMs, pairs };
}

function unpack(packed: unknown): SlidingLogState {
  const { baseMs, pairs } = packed as PackedSlidingLog;
  const entries: Entry[] = new Array<Entry>(pairs.length / 2);
  for (let i = 0; i < entries.length; i++) entries[i] = [baseMs + (pairs[2 * i] as number), pairs[2 * i + 1] as number];
  return { entries };
}

export const slidingLog: Algorithm<SlidingLogState> = {
  name: 'sliding-log',
  decide,
  adjust,
  expiresAtMs: (state, params) => resetAt(state.entries, 0, params.windowMs),
  maxCost: (params) => params.limit,
  describe: (params) => `at most ${params.limit} in any ${spanWords(params.windowMs)}`,
  pack,
  unpack,
  parseState(value) {
    if (typeof value !== 'object' || value === null) return null;
    const { entries } = value as Record<string, unknown>;
    if (!Array.isArray(entries) || entries.length > 100_000) return null;
    const out: Entry[] = [];
    for (const entry of entries as unknown[]) {
      if (!Array.isArray(entry) || entry.length !== 2) return null;
      const [t, units] = entry as unknown[];
      if (!isWholeNumber(t) || !isWholeNumber(units, 1)) return null;
      if (out.length > 0 && (out[out.length - 1] as Entry)[0] >= t) return null;
      out.push([t, units]);
    }
    return { entries: out };
  },
};
