import fc from 'fast-check';
import type { Adjustment, FixedWindowState, TokenBucketState } from '../../src/library/window/algorithms';
import { burstOf } from '../../src/library/window/algorithms';
import { windowNumberAt } from '../../src/library/window/fixed-window';
import { passThroughGuard } from '../support/deadline-guard';
import { algorithmOf, type PolicySet, type RateLimitPolicy } from '../../src/library/window/policy';
import { WindowRateLimiter } from '../../src/library/limiter/rate-limiter';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import type { LimitStore, StoreDecision } from '../../src/library/limiter/limit-store';
import { createCapturingLogger } from '../support/capturing-logger';
import { silentLogger } from '../../src/shared/logger';

const WINDOW_MS = 60_000;
const policy: RateLimitPolicy = { name: 'default', limit: 10, windowMs: WINDOW_MS };
/** Ten tokens refilled ten a minute: with the clock held still, it counts like a window. */
const bucket: RateLimitPolicy = { name: 'bucket', algorithm: 'token-bucket', limit: 10, windowMs: WINDOW_MS };
const T0 = 1_000 * WINDOW_MS + 1_000;

/** The sets the accounting is held to: the default window, a bucket, and both at once. */
const SETS: readonly { readonly name: string; readonly policies: PolicySet }[] = [
  { name: 'a fixed window', policies: [policy] },
  { name: 'a token bucket', policies: [bucket] },
  { name: 'a fixed window and a token bucket', policies: [policy, bucket] },
];

/**
 * Units a stored state has spent at `nowMs`, past the limit too (a write-back
 * can overspend): a fixed window's count in the current window; a bucket's
 * missing tokens, which with the clock held still are exactly what was spent.
 */
function spentIn(state: unknown, p: RateLimitPolicy, nowMs: number): number {
  if (state === null) return 0;
  if (algorithmOf(p) === 'token-bucket') return burstOf(p) - (state as TokenBucketState).scaledTokens / p.windowMs;
  const { windowNumber, count } = state as FixedWindowState;
  return windowNumber === windowNumberAt(nowMs, p.windowMs) ? count : 0;
}

/** The shared database: one counter table every instance talks to, which can go down or restart empty. */
class SharedDatabase {
  down = false;
  table = new MemoryWindowStore();
  restartEmpty(): void {
    this.table = new MemoryWindowStore();
  }
  /** Spent units of `key` at `nowMs` under each policy, read without spending. */
  spentEach(key: string, nowMs: number, policies: PolicySet): number[] {
    return this.table.peek(key, policies).map((state, i) => spentIn(state, policies[i] as RateLimitPolicy, nowMs));
  }
  /** Spent units of `key` in the default window of `nowMs`. */
  async spent(key: string, nowMs: number): Promise<number> {
    return this.spentEach(key, nowMs, [policy])[0] ?? Number.NaN;
  }
}

/** One instance's connection to the shared database. */
class Connection implements LimitStore {
  readonly backend = 'redis' as const;
  readonly shared = true;
  adjusts = 0;
  constructor(private readonly db: SharedDatabase) {}
  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    return this.db.down ? Promise.reject(new Error('down')) : this.db.table.consume(key, nowMs, policies, cost);
  }
  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    if (this.db.down) return Promise.reject(new Error('down'));
    this.adjusts++;
    return this.db.table.adjust(key, nowMs, policies, adjustments);
  }
  async close(): Promise<void> {}
}


function instances(count: number, db: SharedDatabase, clock: { nowMs: number }, logger = silentLogger, policies: PolicySet = [policy]) {
  return Array.from({ length: count }, () => {
    const store = new Connection(db);
    const limiter = new WindowRateLimiter({ store, guard: passThroughGuard, policies, failurePolicy: 'fail-open', clock: () => clock.nowMs, logger });
    return { store, limiter };
  });
}

async function admitted(limiter: WindowRateLimiter, calls: number, key = 'tok_a'): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < calls; i++) if ((await limiter.consume(key)).allowed) allowed++;
  return allowed;
}

type OutageStep = { readonly instance: number; readonly down: boolean; readonly cost: number };

/** Calls on key tok_p by three instances, the shared database up or down per step. */
const outageSteps = fc.array(fc.record({ instance: fc.integer({ min: 0, max: 2 }), down: fc.boolean(), cost: fc.integer({ min: 0, max: 3 }) }), { maxLength: 60 });

/** Runs `steps` on three instances sharing one database, then brings it back and reconciles every instance; the units admitted. */
async function admitThenReconcile(steps: readonly OutageStep[], policies: PolicySet): Promise<{ db: SharedDatabase; nowMs: number; admittedUnits: number }> {
  const db = new SharedDatabase();
  const clock = { nowMs: T0 };
  const all = instances(3, db, clock, silentLogger, policies);
  let admittedUnits = 0;
  for (const s of steps) {
    db.down = s.down;
    const d = await all[s.instance]!.limiter.consume('tok_p', { cost: s.cost });
    if (d.allowed) admittedUnits += s.cost;
  }
  db.down = false;
  for (const { limiter } of all) await limiter.reconcile();
  return { db, nowMs: clock.nowMs, admittedUnits };
}

