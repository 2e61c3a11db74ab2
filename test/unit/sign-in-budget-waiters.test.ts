import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { MAX_SPENT_ADDRESSES, SignInBudget, type SignInAttempt, type SignInVerdict } from '../../src/http/sign-in-budget';
import { deferred } from '../support/deferred';

// Who wakes whom among the attempts of one address on one instance, how long an address's state
// and the spent-address memory last, and the default poll sleep.

const BUDGET = 3;
// 10 s into a minute window, and still: the budget never gets a fresh window mid-test.
const NOW_MS = 1_700_000_050_000;
const KEY = 'addr:203-0-113-7';
const VALID: SignInVerdict<string> = { kind: 'valid', value: 'tok_1' };
const INVALID: SignInVerdict<string> = { kind: 'invalid' };
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function failureLimiter(limit = BUDGET): Promise<RateLimiter> {
  return createRateLimiter({ policy: { name: 'auth-failures', limit, windowMs: 60_000 }, clock: () => NOW_MS });
}

/** Consumes of `key` at `cost` the limiter was asked for since the spy started. */
function asked(consume: jest.SpyInstance, key: string, cost: number): number {
  return consume.mock.calls.filter(([k, options]) => k === key && options?.cost === cost).length;
}

/** The whole budget held by verifications in flight on `budget`, and one more attempt waiting for them. */
async function fullWithOneWaiting(budget: SignInBudget) {
  const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
  const held = gates.map((gate, i) => budget.attempt(KEY, `flk_${i}`, () => gate.promise));
  let verified = false;
  const waiting = budget.attempt(KEY, 'flk_waiting', async () => ((verified = true), VALID));
  await flush();
  return { gates, held, waiting, verified: () => verified };
}

describe('SignInBudget: an attempt waiting for this instance own sign-ins', () => {
  it('waits for them without polling the store or asking the failures key', async () => {
    const limiter = await failureLimiter();
    let polls = 0;
    const budget = new SignInBudget({ limiter, clock: () => NOW_MS, sleep: () => (polls++, flush()) });
    const consume = jest.spyOn(limiter, 'consume');
    const { gates, held, waiting } = await fullWithOneWaiting(budget);
    for (const gate of gates) gate.resolve(VALID);
    expect(await waiting).toEqual(VALID);
    await Promise.all(held);
    expect(polls).toBe(0);
    expect(asked(consume, `${KEY}:failed`, 0)).toBe(0);
  });

  it('is woken by a valid sign-in and verifies while the other sign-ins still verify', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter, clock: () => NOW_MS });
    const { gates, held, waiting, verified } = await fullWithOneWaiting(budget);
    gates[0]!.resolve(VALID);
    await flush();
    expect(verified()).toBe(true);
    expect(budget.heldReservations).toBe(BUDGET - 1);
    expect(await waiting).toEqual(VALID);
    for (const gate of gates) gate.resolve(VALID);
    await Promise.all(held);
  });

  it('is not woken by a failure while other sign-ins still verify: a failure frees no unit, so it would only ask again in vain', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter, clock: () => NOW_MS });
    const consume = jest.spyOn(limiter, 'consume');
    const { gates, held, waiting, verified } = await fullWithOneWaiting(budget);
    const reservationsBefore = asked(consume, KEY, 1);
    gates[0]!.resolve(INVALID);
    await flush();
    expect(asked(consume, KEY, 1)).toBe(reservationsBefore);
    gates[1]!.resolve(VALID);
    expect(await waiting).toEqual(VALID);
    expect(verified()).toBe(true);
    expect(asked(consume, KEY, 1)).toBe(reservationsBefore + 1);
    gates[2]!.resolve(VALID);
    await Promise.all(held);
  });
});

describe('SignInBudget: the state of an address', () => {
  it('keeps an address while any of its attempts is under way, and forgets it with the last one', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter, clock: () => NOW_MS });
    const [first, second] = [deferred<SignInVerdict<string>>(), deferred<SignInVerdict<string>>()];
    const attempts: Promise<SignInAttempt<string>>[] = [budget.attempt(KEY, 'flk_1', () => first.promise), budget.attempt(KEY, 'flk_2', () => second.promise)];
    await flush();
    expect([budget.trackedAddresses, budget.heldReservations]).toEqual([1, 2]);
    first.resolve(VALID);
    await attempts[0];
    expect([budget.trackedAddresses, budget.heldReservations]).toEqual([1, 1]);
    second.resolve(INVALID);
    await attempts[1];
    expect([budget.trackedAddresses, budget.heldReservations]).toEqual([0, 0]);
  });

  test.each<[string, SignInVerdict<string> | Error]>([
    ['valid', VALID],
    ['invalid', INVALID],
    ['a verifier error', new Error('token store down')],
  ])('forgets an address after a lone attempt ending %s', async (_name, outcome) => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter, clock: () => NOW_MS });
    await budget.attempt(KEY, 'flk_1', async () => {
      if (outcome instanceof Error) throw outcome;
      return outcome;
    }).catch(() => undefined);
    expect(budget.trackedAddresses).toBe(0);
  });
});

describe('SignInBudget: the spent-address memory', () => {
  it(`remembers at most ${MAX_SPENT_ADDRESSES} spent addresses: the one remembered first is read from the store again, the next is not`, async () => {
    const limiter = await failureLimiter(1);
    const budget = new SignInBudget({ limiter, clock: () => NOW_MS });
    const address = (i: number): string => `addr:${i}`;
    for (let i = 0; i <= MAX_SPENT_ADDRESSES; i++) await budget.attempt(address(i), 'flk_bad', async () => INVALID);
    const consume = jest.spyOn(limiter, 'consume');
    expect(await budget.read(address(0))).toMatchObject({ spent: true });
    expect(asked(consume, `${address(0)}:failed`, 0)).toBe(1);
    expect(await budget.read(address(2))).toMatchObject({ spent: true });
    expect(asked(consume, `${address(2)}:failed`, 0)).toBe(0);
  });
});

describe('SignInBudget: the default sleep between polls', () => {
  afterEach(() => jest.useRealTimers());

  it('asks the shared budget again only once pollMs have passed on the timer', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask', 'Date', 'performance'] });
    const limiter = await failureLimiter();
    const a = new SignInBudget({ limiter, clock: () => NOW_MS });
    const b = new SignInBudget({ limiter, clock: () => NOW_MS, pollMs: 25 });
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const held = gates.map((gate, i) => a.attempt(KEY, `flk_a${i}`, () => gate.promise));
    await flush();
    let verified = false;
    const waiting = b.attempt(KEY, 'flk_b', async () => ((verified = true), VALID));
    await flush();
    for (const gate of gates) gate.resolve(VALID);
    await Promise.all(held);
    await flush();
    expect(verified).toBe(false);
    await jest.advanceTimersByTimeAsync(25);
    expect(await waiting).toEqual(VALID);
    expect(verified).toBe(true);
  });
});
