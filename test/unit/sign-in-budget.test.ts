import fc from 'fast-check';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { SignInBudget, type SignInAttempt, type SignInVerdict } from '../../src/http/sign-in-budget';
import { deferred } from '../support/deferred';

const BUDGET = 3;
// 10 s into a minute window, and still: the budget never gets a fresh window mid-test.
const NOW_MS = 1_700_000_050_000;
const KEY = 'addr:203-0-113-7';

async function failureLimiter(limit = BUDGET): Promise<RateLimiter> {
  return createRateLimiter({ policy: { name: 'auth-failures', limit, windowMs: 60_000 }, clock: () => NOW_MS });
}

/** A verification held open until the test settles it. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const VALID: SignInVerdict<string> = { kind: 'valid', value: 'tok_1' };
const INVALID: SignInVerdict<string> = { kind: 'invalid' };

describe('SignInBudget: one secret, one verification', () => {
  it('shares one reservation and one verification between concurrent attempts of one credential from one address', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter });
    const gate = deferred<SignInVerdict<string>>();
    let verifications = 0;
    const attempts = Array.from({ length: 30 }, () => budget.attempt(KEY, 'flk_same', () => (verifications++, gate.promise)));
    await flush();
    expect(verifications).toBe(1);
    expect((await limiter.consume(KEY, { cost: 0 })).remaining).toBe(BUDGET - 1);
    gate.resolve(VALID);
    expect((await Promise.all(attempts)).map((a) => a.kind)).toEqual(Array(30).fill('valid'));
    expect((await limiter.consume(KEY, { cost: 0 })).remaining).toBe(BUDGET);
  });

  it('counts one failure for a burst of one wrong secret', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter });
    const attempts = await Promise.all(Array.from({ length: 10 }, () => budget.attempt(KEY, 'flk_wrong', () => Promise.resolve(INVALID))));
    expect(attempts.map((a) => a.kind)).toEqual(Array(10).fill('invalid'));
    expect((await limiter.consume(KEY, { cost: 0 })).remaining).toBe(BUDGET - 1);
  });

  it('verifies the same credential again once the first verification is over (no verdict is kept here)', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter });
    let verifications = 0;
    await budget.attempt(KEY, 'flk_a', () => (verifications++, Promise.resolve(VALID)));
    await budget.attempt(KEY, 'flk_a', () => (verifications++, Promise.resolve(VALID)));
    expect(verifications).toBe(2);
  });
});

describe('SignInBudget: a reservation held here is not a failure', () => {
  it(`admits ${BUDGET * 4} distinct valid credentials at once, never more than ${BUDGET} verifying at a time`, async () => {
    const limiter = await failureLimiter();
    const waits: number[] = [];
    const budget = new SignInBudget({ limiter, onWait: () => waits.push(1) });
    let verifying = 0;
    let mostAtOnce = 0;
    const verify = async (): Promise<SignInVerdict<string>> => {
      verifying++;
      mostAtOnce = Math.max(mostAtOnce, verifying);
      await flush();
      verifying--;
      return VALID;
    };
    const attempts = await Promise.all(Array.from({ length: BUDGET * 4 }, (_, i) => budget.attempt(KEY, `flk_${i}`, verify)));
    expect(attempts.map((a) => a.kind)).toEqual(Array(BUDGET * 4).fill('valid'));
    expect(mostAtOnce).toBe(BUDGET);
    expect(waits.length).toBeGreaterThan(0);
    expect(budget.heldReservations).toBe(0);
    expect((await limiter.consume(KEY, { cost: 0 })).remaining).toBe(BUDGET);
  });

  it(`verifies at most ${BUDGET} of 200 distinct wrong credentials at once; the rest are refused and never verified`, async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter });
    let verifications = 0;
    const attempts = await Promise.all(
      Array.from({ length: 200 }, (_, i) => budget.attempt(KEY, `flk_guess_${i}`, async () => (verifications++, await flush(), INVALID))),
    );
    expect(verifications).toBe(BUDGET);
    expect(attempts.filter((a) => a.kind === 'invalid')).toHaveLength(BUDGET);
    expect(attempts.filter((a) => a.kind === 'refused')).toHaveLength(200 - BUDGET);
    expect(await budget.attempt(KEY, 'flk_next', () => Promise.resolve(VALID))).toMatchObject({ kind: 'refused' });
  });

  it('reads the budget as not spent while its units are held by verifications in flight here, and spent once they failed', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter });
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const attempts = gates.map((gate, i) => budget.attempt(KEY, `flk_${i}`, () => gate.promise));
    await flush();
    expect(await budget.read(KEY)).toMatchObject({ spent: false, decision: { remaining: 0 } });
    for (const gate of gates) gate.resolve(INVALID);
    await Promise.all(attempts);
    expect(await budget.read(KEY)).toMatchObject({ spent: true, decision: { remaining: 0 } });
  });

  it('gives the reservation back when the verifier throws, and the error reaches every attempt sharing it', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter });
    const broken = new Error('token store down');
    const attempts = Array.from({ length: 3 }, () => budget.attempt(KEY, 'flk_x', () => Promise.reject(broken)));
    for (const attempt of attempts) await expect(attempt).rejects.toBe(broken);
    expect((await limiter.consume(KEY, { cost: 0 })).remaining).toBe(BUDGET);
    expect(budget.heldReservations).toBe(0);
  });

  it('keeps addresses apart: one address spent by failures does not refuse another', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter });
    for (let i = 0; i < BUDGET; i++) await budget.attempt(KEY, `flk_bad_${i}`, () => Promise.resolve(INVALID));
    expect(await budget.attempt(KEY, 'flk_good', () => Promise.resolve(VALID))).toMatchObject({ kind: 'refused' });
    expect(await budget.attempt('addr:198-51-100-1', 'flk_good', () => Promise.resolve(VALID))).toEqual(VALID);
  });
});

describe('SignInBudget: units held by sign-ins on other instances', () => {
  /** Two instances: one shared budget (the limiter), each its own SignInBudget; polls need no timer. */
  async function twoInstances(options: { maxWaitMs?: number } = {}) {
    const limiter = await failureLimiter();
    let polls = 0;
    const sleep = (): Promise<void> => (polls++, flush());
    const make = () => new SignInBudget({ limiter, clock: () => NOW_MS, sleep, pollMs: 25, ...options });
    return { limiter, a: make(), b: make(), polls: () => polls };
  }

  it('waits while another instance holds the whole budget for valid sign-ins, then verifies: nobody refused', async () => {
    const { a, b, polls } = await twoInstances();
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const held = gates.map((gate, i) => a.attempt(KEY, `flk_a${i}`, () => gate.promise));
    await flush();
    let verified = false;
    const waiting = b.attempt(KEY, 'flk_b', async () => ((verified = true), VALID));
    await flush();
    await flush();
    expect(verified).toBe(false);
    for (const gate of gates) gate.resolve(VALID);
    expect(await waiting).toEqual(VALID);
    expect((await Promise.all(held)).map((h) => h.kind)).toEqual(Array(BUDGET).fill('valid'));
    expect(polls()).toBeGreaterThan(0);
  });

  it('is refused once the sign-ins another instance held turned out to be failures, and never verifies', async () => {
    const { a, b } = await twoInstances();
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const held = gates.map((gate, i) => a.attempt(KEY, `flk_a${i}`, () => gate.promise));
    await flush();
    let verified = false;
    const waiting = b.attempt(KEY, 'flk_b', async () => ((verified = true), VALID));
    await flush();
    for (const gate of gates) gate.resolve(INVALID);
    expect(await waiting).toMatchObject({ kind: 'refused' });
    await Promise.all(held);
    expect(verified).toBe(false);
    expect(await b.read(KEY)).toMatchObject({ spent: true });
  });

  it('answers busy (not a refusal for failures) when another instance holds the budget past maxWaitMs', async () => {
    const { a, b, polls } = await twoInstances({ maxWaitMs: 100 });
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const held = gates.map((gate, i) => a.attempt(KEY, `flk_a${i}`, () => gate.promise));
    await flush();
    expect(await b.attempt(KEY, 'flk_b', () => Promise.resolve(VALID))).toEqual({ kind: 'busy', retryAfterMs: 1_000 });
    expect(polls()).toBe(100 / 25);
    expect(await b.read(KEY)).toMatchObject({ spent: false });
    for (const gate of gates) gate.resolve(VALID);
    await Promise.all(held);
  });

  it('remembers an address spent by failures until its window ends: a flood past the budget reads the failures once', async () => {
    let nowMs = NOW_MS;
    const limiter = await createRateLimiter({ policy: { name: 'auth-failures', limit: BUDGET, windowMs: 60_000 }, clock: () => nowMs });
    const budget = new SignInBudget({ limiter, clock: () => nowMs });
    for (let i = 0; i < BUDGET; i++) await budget.attempt(KEY, `flk_bad${i}`, () => Promise.resolve(INVALID));
    const consume = jest.spyOn(limiter, 'consume');
    for (let i = 0; i < 20; i++) expect(await budget.attempt(KEY, `flk_more${i}`, () => Promise.resolve(VALID))).toMatchObject({ kind: 'refused' });
    expect(consume.mock.calls.filter(([key]) => key !== KEY)).toHaveLength(0);
    nowMs += 60_000;
    expect(await budget.attempt(KEY, 'flk_next_window', () => Promise.resolve(VALID))).toEqual(VALID);
  });

  it.each([
    [{ pollMs: 0 }, /pollMs must be a positive integer/],
    [{ maxWaitMs: -1 }, /maxWaitMs must be a non-negative integer/],
    [{ pollMs: 1.5 }, /pollMs/],
  ])('refuses %p', async (options, message) => {
    const limiter = await failureLimiter();
    expect(() => new SignInBudget({ limiter, ...options })).toThrow(message);
  });
});