describe('fail-open outage accounting', () => {
  test('a local window starts from the last shared count this instance knew, not from zero', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const [a] = instances(1, db, clock);
    expect(await admitted(a!.limiter, 7)).toBe(7);
    db.down = true;
    const during = await a!.limiter.consume('tok_a');
    expect(during).toMatchObject({ allowed: true, shared: false, remaining: 2 });
    expect(await admitted(a!.limiter, 10)).toBe(2);
  });

  test('units granted locally are written back when the store answers again, before that key is judged', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const [a] = instances(1, db, clock);
    await admitted(a!.limiter, 3);
    db.down = true;
    expect(await admitted(a!.limiter, 4)).toBe(4);
    expect(a!.limiter.unreconciledUnits).toBe(4);
    db.down = false;
    const after = await a!.limiter.consume('tok_a');
    expect(after).toMatchObject({ allowed: true, shared: true, remaining: 2 });
    expect(await db.spent('tok_a', clock.nowMs)).toBe(8);
    expect(a!.limiter.unreconciledUnits).toBe(0);
  });

  test('keys not called again are reconciled in the background on the first shared success', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const logger = createCapturingLogger();
    const [a] = instances(1, db, clock, logger);
    db.down = true;
    await admitted(a!.limiter, 3, 'tok_idle');
    db.down = false;
    await a!.limiter.consume('tok_other');
    // Started by that success, not by anyone calling reconcile(): the ledger was drained already.
    expect(a!.limiter.unreconciledUnits).toBe(0);
    await a!.limiter.reconcile();
    expect(await db.spent('tok_idle', clock.nowMs)).toBe(3);
    const lines = logger.entries.filter((e) => e.fields.event === 'ratelimit.reconciled');
    expect(lines.map((e) => [e.message, e.fields])).toEqual([
      [
        'calls granted from the local window during an outage were written back to the shared store',
        { event: 'ratelimit.reconciled', backend: 'redis', keys: 1, units: 3, keysLeft: 0 },
      ],
    ]);
  });

  test('many keys are written back in batches, each exactly once', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const logger = createCapturingLogger();
    const [a] = instances(1, db, clock, logger);
    db.down = true;
    const keys = Array.from({ length: 75 }, (_, i) => `tok_${i}`);
    for (const [i, key] of keys.entries()) await admitted(a!.limiter, 1 + (i % 3), key);
    db.down = false;
    await a!.limiter.reconcile();
    for (const [i, key] of keys.entries()) expect(await db.spent(key, clock.nowMs)).toBe(1 + (i % 3));
    expect(logger.entries.find((e) => e.fields.event === 'ratelimit.reconciled')?.fields).toMatchObject({ keys: 75, units: 150, keysLeft: 0 });
  });

  test('a failed write-back is kept and retried, merged with what was granted since', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const [a] = instances(1, db, clock);
    db.down = true;
    await admitted(a!.limiter, 2);
    await a!.limiter.reconcile(); // fails: still down
    await admitted(a!.limiter, 1);
    expect(a!.limiter.unreconciledUnits).toBe(3);
    db.down = false;
    await a!.limiter.reconcile();
    expect(await db.spent('tok_a', clock.nowMs)).toBe(3);
  });

  test('grants of a window that has passed are dropped, not written into the next one', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const [a] = instances(1, db, clock);
    db.down = true;
    await admitted(a!.limiter, 5);
    clock.nowMs += WINDOW_MS;
    db.down = false;
    expect(await a!.limiter.consume('tok_a')).toMatchObject({ allowed: true, remaining: 9 });
    expect(a!.limiter.unreconciledUnits).toBe(0);
  });

  test('a store that restarted empty relearns the count the instance knew plus what it granted', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const [a] = instances(1, db, clock);
    await admitted(a!.limiter, 6);
    db.down = true;
    await admitted(a!.limiter, 2);
    db.restartEmpty();
    db.down = false;
    expect(await a!.limiter.consume('tok_a')).toMatchObject({ allowed: true, remaining: 1 });
    expect(await admitted(a!.limiter, 5)).toBe(1);
  });

  test('closing the limiter writes back what it granted alone', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const [a] = instances(1, db, clock);
    db.down = true;
    await admitted(a!.limiter, 4);
    db.down = false;
    await a!.limiter.close();
    expect(await db.spent('tok_a', clock.nowMs)).toBe(4);
  });

  test.each([
    // [name, calls before the outage per instance, calls during, calls after, restart empty, most admitted]
    // most = shared count C + sum over instances of (limit - the count that instance last saw): each
    // instance can only hold back what it knew; what the others granted meanwhile it cannot know.
    ['two instances, outage mid-window', [2, 2], [20, 20], [10, 10], false, 18],
    ['two instances, outage at the window start', [0, 0], [20, 20], [10, 10], false, 20],
    ['two instances, the database restarts empty', [2, 2], [20, 20], [10, 10], true, 18],
    ['three instances, most of the window spent before (they saw 3, 6 and 9)', [3, 3, 3], [20, 20, 20], [10, 10, 10], false, 21],
  ] as const)('%s: admitted per window stays within instances x limit and nothing after recovery', async (_name, before, during, after, restart, most) => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const all = instances(before.length, db, clock);
    let total = 0;
    for (const [i, n] of before.entries()) total += await admitted(all[i]!.limiter, n);
    db.down = true;
    for (const [i, n] of during.entries()) total += await admitted(all[i]!.limiter, n);
    if (restart) db.restartEmpty();
    db.down = false;
    let afterRecovery = 0;
    for (const [i, n] of after.entries()) afterRecovery += await admitted(all[i]!.limiter, n);
    total += afterRecovery;
    expect(total).toBeLessThanOrEqual(most);
    expect(total).toBeLessThanOrEqual(before.length * policy.limit);
    expect(afterRecovery).toBe(0);
  });

  test('a store that saw the other instances spend (a listener) gives the local window that floor instead', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const all = instances(2, db, clock);
    // What RTDB's listener cache does: the last server value, every instance's writes included, frozen at the outage.
    const view: { frozen?: readonly [FixedWindowState] } = {};
    for (const { store } of all) (store as Connection & { lastSeen?: () => readonly unknown[] | undefined }).lastSeen = () => view.frozen;
    let total = (await admitted(all[0]!.limiter, 2)) + (await admitted(all[1]!.limiter, 2));
    view.frozen = [{ windowNumber: Math.floor(T0 / WINDOW_MS), count: await db.spent('tok_a', T0) }];
    db.down = true;
    total += (await admitted(all[0]!.limiter, 20)) + (await admitted(all[1]!.limiter, 20));
    db.down = false;
    total += (await admitted(all[0]!.limiter, 10)) + (await admitted(all[1]!.limiter, 10));
    expect(total).toBe(16);
  });

  test('property: once reconciled, the shared window has spent exactly what every instance admitted', async () => {
    await fc.assert(
      fc.asyncProperty(outageSteps, async (steps) => {
        const { db, nowMs, admittedUnits } = await admitThenReconcile(steps, [policy]);
        expect(await db.spent('tok_p', nowMs)).toBe(admittedUnits);
        expect(admittedUnits).toBeLessThanOrEqual(3 * policy.limit);
      }),
      { numRuns: 200 },
    );
  });
});

