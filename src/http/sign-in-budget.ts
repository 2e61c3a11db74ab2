import { createHash } from 'node:crypto';
import type { Decision, RateLimiter, RateLimitPolicy, WaitBudget } from '../library';

/** What a credential turned out to be: a caller (`value`), or a failed sign-in. A verifier that cannot answer throws. */
export type SignInVerdict<T> = { readonly kind: 'valid'; readonly value: T } | { readonly kind: 'invalid' };

/**
 * How an attempt under the budget ended.
 * - `valid`: verified; its reservation was given back, nothing counted.
 * - `invalid`: a failed sign-in, counted; `decision` is the reservation it kept (its `remaining` is what is left).
 * - `refused`: the address's failures spent the budget; the credential was never verified (429).
 * - `unavailable`: a fail-closed backend is down, nothing can be reserved (503, `decision.retryAfterMs`).
 * - `busy`: the budget stayed held by sign-ins in flight on other instances for `maxWaitMs`; nothing failed,
 *   so not a 429 for failures (503, retry after `retryAfterMs`).
 */
export type SignInAttempt<T> =
  | { readonly kind: 'valid'; readonly value: T }
  | { readonly kind: 'invalid'; readonly decision: Decision }
  | { readonly kind: 'refused'; readonly decision: Decision }
  | { readonly kind: 'unavailable'; readonly decision: Decision }
  | { readonly kind: 'busy'; readonly retryAfterMs: number };

/** How long an attempt waits, at most, for units held by other instances' sign-ins: a few token store lookups. */
export const DEFAULT_SIGN_IN_MAX_WAIT_MS = 3_000;
/** How often an attempt waiting on other instances asks the shared budget again (one read per address per instance). */
export const DEFAULT_SIGN_IN_POLL_MS = 25;
/** Addresses whose failures are known to have spent the budget, remembered until their window ends; past it the oldest is forgotten. */
export const MAX_SPENT_ADDRESSES = 10_000;

/** A read of the budget for a credential whose verdict is already known (cached). */
export interface SignInBudgetRead {
  /** True when failures that happened used the budget up, not sign-ins still being verified here. */
  readonly spent: boolean;
  readonly decision: Decision;
}

export interface SignInBudgetOptions {
  /** The failed sign-in limiter (`AUTH_FAILURES_PER_MINUTE`); shared by every instance. */
  readonly limiter: RateLimiter;
  /** The budget's policy. Default: the limiter's first policy. */
  readonly policy?: RateLimitPolicy;
  /** Told when an attempt waits for another sign-in of its address to finish; default none. */
  readonly onWait?: () => void;
  /** Epoch ms, the limiter's own clock (a spent budget is remembered until its `resetAtMs`). Default Date.now. */
  readonly clock?: () => number;
  /** Waits between two asks while the units are held by other instances; tests pass one that needs no timer. Default setTimeout. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** The longest an attempt waits for units other instances hold, counted in polls. Default DEFAULT_SIGN_IN_MAX_WAIT_MS. */
  readonly maxWaitMs?: number;
  /** Interval of those asks. Default DEFAULT_SIGN_IN_POLL_MS. */
  readonly pollMs?: number;
}

interface AddressState {
  /** Reservations this instance holds for the address: verifications in flight. */
  held: number;
  /** Attempts of the address under way here (reserving, waiting or verifying); the state goes with the last. */
  attempts: number;
  /** Attempts waiting for one of them to finish. */
  readonly waiters: (() => void)[];
  /** The one ask of the shared budget that attempts waiting on other instances share. */
  poll: Promise<void> | undefined;
}

/**
 * The failed sign-in budget of a client address (ADR 0045, which replaces
 * ADR 0010's known limit). Every credential not verified recently goes
 * through `attempt`, whatever kind it is (an `flk_` secret, a JWT): that is
 * the one place failures are counted.
 *
 * - **Reserve, then verify.** A unit of the address's budget is reserved
 *   (an atomic consume on the shared store) before the credential is
 *   verified, so failures plus verifications in flight never exceed the
 *   budget, across every instance: a parallel burst of guesses verifies at
 *   most the budget. A valid credential gets its unit back; a failure keeps it.
 * - **One secret, one verification.** Concurrent attempts of one credential
 *   from one address share one reservation and one verification.
 * - **A reservation held here is not a failure.** A reservation refused
 *   while this instance holds reservations for the address waits for one of
 *   them to finish and asks again, instead of answering 429: the units are
 *   sign-ins in flight, not failures, and each one either comes back (valid)
 *   or becomes a failure.
 * - **Failures are counted twice, reservations once.** Each failure is also
 *   charged to a second key of the address (`failuresKeyOf`), which holds
 *   only failures. A reservation refused while nothing of its address is in
 *   flight here asks that key: spent → 429; not spent → the units are held
 *   by sign-ins on other instances, so the attempt asks again every
 *   `pollMs`, up to `maxWaitMs` (then `busy`, never a 429 for failures).
 *
 * Credentials are keyed by their SHA-256, only while in flight; never logged.
 */
