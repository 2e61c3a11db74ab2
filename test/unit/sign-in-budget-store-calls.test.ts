import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { ConsumeOptions, RateLimiter } from '../../src/library/limiter/rate-limiter';
import { WaitBudget } from '../../src/library/limiter/wait-budget';
import { SignInBudget, type SignInVerdict } from '../../src/http/sign-in-budget';
import { deferred } from '../support/deferred';

// What SignInBudget asks the shared store, call by call: the short cuts that save a store read, the
// policy and the wait budget each call carries, and when a waiting attempt asks again.

const BUDGET = 3;
// 10 s into a minute window: the window resets at RESET_MS.
const NOW_MS = 1_700_000_050_000;
const RESET_MS = 1_700_000_100_000;
const KEY = 'addr:203-0-113-7';
const FAILURES = `${KEY}:failed`;
/** The budget's policy, second in a limiter whose first policy it must never touch. */
const POLICY = { name: 'auth-failures', limit: BUDGET, windowMs: 60_000 };
const OTHER = { name: 'other', limit: 100, windowMs: 3_600_000 };
const VALID: SignInVerdict<string> = { kind: 'valid', value: 'tok_1' };
const INVALID: SignInVerdict<string> = { kind: 'invalid' };
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** One instance's view of the shared limiter: every consume and refund written down as `op key cost policy budget`. */
interface Recorder {
  readonly limiter: RateLimiter;
  readonly calls: string[];
  /** While true, the failures key answers as a fail-closed backend that is down. */
  failuresDown: boolean;
}

function describeCall(op: string, key: string, options: ConsumeOptions | undefined, budget: WaitBudget): string {
  const given = options?.budget === undefined ? 'unbounded' : options.budget === budget ? 'bounded' : 'another budget';
  return `${op} ${key} cost=${options?.cost} policy=${options?.policy?.name} ${given}`;
}

async function limiterAt(clock: () => number, limit = BUDGET): Promise<RateLimiter> {
  return createRateLimiter({ policies: [OTHER, { ...POLICY, limit }], clock });
}

async function downLimiter(): Promise<RateLimiter> {
  const down = {
    backend: 'redis' as const,
    shared: true,
    consume: () => Promise.reject(Object.assign(new Error('down'), { code: 'ECONNREFUSED' })),
    adjust: () => Promise.reject(new Error('down')),
    close: async () => undefined,
  };
  return createRateLimiter({ store: down, policies: [OTHER, POLICY], failurePolicy: 'fail-closed', clock: () => NOW_MS });
}

function recorder(shared: RateLimiter, down: RateLimiter, budget: WaitBudget): Recorder {
  const recording: Recorder = {
    calls: [],
    failuresDown: false,
    limiter: {
      backend: shared.backend,
      policies: shared.policies,
      failurePolicy: shared.failurePolicy,
      consume: (key, options) => {
        recording.calls.push(describeCall('consume', key, options, budget));
        return (recording.failuresDown && key.endsWith(':failed') ? down : shared).consume(key, options);
      },
      refund: (key, spent, options) => {
        recording.calls.push(describeCall('refund', key, options, budget));
        return shared.refund(key, spent, options);
      },
      whenReady: (timeoutMs) => shared.whenReady(timeoutMs),
      close: () => shared.close(),
    },
  };
  return recording;
}

/** A shared limiter at `clock` and instances on it, each recording its own calls; `sleep` counts the polls and needs no timer. */
async function fleet(options: { clock?: () => number; limit?: number; maxWaitMs?: number } = {}) {
  const clock = options.clock ?? (() => NOW_MS);
  const shared = await limiterAt(clock, options.limit);
  const down = await downLimiter();
  const waitBudget = new WaitBudget(60_000, () => 0);
  let polls = 0;
  const instance = () => {
    const rec = recorder(shared, down, waitBudget);
    const budget = new SignInBudget({ limiter: rec.limiter, policy: { ...POLICY, limit: options.limit ?? BUDGET }, clock, sleep: () => (polls++, flush()), pollMs: 25, maxWaitMs: options.maxWaitMs });
    return { rec, budget };
  };
  return { shared, waitBudget, instance, polls: () => polls };
}

const reserve = `consume ${KEY} cost=1 policy=auth-failures bounded`;
const read = `consume ${KEY} cost=0 policy=auth-failures bounded`;
const readFailures = `consume ${FAILURES} cost=0 policy=auth-failures bounded`;