describe('fail-open outage accounting across windows and algorithms', () => {
  test('an outage that outlasts its window writes back only what the current window granted', async () => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const [a] = instances(1, db, clock);
    db.down = true;
    expect(await admitted(a!.limiter, 5)).toBe(5);
    clock.nowMs += WINDOW_MS;
    expect(await admitted(a!.limiter, 1)).toBe(1);
    expect(a!.limiter.unreconciledUnits).toBe(1);
    db.down = false;
    expect(await a!.limiter.consume('tok_a')).toMatchObject({ allowed: true, shared: true, remaining: 8 });
    expect(await db.spent('tok_a', clock.nowMs)).toBe(2);
  });

  test.each(SETS)('$name: a local window starts from the last shared states this instance knew', async ({ policies }) => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const [a] = instances(1, db, clock, silentLogger, policies);
    expect(await admitted(a!.limiter, 7)).toBe(7);
    db.down = true;
    expect(await a!.limiter.consume('tok_a')).toMatchObject({ allowed: true, shared: false, reason: 'local_fallback', remaining: 2 });
    expect(await admitted(a!.limiter, 10)).toBe(2);
  });

  test.each(SETS)('$name: what was granted locally is written into every policy before the key is judged again', async ({ policies }) => {
    const db = new SharedDatabase();
    const clock = { nowMs: T0 };
    const [a] = instances(1, db, clock, silentLogger, policies);
    await admitted(a!.limiter, 3);
    db.down = true;
    expect(await admitted(a!.limiter, 4)).toBe(4);
    db.down = false;
    expect(await a!.limiter.consume('tok_a')).toMatchObject({ allowed: true, shared: true, remaining: 2 });
    expect(db.spentEach('tok_a', clock.nowMs, policies)).toEqual(policies.map(() => 8));
  });

  test.each(SETS)('$name, property: once reconciled, each shared state has spent exactly what every instance admitted', async ({ policies }) => {
    await fc.assert(
      fc.asyncProperty(outageSteps, async (steps) => {
        const { db, nowMs, admittedUnits } = await admitThenReconcile(steps, policies);
        expect(db.spentEach('tok_p', nowMs, policies)).toEqual(policies.map(() => admittedUnits));
        expect(admittedUnits).toBeLessThanOrEqual(3 * 10);
      }),
      { numRuns: 100 },
    );
  });
});
