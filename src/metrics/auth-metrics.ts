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

  constructor(registry: Registry) {
    this.refusals = new Counter({
      name: 'firelimit_auth_refusals_total',
      help: 'Requests to /mcp refused before a token was accepted, by reason (missing_token, malformed_token, invalid_token, repeated_invalid_token, auth_failures, unauthenticated_limit, insufficient_scope, store_unavailable, sign_in_busy).',
      labelNames: ['reason'],
      registers: [registry],
    });
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
