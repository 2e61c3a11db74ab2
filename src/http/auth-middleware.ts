import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { describeError } from '../shared/describe-error';
import { encodeKeyPart } from '../limiter/key';
import type { Decision } from '../limiter/decision';
import type { RateLimitPolicy } from '../limiter/policy';
import type { RateLimiter } from '../limiter/rate-limiter';
import type { Logger } from '../shared/logger';
import type { AuthenticatedToken, TokenVerifier } from '../tokens/token-record';
import { isWellFormedSecret } from '../tokens/token-secret';
import type { AuthFailureReason, AuthRefusalReason } from './auth-refusal';
import { spentBudgetRefusal, writeBudgetRefusal } from './budget-refusal';
import { setToken, waitBudgetOf } from './request-locals';
import { addressLimitKeyPart, clientAddress } from './client-address';
import { jsonRpcError, JsonRpcCode, requestIdOf, sendJsonRpcError } from './json-rpc-error';
import { secondsUntil } from './rate-limit-headers';

export const AUTH_REALM = 'firelimit';

export interface AuthMiddlewareOptions {
  readonly verifier: TokenVerifier;
  /** Counts failed attempts per client address; a limiter of its own (its own key space and figure). */
  readonly authFailureLimiter: RateLimiter;
  /** The failure budget (`config.rateLimit.authFailures`). Default: the limiter's own policy. */
  readonly authFailurePolicy?: RateLimitPolicy;
  /**
   * Requests per client address that arrive without a token this instance
   * already knows to be valid (`config.rateLimit.unauthenticated`): a memory
   * limiter, so the flood it stops costs no shared-store write.
   */
  readonly unauthenticatedLimiter: RateLimiter;
  /** Proxies in front of the service whose X-Forwarded-For entries are trusted (`TRUST_PROXY_HOPS`). */
  readonly trustProxyHops: number;
  /** The scope a token needs here, e.g. 'mcp'. */
  readonly requiredScope: string;
  readonly logger: Logger;
  /** Told of every request that did not authenticate; default none. */
  readonly metrics?: { authFailure(reason: AuthRefusalReason): void };
  /** Injected time for the headers' relative seconds; default Date.now. */
  readonly clock?: () => number;
}


/** The limiter key of an address: its own key space, never a token id. */
export function authFailureKey(address: string): string {
  return `addr:${encodeKeyPart(addressLimitKeyPart(address))}`;
}

/**
 * Bearer authentication for /mcp. It reads only headers, so it runs before
 * the body is read: an unauthenticated request costs a hash at most.
 *
 * 1. A token this instance verified within the cache TTL: the address's
 *    failure budget is read (cost 0); spent → 429, else on to the scope check.
 *    A blocked address is refused even a valid token, so a guesser learns
 *    nothing from its next guesses (a shared NAT waits out the window with it).
 * 2. A request that cannot authenticate (no token, a malformed one, one
 *    already found invalid) first spends one unit of the address's
 *    unauthenticated budget, a local limiter (429 `unauthenticated_limit`
 *    when spent). A secret not seen yet does not: the reservation in 5
 *    bounds it, and a flood without tokens from a shared address must not
 *    block a valid token's sign-in.
 * 3. No Authorization header → 401 `WWW-Authenticate: Bearer realm="firelimit"`.
 *    Not a failed sign-in: MCP clients ask without credentials first.
 * 4. A secret this instance already found unknown or revoked within the TTL →
 *    401 `invalid_token`, not charged again (repeating one wrong secret is
 *    not guessing: a client reconnecting with a stale token must not lock out
 *    its address), but refused 429 if the address's budget is spent.
 * 5. A malformed or not-yet-seen secret: one failed sign-in is reserved
 *    (charged) before the secret is checked, atomically on the shared store,
 *    so a parallel burst cannot verify more guesses than the budget holds.
 *    Refused → 429 and the secret is never looked up. Then:
 *    - unknown or revoked → 401 `invalid_token`; the reservation stands;
 *    - token store failure → 503 with Retry-After; the reservation is refunded;
 *    - valid → the reservation is refunded.
 *    With a fail-closed backend that is down, nothing can be reserved: 503.
 * 6. A token without `requiredScope` → 403 `insufficient_scope` (genuine, not a failure).
 * 7. Otherwise `res.locals.token` is set and the request goes on to the
 *    per-token limiter, so no unauthenticated request reaches a per-token counter.
 *
 * Every refusal is a JSON-RPC error object (id null when the body has not
 * been read). Logs name the address and the reason, never the header, the
 * token or its hash.
 */
