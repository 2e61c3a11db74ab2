import { randomUUID } from 'node:crypto';
import type { Database } from 'firebase-admin/database';

/** Where sweep leases live, one leaf per swept root; database.rules.json closes it to clients. */
export const SWEEP_LEASE_ROOT = 'sweeperLeases';

/** A lease as stored: who holds it and until when (the holder's clock). */
export interface SweepLeaseValue {
  readonly holder: string;
  readonly expiresAtMs: number;
}

/**
 * Pure: whether `holder` may sweep now, given the lease the transaction
 * sees. Free, expired, malformed or already ours: take (or renew) it until
 * `nowMs + leaseMs`. Held by another and not yet expired: leave it.
 */
export function leaseVerdict(current: unknown, nowMs: number, holder: string, leaseMs: number): { readonly take: boolean; readonly next?: SweepLeaseValue } {
  const lease = current as Partial<SweepLeaseValue> | null | undefined;
  const heldByOther =
    lease !== null && lease !== undefined && typeof lease.holder === 'string' && lease.holder !== holder && typeof lease.expiresAtMs === 'number' && lease.expiresAtMs > nowMs;
  if (heldByOther) return { take: false };
  return { take: true, next: { holder, expiresAtMs: nowMs + leaseMs } };
}

/** The leaf of a root's lease: RTDB keys may not hold '/', so a nested root becomes one key ('a/b' → 'a|b'). */
export function sweepLeasePath(rootPath: string): string {
  return `${SWEEP_LEASE_ROOT}/${rootPath.split('/').join('|')}`;
}

export interface SweepLeaseOptions {
  readonly database: Database;
  readonly rootPath: string;
  /** How long a taken lease holds without renewal. */
  readonly leaseMs: number;
  readonly clock: () => number;
  /** Default: a random id per lease object (one per sweeper, so one per instance and root). */
  readonly holder?: string;
}

/**
 * One sweeper per database and root at a time, not one per instance
 * (issue 18 item 6): before a timed run, a transaction on the root's lease
 * leaf takes or renews it; a sweeper that finds it held by another skips
 * the run. The holder renews at each of its runs, so it keeps the lease
 * while it runs; if it stops getting CPU (Cloud Run between requests) or
 * dies, the lease lapses and the next instance with CPU takes it. Expiry is
 * judged by each instance's own clock: a skew much smaller than `leaseMs`
 * (minutes) only shifts a takeover by that skew (docs/clocks.md).
 */
export class SweepLease {
  readonly holder: string;
  private readonly database: Database;
  private readonly path: string;
  private readonly leaseMs: number;
  private readonly clock: () => number;

  constructor(options: SweepLeaseOptions) {
    if (!(Number.isFinite(options.leaseMs) && options.leaseMs > 0)) throw new RangeError(`leaseMs must be a positive number, got ${options.leaseMs}`);
    this.database = options.database;
    this.path = sweepLeasePath(options.rootPath);
    this.leaseMs = options.leaseMs;
    this.clock = options.clock;
    this.holder = options.holder ?? randomUUID();
  }

  /** True when this holder has the lease now (taken or renewed); false when another holds it. Rejects on a database error. */
  async tryTake(): Promise<boolean> {
    const nowMs = this.clock();
    let took = false;
    const { committed } = await this.database.ref(this.path).transaction(
      (current: unknown) => {
        const verdict = leaseVerdict(current, nowMs, this.holder, this.leaseMs);
        took = verdict.take;
        return verdict.take ? verdict.next : undefined;
      },
      undefined,
      false,
    );
    return committed && took;
  }
}
