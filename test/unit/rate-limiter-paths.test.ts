import type { BackendGuard } from '../../src/library/limiter/backend-guard';
import { WindowRateLimiter, type FailurePolicy } from '../../src/library/limiter/rate-limiter';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import type { RateLimitPolicy } from '../../src/library/window/policy';
import { InvalidKeyError } from '../../src/library/window/key';
import { silentLogger, type Logger } from '../../src/shared/logger';
import { createCapturingLogger } from '../support/capturing-logger';
import { passThroughGuard } from '../support/deadline-guard';
import { Connection, FreezableDatabase, freezeGuard, settleAll } from '../support/freezable-store';

/**
 * Which way a decision goes through the limiter: the memory store's
 * synchronous paths (no promise of the store's per decision, issue 22), and
 * the outage fallback's bookkeeping (OutageFallback) that the totals of the
 * outage suites do not tell apart.
 */

const WINDOW_MS = 60_000;
const T0 = 1_000 * WINDOW_MS + 1_000;
const policy: RateLimitPolicy = { name: 'default', limit: 10, windowMs: WINDOW_MS };
const hourly: RateLimitPolicy = { name: 'hourly', limit: 100, windowMs: 3_600_000 };

function memoryLimiter(store: MemoryWindowStore, policies: readonly RateLimitPolicy[] = [policy]): WindowRateLimiter {
  return new WindowRateLimiter({ store, guard: passThroughGuard, policies: policies as [RateLimitPolicy, ...RateLimitPolicy[]], failurePolicy: 'fail-open', clock: () => T0, logger: silentLogger });
}

function sharedLimiter(db: FreezableDatabase, clock: { nowMs: number }, logger: Logger = silentLogger, failurePolicy: FailurePolicy = 'fail-open'): WindowRateLimiter {
  return new WindowRateLimiter({ store: new Connection(db), guard: freezeGuard(db), policies: [policy], failurePolicy, clock: () => clock.nowMs, logger });
}

describe('the memory limiter decides on the store synchronously', () => {
  it.each([
    ['a one-unit call', 1],
    ['a read (cost 0)', 0],
  ])('%s of a one-policy set goes through decideOneSync, not the async consume', async (_name, cost) => {
    const store = new MemoryWindowStore();
    const limiter = memoryLimiter(store);
    const one = jest.spyOn(store, 'decideOneSync');
    const general = jest.spyOn(store, 'consumeSync');
    const decision = await limiter.consume('tok_a', { cost });
    expect(decision).toMatchObject({ allowed: true, limit: 10, remaining: 10 - cost, shared: false });
    expect(one).toHaveBeenCalledTimes(1);
    expect(general).not.toHaveBeenCalled();
  });

  it('a call of several units, and a set of two policies, go through consumeSync', async () => {
    const store = new MemoryWindowStore();
    const one = jest.spyOn(store, 'decideOneSync');
    const general = jest.spyOn(store, 'consumeSync');
    expect(await memoryLimiter(store).consume('tok_a', { cost: 3 })).toMatchObject({ allowed: true, remaining: 7 });
    expect(await memoryLimiter(store, [policy, hourly]).consume('tok_b')).toMatchObject({ allowed: true, policies: [{ remaining: 9 }, { remaining: 99 }] });
    expect(general).toHaveBeenCalledTimes(2);
    expect(one).not.toHaveBeenCalled();
  });

  it('a policy chosen per call is decided by its own figures, not the default set compiled for the fast path', async () => {
    const store = new MemoryWindowStore();
    const limiter = memoryLimiter(store);
    expect(await limiter.consume('tok_a', { policy: hourly })).toMatchObject({ limit: 100, remaining: 99, policyName: 'hourly' });
    expect(await limiter.consume('tok_a')).toMatchObject({ limit: 10, remaining: 9, policyName: 'default' });
  });

  it('a memory store whose consume was replaced (a spy, a subclass) is called as it is', async () => {
    const store = new MemoryWindowStore();
    const consume = jest.spyOn(store, 'consume');
    await memoryLimiter(store).consume('tok_a');
    expect(consume).toHaveBeenCalledTimes(1);
  });

  it('a refund made when the spent window has just ended (at its resetAtMs) credits nothing: the new window did not pay for it', async () => {
    const store = new MemoryWindowStore();
    const clock = { nowMs: T0 };
    const limiter = new WindowRateLimiter({ store, guard: passThroughGuard, policies: [policy], failurePolicy: 'fail-open', clock: () => clock.nowMs, logger: silentLogger });
    const spent = await limiter.consume('tok_a');
    clock.nowMs = spent.resetAtMs;
    expect(await limiter.consume('tok_a')).toMatchObject({ remaining: 9 });
    await limiter.refund('tok_a', spent);
    expect(await limiter.consume('tok_a')).toMatchObject({ remaining: 8 });
  });

  it('needs a policy, names itself when it has none, and publishes its first one', () => {
    expect(() => new WindowRateLimiter({ store: new MemoryWindowStore(), guard: passThroughGuard, failurePolicy: 'fail-open', clock: () => T0, logger: silentLogger } as never)).toThrow(
      'WindowRateLimiter: policy or policies is required',
    );
    expect(memoryLimiter(new MemoryWindowStore(), [hourly, policy]).policy).toBe(hourly);
  });
});

