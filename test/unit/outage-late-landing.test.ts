import fc from 'fast-check';
import { withDeadline, withLateOutcome } from '../../src/library/limiter/backend-guard';
import type { RateLimitPolicy } from '../../src/library/window/policy';
import { Connection, FreezableDatabase, freezeGuard, settleAll, type Mode } from '../support/freezable-store';
import { WindowRateLimiter, type FailurePolicy } from '../../src/library/limiter/rate-limiter';
import { silentLogger } from '../../src/shared/logger';

/**
 * Calls the limiter gave up on (timed out) that still land on the store once
 * it answers: a Redis command in a frozen server's socket, a firebase-admin
 * transaction. Issue 19 item 4: after a freeze Redis held 11 for 8 admitted,
 * because such a call was counted by the store and written back as well.
 */

const WINDOW_MS = 60_000;
const policy: RateLimitPolicy = { name: 'default', limit: 10, windowMs: WINDOW_MS };
const T0 = 1_000 * WINDOW_MS + 1_000;

function limiterOn(db: FreezableDatabase, clock: { nowMs: number }, failurePolicy: FailurePolicy = 'fail-open'): WindowRateLimiter {
  return new WindowRateLimiter({ store: new Connection(db), guard: freezeGuard(db), policies: [policy], failurePolicy, clock: () => clock.nowMs, logger: silentLogger });
}

async function admitted(limiter: WindowRateLimiter, calls: number, cost = 1): Promise<number> {
  let units = 0;
  for (let i = 0; i < calls; i++) if ((await limiter.consume('tok_a', { cost })).allowed) units += cost;
  return units;
}

describe('calls given up on that land on the store later are counted once', () => {
  test.each([
    // [name, shared calls before, calls while hung (sent, given up on), calls while down (not sent), the hung calls are lost, shared calls after]
    ['a freeze: the first call meets it and lands at the thaw, the others are answered locally', 3, 1, 4, false, 0],
    ['a freeze: several calls in flight at once land at the thaw', 3, 3, 2, false, 0],
    ['a freeze whose queued calls are lost with the connection: each is written back once', 3, 2, 2, true, 0],
    ['a freeze, then the key is called again: it is refused only past its figure', 2, 2, 3, false, 10],
  ] as const)('%s', async (_name, before, hung, down, lose, after) => {
    const db = new FreezableDatabase();
    const clock = { nowMs: T0 };
    const a = limiterOn(db, clock);
    let total = await admitted(a, before);
    db.mode = 'hung';
    const inFlight: Promise<unknown>[] = [];
    for (let i = 0; i < hung; i++) inFlight.push(a.consume('tok_a'));
    const hungDecisions = (await Promise.all(inFlight)) as { allowed: boolean; shared: boolean }[];
    expect(hungDecisions.every((d) => d.allowed && !d.shared)).toBe(true);
    total += hung;
    db.mode = 'down';
    total += await admitted(a, down);
    expect(a.inFlightUnits).toBe(hung);
    db.thaw(lose);
    await settleAll([a]);
    expect(a.inFlightUnits).toBe(0);
    expect(a.unreconciledUnits).toBe(0);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(total);
    total += await admitted(a, after);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(total);
    if (after > 0) expect(total).toBe(policy.limit);
  });

  test('a write-back given up on that lands later is not written again', async () => {
    const db = new FreezableDatabase();
    const clock = { nowMs: T0 };
    const a = limiterOn(db, clock);
    await admitted(a, 2);
    db.mode = 'down';
    expect(await admitted(a, 3)).toBe(3);
    db.mode = 'hung';
    await a.reconcile(); // sent and given up on: it waits in the frozen socket
    db.thaw();
    await settleAll([a]);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(5);
  });

  test('fail-closed: a refused call that the store counted late is given back', async () => {
    const db = new FreezableDatabase();
    const clock = { nowMs: T0 };
    const a = limiterOn(db, clock, 'fail-closed');
    await admitted(a, 4);
    db.mode = 'hung';
    expect(await a.consume('tok_a')).toMatchObject({ allowed: false, reason: 'backend_unavailable' });
    db.thaw();
    await settleAll([a]);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(4);
  });

  test('a call refused from the local window that the store allowed late is given back', async () => {
    const db = new FreezableDatabase();
    const clock = { nowMs: T0 };
    const a = limiterOn(db, clock);
    const b = limiterOn(db, clock);
    // a last saw 9; b spends nothing, so the store has room only for what a itself admitted.
    expect(await admitted(a, 9)).toBe(9);
    db.mode = 'down';
    expect(await admitted(a, 1)).toBe(1); // local: 10 of 10
    db.mode = 'hung';
    expect(await a.consume('tok_a')).toMatchObject({ allowed: false, shared: false }); // sent; the store (at 9) will allow it
    db.thaw();
    await settleAll([a, b]);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(10);
  });

  type Step = { readonly instance: number; readonly mode: Mode; readonly cost: number; readonly thaw: boolean; readonly lose: boolean };
  const steps = fc.array(
    fc.record({
      instance: fc.integer({ min: 0, max: 2 }),
      mode: fc.constantFrom<Mode>('up', 'hung', 'down'),
      cost: fc.integer({ min: 0, max: 3 }),
      thaw: fc.boolean(),
      lose: fc.boolean(),
    }),
    { maxLength: 60 },
  );

  async function spentIsAdmitted(run: readonly Step[]): Promise<void> {
    const db = new FreezableDatabase();
    const clock = { nowMs: T0 };
    const all = [limiterOn(db, clock), limiterOn(db, clock), limiterOn(db, clock)];
    let admittedUnits = 0;
    for (const s of run) {
      if (s.thaw) db.thaw(s.lose);
      db.mode = s.mode;
      const d = await all[s.instance]!.consume('tok_a', { cost: s.cost });
      if (d.allowed) admittedUnits += s.cost;
    }
    db.thaw();
    await settleAll(all);
    expect(all.map((l) => l.unreconciledUnits + l.inFlightUnits)).toEqual([0, 0, 0]);
    expect(db.spent('tok_a', clock.nowMs, policy)).toBe(admittedUnits);
  }

  const step = (instance: number, mode: Mode, cost: number, thaw = false, lose = false): Step => ({ instance, mode, cost, thaw, lose });
  test.each([
    // Found by the property below: a call refused locally that the store counted late was given back by
    // a refund call of its own, which met the store down again and was dropped (the store kept 3 too many).
    ['a late-counted refusal whose give-back meets the store down again', [step(0, 'up', 3), step(1, 'up', 2), step(1, 'hung', 3), step(1, 'hung', 3, true, true), step(0, 'down', 0, true)]],
  ] as const)('vector: %s', async (_name, run) => {
    await spentIsAdmitted(run);
  });

  test('property: once every late call has ended and the ledgers are written back, the store has spent exactly what was admitted', async () => {
    await fc.assert(fc.asyncProperty(steps, spentIsAdmitted), { numRuns: 500 });
  });
});