describe('SignInBudget: what an attempt asks the store, on the budget policy only', () => {
  test.each<[string, () => Promise<SignInVerdict<string>>, string[]]>([
    ['a valid sign-in reserves a unit, bounded by the request, and gives it back', async () => VALID, [reserve, `refund ${KEY} cost=1 policy=auth-failures unbounded`]],
    ['a failed sign-in reserves a unit and charges the failures key, the charge not bounded', async () => INVALID, [reserve, `consume ${FAILURES} cost=1 policy=auth-failures unbounded`]],
    ['a verifier that throws gets its reservation back, not bounded', () => Promise.reject(new Error('token store down')), [reserve, `refund ${KEY} cost=1 policy=auth-failures unbounded`]],
  ])('%s', async (_name, verify, calls) => {
    const { shared, waitBudget, instance } = await fleet();
    const { rec, budget } = instance();
    await budget.attempt(KEY, 'flk_1', verify, waitBudget).catch(() => undefined);
    expect(rec.calls).toEqual(calls);
    expect((await shared.consume(KEY, { cost: 0, policy: OTHER })).remaining).toBe(OTHER.limit);
    expect((await shared.consume(FAILURES, { cost: 0, policy: OTHER })).remaining).toBe(OTHER.limit);
  });

  test('an attempt waiting on another instance asks the failures key, waits a poll, reads the address unbounded, and asks again until maxWaitMs', async () => {
    const { waitBudget, instance, polls } = await fleet({ maxWaitMs: 50 });
    const a = instance();
    const b = instance();
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const held = gates.map((gate, i) => a.budget.attempt(KEY, `flk_a${i}`, () => gate.promise));
    await flush();
    expect(await b.budget.attempt(KEY, 'flk_b', async () => VALID, waitBudget)).toEqual({ kind: 'busy', retryAfterMs: 1_000 });
    const poll = `consume ${KEY} cost=0 policy=auth-failures unbounded`;
    expect(b.rec.calls).toEqual([reserve, readFailures, poll, reserve, readFailures, poll, reserve, readFailures]);
    expect(polls()).toBe(2);
    for (const gate of gates) gate.resolve(VALID);
    await Promise.all(held);
  });
});

describe('SignInBudget.read: a store read saved where the answer is known', () => {
  it('reads an address with units left once, without asking its failures key', async () => {
    const { waitBudget, instance } = await fleet();
    const { rec, budget } = instance();
    expect(await budget.read(KEY, waitBudget)).toMatchObject({ spent: false, decision: { remaining: BUDGET } });
    expect(rec.calls).toEqual([read]);
  });

  it('reads an address whose last units this instance holds once: units held here are not failures', async () => {
    const { waitBudget, instance } = await fleet();
    const { rec, budget } = instance();
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const held = gates.map((gate, i) => budget.attempt(KEY, `flk_${i}`, () => gate.promise));
    await flush();
    rec.calls.length = 0;
    expect(await budget.read(KEY, waitBudget)).toMatchObject({ spent: false, decision: { remaining: 0 } });
    expect(rec.calls).toEqual([read]);
    for (const gate of gates) gate.resolve(VALID);
    await Promise.all(held);
  });

  it('reads once during a fail-closed outage, never spent', async () => {
    const limiter = await downLimiter();
    const waitBudget = new WaitBudget(60_000, () => 0);
    const rec = recorder(limiter, limiter, waitBudget);
    const budget = new SignInBudget({ limiter: rec.limiter, policy: POLICY, clock: () => NOW_MS });
    expect(await budget.read(KEY, waitBudget)).toMatchObject({ spent: false, decision: { reason: 'backend_unavailable' } });
    expect(rec.calls).toEqual([read]);
    await limiter.close();
  });

  it('reads the address as not spent when its failures key is down (held elsewhere or not, an outage locks nobody out)', async () => {
    const { waitBudget, instance } = await fleet();
    const a = instance();
    const b = instance();
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const held = gates.map((gate, i) => a.budget.attempt(KEY, `flk_a${i}`, () => gate.promise));
    await flush();
    b.rec.failuresDown = true;
    expect(await b.budget.read(KEY, waitBudget)).toMatchObject({ spent: false, decision: { remaining: 0 } });
    expect(b.rec.calls).toEqual([read, readFailures]);
    for (const gate of gates) gate.resolve(VALID);
    await Promise.all(held);
  });

  it('does not remember a failure whose charge met a down failures key: the next read asks the key again', async () => {
    const { waitBudget, instance } = await fleet({ limit: 1 });
    const { rec, budget } = instance();
    rec.failuresDown = true;
    expect(await budget.attempt(KEY, 'flk_bad', async () => INVALID)).toMatchObject({ kind: 'invalid' });
    rec.failuresDown = false;
    rec.calls.length = 0;
    // The failure was lost with the outage: the failures key has the unit, so the address is not spent.
    expect(await budget.read(KEY, waitBudget)).toMatchObject({ spent: false, decision: { remaining: 0 } });
    expect(rec.calls).toEqual([read, readFailures]);
  });

  test.each<[string, number, boolean, string[]]>([
    ['an address spent by failures stays spent a ms before its window ends, answered from memory', RESET_MS - 1, true, [read]],
    ['an address spent by failures has its failures key read again once the window has ended: units held elsewhere then are not failures', RESET_MS, false, [read, readFailures]],
  ])('%s', async (_name, atMs, spent, calls) => {
    let nowMs = NOW_MS;
    const { waitBudget, instance } = await fleet({ clock: () => nowMs });
    const a = instance();
    const b = instance();
    for (let i = 0; i < BUDGET; i++) await b.budget.attempt(KEY, `flk_bad${i}`, async () => INVALID);
    nowMs = atMs;
    // The other instance takes what the window has: nothing before it ends, the whole budget after.
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const held = gates.map((gate, i) => a.budget.attempt(KEY, `flk_a${i}`, () => gate.promise));
    await flush();
    b.rec.calls.length = 0;
    expect(await b.budget.read(KEY, waitBudget)).toMatchObject({ spent, decision: { remaining: 0 } });
    expect(b.rec.calls).toEqual(calls);
    for (const gate of gates) gate.resolve(VALID);
    await Promise.all(held);
  });
});