export function createAuthMiddleware(options: AuthMiddlewareOptions): RequestHandler {
  const clock = options.clock ?? Date.now;
  const policy = options.authFailurePolicy ?? options.authFailureLimiter.policies[0];
  const { verifier, logger, requiredScope } = options;
  const failures = options.authFailureLimiter;
  const unauthenticated = options.unauthenticatedLimiter;
  const count = (reason: AuthRefusalReason): void => options.metrics?.authFailure(reason);
  // One line when the token store starts failing and one when it answers again, not one per request.
  let storeFailingSince: number | undefined;

  return async function authenticate(req: Request, res: Response, next: NextFunction): Promise<void> {
    const address = clientAddress({ forwardedFor: req.headers['x-forwarded-for'], socketAddress: req.socket.remoteAddress }, options.trustProxyHops);
    const key = authFailureKey(address);
    const id = requestIdOf(req.body);
    try {
      const credential = bearerCredential(req.headers.authorization);
      const wellFormed = typeof credential === 'string' && isWellFormedSecret(credential);
      const cached = wellFormed ? verifier.peek(credential) : undefined;

      if (cached?.kind === 'valid') {
        const budget = await failures.consume(key, { cost: 0, policy, budget: waitBudgetOf(res) });
        if (isSpent(budget)) {
          count('auth_failures');
          refuseTooManyFailures(res, id, spentBudgetRefusal(budget, clock()), clock());
          return;
        }
        admit(res, next, cached.token, address);
        return;
      }

      // Only what cannot authenticate spends it: a secret not yet seen is bounded by the reservation below,
      // so a flood without tokens from a shared address (a NAT) never blocks a valid token's sign-in.
      if (cached?.kind !== 'unknown') {
        const anonymous = await unauthenticated.consume(key);
        if (!anonymous.allowed) {
          count('unauthenticated_limit');
          refuseUnauthenticated(res, id, anonymous, clock());
          return;
        }
      }

      if (credential === undefined) {
        count('missing_token');
        unauthorized(res, id, 'missing_token');
        return;
      }

      if (cached?.kind === 'invalid') {
        const budget = await failures.consume(key, { cost: 0, policy, budget: waitBudgetOf(res) });
        count('repeated_invalid_token');
        if (isSpent(budget)) {
          refuseTooManyFailures(res, id, spentBudgetRefusal(budget, clock()), clock());
          return;
        }
        unauthorized(res, id, 'invalid_token');
        return;
      }

      const reservation = await failures.consume(key, { cost: 1, policy, budget: waitBudgetOf(res) });
      if (!reservation.allowed) {
        if (reservation.reason === 'backend_unavailable') {
          count('store_unavailable');
          logger.warn('failed sign-in budget cannot be counted (fail-closed backend down); answering 503', { address });
          unavailable(res, id, 'Sign-in attempts cannot be counted right now; retry after 1 s.');
          return;
        }
        count('auth_failures');
        refuseTooManyFailures(res, id, reservation, clock());
        return;
      }

      let token: AuthenticatedToken | undefined;
      if (wellFormed) {
        try {
          token = await verifier.verify(credential);
        } catch (error) {
          await failures.refund(key, reservation, { cost: 1, policy });
          count('store_unavailable');
          if (storeFailingSince === undefined) {
            storeFailingSince = clock();
            // Class and code only, of the store's own error: its message could quote the query, and the query holds a hash.
            logger.error('token store unavailable; answering 503 until it answers again', {
              event: 'auth.token_store_unavailable',
              address,
              error: describeError(error instanceof Error && error.cause !== undefined ? error.cause : error),
            });
          }
          unavailable(res, id, 'Token verification is temporarily unavailable; retry after 1 s.');
          return;
        }
      }
      if (storeFailingSince !== undefined) {
        logger.info('token store answers again', { event: 'auth.token_store_recovered', durationMs: clock() - storeFailingSince });
        storeFailingSince = undefined;
      }
      if (token === undefined) {
        const reason: AuthFailureReason = wellFormed ? 'invalid_token' : 'malformed_token';
        count(reason);
        logger.info('authentication failed', { address, reason, failuresRemaining: reservation.remaining });
        if (reservation.remaining === 0) {
          logger.warn('client address used up its authentication failure budget', { address, retryAfterSeconds: secondsUntil(reservation.resetAtMs - clock()) });
        }
        unauthorized(res, id, reason);
        return;
      }

      await failures.refund(key, reservation, { cost: 1, policy });
      admit(res, next, token, address);
    } catch (error) {
      next(error);
    }
  };

  function admit(res: Response, next: NextFunction, token: AuthenticatedToken, address: string): void {
    if (!token.scopes.includes(requiredScope)) {
      count('insufficient_scope');
      logger.info('token lacks the required scope', { address, tokenId: token.id, requiredScope });
      res.setHeader('WWW-Authenticate', `Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="${requiredScope}"`);
      sendJsonRpcError(res, 403, jsonRpcError(requestIdOf(res.req.body), JsonRpcCode.Forbidden, `This token lacks the "${requiredScope}" scope.`, { reason: 'insufficient_scope', requiredScope }));
      return;
    }
    setToken(res, token);
    next();
  }
}