describe('withDeadline tells what a call it gave up on did in the end', () => {
  function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
    let resolve!: (v: T) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  }

  test.each([
    ['resolves after the deadline: landed, with its value', (d: ReturnType<typeof deferred<number>>) => d.resolve(7), { landed: true, value: 7 }],
    ['rejects after the deadline: did not land', (d: ReturnType<typeof deferred<number>>) => d.reject(new Error('x')), { landed: false }],
    [
      "rejects with a store's own timeout that landed later: that store's outcome",
      (d: ReturnType<typeof deferred<number>>) => d.reject(withLateOutcome(new Error('store timeout'), Promise.resolve({ landed: true, value: 9 }))),
      { landed: true, value: 9 },
    ],
  ] as const)('a call that %s', async (_name, end, expected) => {
    const call = deferred<number>();
    const result = await withDeadline(() => call.promise, 1);
    expect(result).toMatchObject({ ok: false, cause: 'timeout' });
    end(call);
    expect(result.ok ? undefined : await result.late).toEqual(expected);
  });

  test("a store's own timeout error before the deadline carries its late outcome", async () => {
    const late = Promise.resolve({ landed: false as const });
    const result = await withDeadline(() => Promise.reject(withLateOutcome(new Error('store timeout'), late)), 1_000);
    expect(result).toMatchObject({ ok: false, cause: 'error' });
    expect(result.ok ? undefined : await result.late).toEqual({ landed: false });
  });

  test('a call that fails before the deadline has no late outcome: it changed nothing', async () => {
    const result = await withDeadline(() => Promise.reject(new Error('refused')), 1_000);
    expect(result.ok ? 'ok' : result.late).toBeUndefined();
  });
});