const HOT_POLICY: RateLimitPolicy = { ...policy, limit: 1000 };

/**
 * A limiter with hot-key leases (no key hot by its rate here) on a shared store whose guard fails the first calls
 * with `failures`, in order; `costs` are the units of each consume that reached the store.
 */
function leasingLimiter(failures: ('contention' | 'outage')[], failurePolicy: FailurePolicy): { limiter: WindowRateLimiter; table: MemoryWindowStore; costs: number[] } {
  const table = new MemoryWindowStore();
  const costs: number[] = [];
  const store = { backend: 'redis' as const, shared: true, consume: (key: string, nowMs: number, policies: readonly RateLimitPolicy[], cost: number) => (costs.push(cost), table.consume(key, nowMs, policies as never, cost)), adjust: table.adjust.bind(table), close: async () => undefined };
  const guard: BackendGuard = {
    run: async (call) => {
      const cause = failures.shift();
      return cause === undefined ? { ok: true, value: await call() } : { ok: false, cause };
    },
  };
  const limiter = new WindowRateLimiter({ store, guard, policies: [HOT_POLICY], failurePolicy, clock: () => T0, logger: silentLogger, hotKeys: { hotRatePerSecond: 1_000_000 } });
  return { limiter, table, costs };
}

describe('consumeSync on a shared store', () => {
  it('cannot decide a key the store has not refused: undefined, and nothing is sent or spent', async () => {
    const db = new FreezableDatabase();
    const limiter = sharedLimiter(db, { nowMs: T0 });
    expect(limiter.consumeSync('tok_a')).toBeUndefined();
    expect(db.sent).toBe(0);
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: true, remaining: 9, shared: true });
    expect(limiter.consumeSync('tok_a')).toBeUndefined();
    expect(db.spent('tok_a', T0, policy)).toBe(1);
  });

  it('answers a refusal the store made from the refusal cache, shared, without sending a call', async () => {
    const db = new FreezableDatabase();
    const clock = { nowMs: T0 };
    const limiter = sharedLimiter(db, clock);
    for (let i = 0; i < 10; i++) await limiter.consume('tok_a');
    const refused = await limiter.consume('tok_a');
    expect(refused).toMatchObject({ allowed: false, reason: 'limit', shared: true });
    const sent = db.sent;
    clock.nowMs += 1_000;
    const cached = limiter.consumeSync('tok_a');
    expect(cached).toMatchObject({ allowed: false, reason: 'limit', shared: true, remaining: 0, resetAtMs: refused.resetAtMs, retryAfterMs: refused.retryAfterMs - 1_000 });
    expect(db.sent).toBe(sent);
    // Another key, and a read (always allowed), still need the store.
    expect(limiter.consumeSync('tok_b')).toBeUndefined();
    expect(limiter.consumeSync('tok_a', { cost: 0 })).toBeUndefined();
    // Once the window the refusal was for has ended, the store decides again.
    clock.nowMs = refused.resetAtMs;
    expect(limiter.consumeSync('tok_a')).toBeUndefined();
    expect(db.sent).toBe(sent);
  });

  it('refuses a bad key or cost by throwing, before the refusal cache is asked', () => {
    const limiter = sharedLimiter(new FreezableDatabase(), { nowMs: T0 });
    expect(() => limiter.consumeSync('a/b')).toThrow(InvalidKeyError);
    expect(() => limiter.consumeSync('tok_a', { cost: -1 })).toThrow(RangeError);
  });
});

describe('hot keys', () => {
  it('a key another writer kept winning (contention) is leased on its next call, whatever its rate here; another failure does not', async () => {
    // Fail-closed: a failure grants nothing locally, so no write-back is owed (which would hold every lease back).
    const { limiter, costs } = leasingLimiter(['contention', 'outage'], 'fail-closed');
    await limiter.consume('tok_a'); // contention
    await limiter.consume('tok_b'); // an outage
    expect(costs).toEqual([]);
    await limiter.consume('tok_a');
    // tok_a: leased (several units in one take); tok_b only met an outage and is asked call by call.
    expect(costs[0]).toBeGreaterThan(1);
    await limiter.consume('tok_b');
    expect(costs[1]).toBe(1);
  });

  it('a hot key is not leased while write-backs are owed; once they are written, it is', async () => {
    const { limiter, table, costs } = leasingLimiter(['contention'], 'fail-open');
    // Contended, and granted locally (fail-open): one unit is owed to the store.
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: true, shared: false });
    expect(limiter.unreconciledUnits).toBe(1);
    await limiter.consume('tok_a');
    expect(costs).toEqual([1]);
    expect(limiter.unreconciledUnits).toBe(0);
    await limiter.consume('tok_a');
    expect(costs[1]).toBeGreaterThan(1);
    expect(table.peek('tok_a', [HOT_POLICY])[0]).toMatchObject({ count: 2 + (costs[1] as number) });
  });
});