export class SignInBudget {
  private readonly limiter: RateLimiter;
  private readonly policy: RateLimitPolicy;
  private readonly onWait: (() => void) | undefined;
  private readonly clock: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly maxWaitMs: number;
  private readonly pollMs: number;
  /** Address key → epoch ms its failures spend the budget until: a flood past the budget costs no store read. */
  private readonly spentUntilMs = new Map<string, number>();
  private readonly addresses = new Map<string, AddressState>();
  private readonly inFlight = new Map<string, Promise<SignInAttempt<unknown>>>();

  constructor(options: SignInBudgetOptions) {
    this.limiter = options.limiter;
    this.policy = options.policy ?? options.limiter.policies[0];
    this.onWait = options.onWait;
    this.clock = options.clock ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.maxWaitMs = options.maxWaitMs ?? DEFAULT_SIGN_IN_MAX_WAIT_MS;
    this.pollMs = options.pollMs ?? DEFAULT_SIGN_IN_POLL_MS;
    for (const [name, value] of [['maxWaitMs', this.maxWaitMs], ['pollMs', this.pollMs]] as const) {
      if (!Number.isSafeInteger(value) || value < 0 || (name === 'pollMs' && value === 0)) {
        throw new RangeError(`SignInBudget: ${name} must be a ${name === 'pollMs' ? 'positive' : 'non-negative'} integer of milliseconds, got ${value}`);
      }
    }
  }

  /** Reservations this instance holds now, over every address; for tests and metrics. */
  get heldReservations(): number {
    let held = 0;
    for (const state of this.addresses.values()) held += state.held;
    return held;
  }

  /** Addresses with an attempt under way here; an address's state goes with its last attempt. For tests and metrics. */
  get trackedAddresses(): number {
    return this.addresses.size;
  }

  /**
   * A cost-0 read for a credential already known valid or invalid. Spent
   * means the address's failures used the budget up: no units left, none of
   * them held by a verification in flight here, and the failures key spent
   * too (units held by sign-ins on other instances are not failures). A
   * fail-closed outage is never "spent" (it would lock everyone out).
   */
  async read(key: string, budget?: WaitBudget): Promise<SignInBudgetRead> {
    const decision = await this.limiter.consume(key, { cost: 0, policy: this.policy, budget });
    if (decision.remaining > 0 || decision.reason === 'backend_unavailable') return { spent: false, decision };
    if ((this.addresses.get(key)?.held ?? 0) > 0) return { spent: false, decision };
    return { spent: await this.failuresSpent(key, budget), decision };
  }

  /**
   * Verifies `credential` under the address's budget (see the class). `verify`
   * runs at most once per concurrent (address, credential); if it throws (the
   * verifier could not answer), the reservation is given back and the error
   * reaches every caller sharing it. `budget` bounds the store waits of the
   * request that starts the attempt (ADR 0047); the unit given back or the
   * failure counted after the verdict is not bounded, so no count is lost.
   */
  attempt<T>(key: string, credential: string, verify: () => Promise<SignInVerdict<T>>, budget?: WaitBudget): Promise<SignInAttempt<T>> {
    const flightKey = `${key}\n${createHash('sha256').update(credential).digest('hex')}`;
    const pending = this.inFlight.get(flightKey);
    if (pending !== undefined) return pending as Promise<SignInAttempt<T>>;
    const started = this.reserveAndVerify(key, verify, budget).finally(() => this.inFlight.delete(flightKey));
    this.inFlight.set(flightKey, started);
    return started;
  }

