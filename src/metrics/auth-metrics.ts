import { Counter, type Registry } from 'prom-client';
import type { AuthRefusalReason } from '../http/auth-refusal';

/**
 * Requests turned away before a token was accepted, by reason. A rise in
 * `invalid_token` or `auth_failures` is someone guessing; `repeated_invalid_token`
 * is a client stuck on a revoked token; `unauthenticated_limit` is a flood.
 * Labels are the fixed reasons only, never an address.
 */
export class AuthMetrics {
  private readonly refusals: Counter<'reason'>;
  private readonly children = new Map<AuthRefusalReason, Counter.Internal>();
  private readonly waits: Counter;

  constructor(registry: Registry) {
    this.refusals = new Counter({
      name: 'firelimit_auth_refusals_total',
      help: 'Requests to /mcp refused before a token was accepted, by reason (missing_token, malformed_token, invalid_token, repeated_invalid_token, auth_failures, unauthenticated_limit, insufficient_scope, store_unavailable, sign_in_busy).',
      labelNames: ['reason'],
      registers: [registry],
    });
    this.waits = new Counter({
      name: 'firelimit_sign_in_waits_total',
      help: 'Waits of sign-ins for the failure budget of their address while other sign-ins of it held the budget (many first sign-ins behind one address at once): each asks again when one of those finishes, instead of a 429 for failures that did not happen.',
      registers: [registry],
    });
  }

  /** Once per wait of a sign-in for units other sign-ins of its address held (ADR 0045). */
  signInWaited(): void {
    this.waits.inc();
  }

  authFailure(reason: AuthRefusalReason): void {
    let child = this.children.get(reason);
    if (child === undefined) {
      child = this.refusals.labels(reason);
      this.children.set(reason, child);
    }
    child.inc();
  }
}