/** tok_a spent one unit on the store, then a second granted locally while its call waits in the frozen store's socket. */
async function oneCallInAFrozenSocket(): Promise<{ db: FreezableDatabase; clock: { nowMs: number }; limiter: WindowRateLimiter }> {
  const db = new FreezableDatabase();
  const clock = { nowMs: T0 };
  const limiter = sharedLimiter(db, clock);
  await limiter.consume('tok_a');
  db.mode = 'hung';
  expect(await limiter.consume('tok_a')).toMatchObject({ allowed: true, shared: false });
  return { db, clock, limiter };
}

describe('the outage fallback keeps its books', () => {
  it('a key whose earlier call is still in flight to a frozen store is answered locally without sending another', async () => {
    const { db, clock, limiter } = await oneCallInAFrozenSocket();
    const sentWhileHung = db.sent;
    // The store is up again, but the call given up on has not landed yet: this one must not overtake it.
    db.mode = 'up';
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: true, shared: false, reason: 'local_fallback' });
    expect(db.sent).toBe(sentWhileHung);
    // Another key has nothing in flight: it is asked.
    expect(await limiter.consume('tok_b')).toMatchObject({ shared: true });
    db.thaw();
    await settleAll([limiter]);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(3);
  });

  it('logs a write-back only when something was written, with what was', async () => {
    const db = new FreezableDatabase();
    const clock = { nowMs: T0 };
    const logger = createCapturingLogger();
    const limiter = sharedLimiter(db, clock, logger);
    await limiter.consume('tok_a');
    db.mode = 'down';
    await limiter.consume('tok_a');
    await limiter.consume('tok_a');
    await limiter.reconcile(); // still down: nothing written
    expect(logger.entries.filter((e) => e.fields.event === 'ratelimit.reconciled')).toEqual([]);
    db.mode = 'up';
    await limiter.reconcile();
    expect(logger.entries.filter((e) => e.fields.event === 'ratelimit.reconciled').map((e) => e.fields)).toEqual([
      { event: 'ratelimit.reconciled', backend: 'redis', keys: 1, units: 2, keysLeft: 0 },
    ]);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(3);
  });

  it('a write-back that failed is owed again for its own key: the next call of that key writes it first', async () => {
    const db = new FreezableDatabase();
    const clock = { nowMs: T0 };
    const limiter = sharedLimiter(db, clock);
    db.mode = 'down';
    await limiter.consume('tok_a');
    await limiter.reconcile();
    expect(limiter.unreconciledUnits).toBe(1);
    db.mode = 'up';
    expect(await limiter.consume('tok_a')).toMatchObject({ shared: true, remaining: 8 });
    expect(limiter.unreconciledUnits).toBe(0);
  });

  it('a late landing seeds the next outage: the local window starts from what the store counted', async () => {
    const { db, clock, limiter } = await oneCallInAFrozenSocket();
    // Meanwhile other instances spent 5 of the key's units; the call in the frozen socket lands after them.
    await db.table.consume('tok_a', clock.nowMs, [policy], 5);
    db.thaw();
    await settleAll([limiter]);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(7);
    db.mode = 'down';
    // 7 counted, this call the 8th: 2 left, not the 8 this instance alone would think.
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: true, shared: false, remaining: 2 });
  });

  it('fail-closed: a refused call that still landed on the store is given back', async () => {
    const db = new FreezableDatabase();
    const clock = { nowMs: T0 };
    const limiter = sharedLimiter(db, clock, silentLogger, 'fail-closed');
    db.mode = 'hung';
    // Refused (fail-closed) while the call waits in the frozen socket; it lands at the thaw and is given back.
    expect(await limiter.consume('tok_a')).toMatchObject({ allowed: false, reason: 'backend_unavailable' });
    await db.table.consume('tok_a', clock.nowMs, [policy], 5);
    db.thaw();
    await settleAll([limiter]);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(5);
  });

  it('closing drops what it could not write back, so a closed limiter holds nothing', async () => {
    const db = new FreezableDatabase();
    const limiter = sharedLimiter(db, { nowMs: T0 });
    db.mode = 'down';
    await limiter.consume('tok_a');
    await limiter.close();
    expect(limiter.unreconciledUnits).toBe(0);
  });
});