  private async reserveAndVerify<T>(key: string, verify: () => Promise<SignInVerdict<T>>, budget: WaitBudget | undefined): Promise<SignInAttempt<T>> {
    const state = this.enter(key);
    try {
      let reservation: Decision;
      let waitedMs = 0;
      for (;;) {
        reservation = await this.limiter.consume(key, { cost: 1, policy: this.policy, budget });
        if (reservation.allowed) break;
        if (reservation.reason === 'backend_unavailable') return { kind: 'unavailable', decision: reservation };
        if (state.held > 0) {
          this.onWait?.();
          await new Promise<void>((resolve) => state.waiters.push(resolve));
          continue;
        }
        // Nothing of this address in flight here: its failures, or reservations other instances hold.
        if (await this.failuresSpent(key, budget)) return { kind: 'refused', decision: reservation };
        if (waitedMs >= this.maxWaitMs) return { kind: 'busy', retryAfterMs: Math.max(1_000, this.pollMs) };
        this.onWait?.();
        waitedMs += this.pollMs;
        await this.pollShared(key, state);
      }
      state.held++;
      let freed = true;
      try {
        const verdict = await verify();
        if (verdict.kind === 'invalid') {
          freed = false;
          // Before the waiters wake: one asking the failures key must find this failure there.
          await this.countFailure(key);
          return { kind: 'invalid', decision: reservation };
        }
        // Given back before a waiter is woken, so its next ask finds the unit free.
        await this.limiter.refund(key, reservation, { cost: 1, policy: this.policy });
        return verdict;
      } catch (error) {
        await this.limiter.refund(key, reservation, { cost: 1, policy: this.policy });
        throw error;
      } finally {
        state.held--;
        // A unit came back: one waiter may have it. Nothing held here any more: every waiter must
        // see for itself what the units are now (failures, or held elsewhere). A failure frees nothing.
        if (state.held === 0) for (const wake of state.waiters.splice(0)) wake();
        else if (freed) state.waiters.shift()?.();
      }
    } finally {
      this.leave(key, state);
    }
  }

  /** The key holding only the address's failures: what tells a spent budget from one held by sign-ins in flight. */
  private failuresKeyOf(key: string): string {
    return `${key}:failed`;
  }

  private async countFailure(key: string): Promise<void> {
    const counted = await this.limiter.consume(this.failuresKeyOf(key), { cost: 1, policy: this.policy });
    // Past the budget the charge is refused, which is the same news: spent.
    if (!counted.allowed || counted.remaining === 0) this.rememberSpent(key, counted);
  }

  /** True when the address's failures used up its budget (remembered until the window ends, so a flood costs one read). */
  private async failuresSpent(key: string, budget: WaitBudget | undefined): Promise<boolean> {
    const nowMs = this.clock();
    const untilMs = this.spentUntilMs.get(key);
    if (untilMs !== undefined) {
      if (nowMs < untilMs) return true;
      this.spentUntilMs.delete(key);
    }
    const failures = await this.limiter.consume(this.failuresKeyOf(key), { cost: 0, policy: this.policy, budget });
    if (failures.reason === 'backend_unavailable' || failures.remaining > 0) return false;
    this.rememberSpent(key, failures);
    return true;
  }

  private rememberSpent(key: string, decision: Decision): void {
    if (decision.reason === 'backend_unavailable' || decision.resetAtMs <= this.clock()) return;
    if (this.spentUntilMs.size >= MAX_SPENT_ADDRESSES) {
      const oldest = this.spentUntilMs.keys().next();
      if (!oldest.done) this.spentUntilMs.delete(oldest.value);
    }
    this.spentUntilMs.set(key, decision.resetAtMs);
  }

  /**
   * One wait and one read of the shared budget for every attempt of the
   * address waiting on other instances: the read reaches the store, so the
   * next reservation is asked there, not answered from a cached refusal.
   */
  private pollShared(key: string, state: AddressState): Promise<void> {
    state.poll ??= this.sleep(this.pollMs)
      .then(() => this.limiter.consume(key, { cost: 0, policy: this.policy }))
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        state.poll = undefined;
      });
    return state.poll;
  }

  /** The address's state, kept while any attempt of it is reserving, waiting or verifying. */
  private enter(key: string): AddressState {
    let state = this.addresses.get(key);
    if (state === undefined) {
      state = { held: 0, attempts: 0, waiters: [], poll: undefined };
      this.addresses.set(key, state);
    }
    state.attempts++;
    return state;
  }

  private leave(key: string, state: AddressState): void {
    state.attempts--;
    if (state.attempts === 0) this.addresses.delete(key);
  }
}