describe('SignInBudget: properties', () => {
  it('under any order of verdicts over 1 to 3 instances: failures verified ≤ budget, a valid credential is refused only once failures spent the budget, never busy, nothing stays held', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ valid: fc.boolean(), instance: fc.integer({ min: 0, max: 2 }) }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 3 }),
        fc.scheduler(),
        async (calls, limit, instanceCount, s) => {
          const limiter = await failureLimiter(limit);
          const sleep = (): Promise<void> => s.schedule(Promise.resolve(), 'poll');
          const budgets = Array.from({ length: instanceCount }, () => new SignInBudget({ limiter, clock: () => NOW_MS, sleep }));
          let failedVerifications = 0;
          let verifying = 0;
          let mostAtOnce = 0;
          const attempts: Promise<SignInAttempt<string>>[] = calls.map(({ valid, instance }, i) =>
            (budgets[instance % instanceCount] as SignInBudget).attempt(KEY, `flk_${i}`, async () => {
              verifying++;
              mostAtOnce = Math.max(mostAtOnce, verifying);
              const verdict = await s.schedule(Promise.resolve(valid ? VALID : INVALID), `verify ${i} ${valid ? 'valid' : 'invalid'}`);
              verifying--;
              if (verdict.kind === 'invalid') failedVerifications++;
              return verdict;
            }),
          );
          await s.waitFor(Promise.all(attempts));
          const outcomes = await Promise.all(attempts);
          const invalidCount = calls.filter((c) => !c.valid).length;
          expect(failedVerifications).toBe(Math.min(invalidCount, limit));
          expect(mostAtOnce).toBeLessThanOrEqual(limit);
          outcomes.forEach((outcome, i) => {
            expect(['valid', 'invalid', 'refused']).toContain(outcome.kind);
            if (calls[i]?.valid === true) expect(outcome.kind === 'valid' || failedVerifications === limit).toBe(true);
          });
          if (invalidCount < limit) expect(outcomes.filter((o) => o.kind === 'valid')).toHaveLength(calls.length - invalidCount);
          for (const budget of budgets) expect(budget.heldReservations).toBe(0);
          expect((await limiter.consume(KEY, { cost: 0 })).remaining).toBe(limit - failedVerifications);
          await limiter.close();
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('SignInBudget: what each answer carries (mutants Stryker found alive)', () => {
  it('counts the reservations held over every address', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter });
    const gates = [deferred<SignInVerdict<string>>(), deferred<SignInVerdict<string>>(), deferred<SignInVerdict<string>>()];
    const attempts = [
      budget.attempt('addr:a', 'flk_1', () => gates[0]!.promise),
      budget.attempt('addr:a', 'flk_2', () => gates[1]!.promise),
      budget.attempt('addr:b', 'flk_3', () => gates[2]!.promise),
    ];
    await flush();
    expect(budget.heldReservations).toBe(3);
    for (const gate of gates) gate.resolve(VALID);
    await Promise.all(attempts);
    expect(budget.heldReservations).toBe(0);
  });

  it('reads with cost 0 on its own policy, handing back the limiter decision and spending nothing', async () => {
    const limiter = await createRateLimiter({
      policies: [
        { name: 'other', limit: 100, windowMs: 3_600_000 },
        { name: 'auth-failures', limit: BUDGET, windowMs: 60_000 },
      ],
      clock: () => NOW_MS,
    });
    const policy = { name: 'auth-failures', limit: BUDGET, windowMs: 60_000 };
    const budget = new SignInBudget({ limiter, policy });
    const read = await budget.read(KEY);
    expect(read).toEqual({ spent: false, decision: expect.objectContaining({ policyName: 'auth-failures', limit: BUDGET, remaining: BUDGET }) });
    expect(await budget.attempt(KEY, 'flk_bad', () => Promise.resolve(INVALID))).toEqual({
      kind: 'invalid',
      decision: expect.objectContaining({ policyName: 'auth-failures', remaining: BUDGET - 1 }),
    });
    expect((await limiter.consume(KEY, { cost: 0, policy })).remaining).toBe(BUDGET - 1);
  });

  it('uses the limiter first policy when given none', async () => {
    const limiter = await failureLimiter();
    const budget = new SignInBudget({ limiter });
    expect((await budget.read(KEY)).decision).toMatchObject({ policyName: 'auth-failures', limit: BUDGET });
  });

  it('answers unavailable with the decision when a fail-closed backend is down, and never reads it as spent', async () => {
    const down = {
      backend: 'redis' as const,
      shared: true,
      consume: () => Promise.reject(Object.assign(new Error('down'), { code: 'ECONNREFUSED' })),
      adjust: () => Promise.reject(new Error('down')),
      close: async () => undefined,
    };
    const limiter = await createRateLimiter({ store: down, policy: { name: 'auth-failures', limit: BUDGET, windowMs: 60_000 }, failurePolicy: 'fail-closed', clock: () => NOW_MS });
    const budget = new SignInBudget({ limiter });
    let verified = false;
    const attempt = await budget.attempt(KEY, 'flk_x', async () => ((verified = true), VALID));
    expect(attempt).toEqual({ kind: 'unavailable', decision: expect.objectContaining({ allowed: false, reason: 'backend_unavailable' }) });
    expect(verified).toBe(false);
    expect(await budget.read(KEY)).toEqual({ spent: false, decision: expect.objectContaining({ reason: 'backend_unavailable' }) });
    await limiter.close();
  });

  it('reads an address as not spent while this instance holds its last units, with the decision', async () => {
    const limiter = await failureLimiter(1);
    const budget = new SignInBudget({ limiter });
    const gate = deferred<SignInVerdict<string>>();
    const held = budget.attempt(KEY, 'flk_1', () => gate.promise);
    await flush();
    expect(await budget.read(KEY)).toEqual({ spent: false, decision: expect.objectContaining({ remaining: 0 }) });
    gate.resolve(VALID);
    await held;
  });

  it('tells a busy caller to come back after the poll interval when it is longer than a second', async () => {
    const limiter = await failureLimiter();
    const make = () => new SignInBudget({ limiter, clock: () => NOW_MS, sleep: flush, pollMs: 2_500, maxWaitMs: 0 });
    const [a, b] = [make(), make()];
    const gates = Array.from({ length: BUDGET }, () => deferred<SignInVerdict<string>>());
    const held = gates.map((gate, i) => a.attempt(KEY, `flk_a${i}`, () => gate.promise));
    await flush();
    expect(await b.attempt(KEY, 'flk_b', () => Promise.resolve(VALID))).toEqual({ kind: 'busy', retryAfterMs: 2_500 });
    for (const gate of gates) gate.resolve(VALID);
    await Promise.all(held);
  });

  it('accepts a maxWaitMs of 0 and says which knob is wrong', async () => {
    const limiter = await failureLimiter();
    expect(() => new SignInBudget({ limiter, maxWaitMs: 0 })).not.toThrow();
    expect(() => new SignInBudget({ limiter, pollMs: 0 })).toThrow('SignInBudget: pollMs must be a positive integer of milliseconds, got 0');
    expect(() => new SignInBudget({ limiter, maxWaitMs: -5 })).toThrow('SignInBudget: maxWaitMs must be a non-negative integer of milliseconds, got -5');
  });
});