/**
 * The token in `Authorization: Bearer <token>`: undefined when there is no
 * header, null when there is one but it is not a single bearer token.
 * The scheme is case-insensitive (RFC 9110 §11.1).
 */
export function bearerCredential(header: string | undefined): string | null | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const match = /^Bearer +([^\s]+) *$/i.exec(header.trim());
  return match ? (match[1] as string) : null;
}

/** A cost-0 read never refuses, so "spent" is no units left; a fail-closed outage does not lock everyone out. */
function isSpent(decision: Decision): boolean {
  return decision.remaining === 0 && decision.reason !== 'backend_unavailable';
}

function unauthorized(res: Response, id: ReturnType<typeof requestIdOf>, reason: AuthFailureReason): void {
  // RFC 6750 §3.1: no error code when the request carried no credentials.
  res.setHeader('WWW-Authenticate', reason === 'missing_token' ? `Bearer realm="${AUTH_REALM}"` : `Bearer realm="${AUTH_REALM}", error="invalid_token"`);
  const message =
    reason === 'missing_token'
      ? 'Authentication required: send Authorization: Bearer flk_... with a token from the operator of this service (see /developers); there is no OAuth sign-in.'
      : 'The bearer token is malformed, unknown or revoked.';
  sendJsonRpcError(res, 401, jsonRpcError(id, JsonRpcCode.Unauthorized, message, { reason }));
}

function unavailable(res: Response, id: ReturnType<typeof requestIdOf>, message: string): void {
  res.setHeader('Retry-After', '1');
  sendJsonRpcError(res, 503, jsonRpcError(id, JsonRpcCode.BackendUnavailable, message, { retryAfterSeconds: 1 }));
}

function refuseUnauthenticated(res: Response, id: ReturnType<typeof requestIdOf>, decision: Decision, nowMs: number): void {
  writeBudgetRefusal(res, id, decision, nowMs, { reason: 'unauthenticated_limit', tooMany: 'requests without a valid token from this address' });
}

function refuseTooManyFailures(res: Response, id: ReturnType<typeof requestIdOf>, decision: Decision, nowMs: number): void {
  writeBudgetRefusal(res, id, decision, nowMs, { reason: 'auth_failures', tooMany: 'failed authentication attempts from this address' });
}
