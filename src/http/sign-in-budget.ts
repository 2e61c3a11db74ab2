import { createHash } from 'node:crypto';
import type { Decision } from '../limiter/decision';
import type { RateLimitPolicy } from '../limiter/policy';
import type { RateLimiter } from '../limiter/rate-limiter';

/** What a credential turned out to be: a caller (`value`), or a failed sign-in. A verifier that cannot answer throws. */
export type SignInVerdict<T> = { readonly kind: 'valid'; readonly value: T } | { readonly kind: 'invalid' };

/**
 * How an attempt under the budget ended.
 * - `valid`: verified; its reservation was given back, nothing counted.
 * - `invalid`: a failed sign-in, counted; `decision` is the reservation it kept (its `remaining` is what is left).
 * - `refused`: the address's failures spent the budget; the credential was never verified (429).
 * - `unavailable`: a fail-closed backend is down, nothing can be reserved (503, `decision.retryAfterMs`).
 */
export type SignInAttempt<T> =
  | { readonly kind: 'valid'; readonly value: T }
  | { readonly kind: 'invalid'; readonly decision: Decision }
  | { readonly kind: 'refused'; readonly decision: Decision }
  | { readonly kind: 'unavailable'; readonly decision: Decision };

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
}

interface AddressState {
  /** Reservations this instance holds for the address: verifications in flight. */
  held: number;
  /** Attempts of the address under way here (reserving, waiting or verifying); the state goes with the last. */
  attempts: number;
  /** Attempts waiting for one of them to finish. */
  readonly waiters: (() => void)[];
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
 *   or becomes a failure. An attempt is refused only when nothing of its
 *   address is in flight here, i.e. the budget is spent by failures (or, the
 *   residual case, by reservations other instances hold at that moment).
 *
 * Credentials are keyed by their SHA-256, only while in flight; never logged.
 */
export class SignInBudget {
  private readonly limiter: RateLimiter;
  private readonly policy: RateLimitPolicy;
  private readonly onWait: (() => void) | undefined;
  private readonly addresses = new Map<string, AddressState>();
  private readonly inFlight = new Map<string, Promise<SignInAttempt<unknown>>>();

  constructor(options: SignInBudgetOptions) {
    this.limiter = options.limiter;
    this.policy = options.policy ?? options.limiter.policies[0];
    this.onWait = options.onWait;
  }

  /** Reservations this instance holds now, over every address; for tests and metrics. */
  get heldReservations(): number {
    let held = 0;
    for (const state of this.addresses.values()) held += state.held;
    return held;
  }

  /**
   * A cost-0 read for a credential already known valid or invalid. Spent
   * means no units left and none of them held by a verification in flight
   * here; a fail-closed outage is never "spent" (it would lock everyone out).
   */
  async read(key: string): Promise<SignInBudgetRead> {
    const decision = await this.limiter.consume(key, { cost: 0, policy: this.policy });
    const held = this.addresses.get(key)?.held ?? 0;
    return { spent: decision.remaining === 0 && held === 0 && decision.reason !== 'backend_unavailable', decision };
  }

  /**
   * Verifies `credential` under the address's budget (see the class). `verify`
   * runs at most once per concurrent (address, credential); if it throws (the
   * verifier could not answer), the reservation is given back and the error
   * reaches every caller sharing it.
   */
  attempt<T>(key: string, credential: string, verify: () => Promise<SignInVerdict<T>>): Promise<SignInAttempt<T>> {
    const flightKey = `${key}\n${createHash('sha256').update(credential).digest('hex')}`;
    const pending = this.inFlight.get(flightKey);
    if (pending !== undefined) return pending as Promise<SignInAttempt<T>>;
    const started = this.reserveAndVerify(key, verify).finally(() => this.inFlight.delete(flightKey));
    this.inFlight.set(flightKey, started);
    return started;
  }

  private async reserveAndVerify<T>(key: string, verify: () => Promise<SignInVerdict<T>>): Promise<SignInAttempt<T>> {
    const state = this.enter(key);
    try {
      let reservation: Decision;
      for (;;) {
        reservation = await this.limiter.consume(key, { cost: 1, policy: this.policy });
        if (reservation.allowed) break;
        if (reservation.reason === 'backend_unavailable') return { kind: 'unavailable', decision: reservation };
        if (state.held === 0) return { kind: 'refused', decision: reservation };
        this.onWait?.();
        await new Promise<void>((resolve) => state.waiters.push(resolve));
      }
      state.held++;
      try {
        const verdict = await verify();
        if (verdict.kind === 'invalid') return { kind: 'invalid', decision: reservation };
        // Given back before the waiters are woken, so their next ask finds the unit free.
        await this.limiter.refund(key, reservation, { cost: 1, policy: this.policy });
        return verdict;
      } catch (error) {
        await this.limiter.refund(key, reservation, { cost: 1, policy: this.policy });
        throw error;
      } finally {
        state.held--;
        // Every waiter asks again: a unit came back (valid) or became a failure, which each must see for itself.
        for (const wake of state.waiters.splice(0)) wake();
      }
    } finally {
      this.leave(key, state);
    }
  }

  /** The address's state, kept while any attempt of it is reserving, waiting or verifying. */
  private enter(key: string): AddressState {
    let state = this.addresses.get(key);
    if (state === undefined) {
      state = { held: 0, attempts: 0, waiters: [] };
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
