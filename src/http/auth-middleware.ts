import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { describeError } from '../shared/describe-error';
import { type Decision, encodeKeyPart, type RateLimiter, type RateLimitPolicy } from '../library';
import { eraOfHeaders, JsonRpcCode, jsonRpcError, refusalCode, requestIdOf, secondsUntil, sendJsonRpcError, setRateLimitHeaders } from '../library/express';
import type { Logger } from '../shared/logger';
import type { AuthenticatedToken, TokenVerifier } from '../tokens/token-record';
import { isWellFormedSecret } from '../tokens/token-secret';
import type { AuthFailureReason, AuthRefusalReason } from './auth-refusal';
import { spentBudgetRefusal, writeBudgetRefusal } from './budget-refusal';
import { setToken, waitBudgetOf } from './request-locals';
import { SignInBudget, type SignInAttempt, type SignInVerdict } from './sign-in-budget';
import { addressLimitKeyPart, clientAddress } from './client-address';

export const AUTH_REALM = 'firelimit';

/** Retry-After of a 503 for a token store that failed: it has no probe schedule to tell, so the least a client should wait. */
const TOKEN_STORE_RETRY_AFTER_MS = 1000;
const INVALID: SignInVerdict<never> = { kind: 'invalid' };
/** The flight key of an Authorization header that is not one bearer token: such attempts need no lookup to share. */
const MALFORMED_HEADER = '\u0000malformed';

export interface AuthMiddlewareOptions {
  readonly verifier: TokenVerifier;
  /** Counts failed attempts per client address; a limiter of its own (its own key space and figure). */
  readonly authFailureLimiter: RateLimiter;
  /** The failure budget (`config.rateLimit.authFailures`). Default: the limiter's own policy. */
  readonly authFailurePolicy?: RateLimitPolicy;
  /**
   * Where failed sign-ins are counted (ADR 0045). Pass one to share it with
   * another verifier of the same service (its sign-ins in flight then count
   * with these); default one of its own on `authFailureLimiter` and `authFailurePolicy`.
   */
  readonly signInBudget?: SignInBudget;
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
  readonly metrics?: { authFailure(reason: AuthRefusalReason): void; signInWaited?(): void };
  /** Injected time for the headers' relative seconds; default Date.now. */
  readonly clock?: () => number;
  /**
   * Whether a credential is worth verifying (a `flk_` secret, or a JWT when
   * issuers are configured); anything else is a malformed token, refused
   * unverified. Default: `flk_` secrets only.
   */
  readonly isWellFormed?: (credential: string) => boolean;
  /**
   * Issuers configured: the URL of this resource's RFC 9728 metadata, named
   * in every 401 as `resource_metadata`, and what a 401 without a token says.
   * Default none: a static-token deployment (ADR 0025).
   */
  readonly signIn?: { readonly resourceMetadataUrl: (req: Request) => string | undefined; readonly missingTokenMessage: string };
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
 *    failure budget is read (cost 0); spent by failures → 429, else on to
 *    the scope check. Units held by first sign-ins still being verified
 *    here are not failures (SignInBudget.read). A blocked address is refused
 *    even a valid token, so a guesser learns nothing from its next guesses
 *    (a shared NAT waits out the window with it).
 * 2. A request that cannot authenticate (no token, a malformed one, one
 *    already found invalid) first spends one unit of the address's
 *    unauthenticated budget, a local limiter (429 `unauthenticated_limit`
 *    when spent). A secret not seen yet does not: the sign-in budget in 5
 *    bounds it, and a flood without tokens from a shared address must not
 *    block a valid token's sign-in.
 * 3. No Authorization header → 401 `WWW-Authenticate: Bearer realm="firelimit"`.
 *    Not a failed sign-in: MCP clients ask without credentials first.
 * 4. A secret this instance already found unknown or revoked within the TTL →
 *    401 `invalid_token`, not charged again (repeating one wrong secret is
 *    not guessing: a client reconnecting with a stale token must not lock out
 *    its address), but refused 429 if the address's budget is spent.
 * 5. A malformed or not-yet-seen secret goes through the sign-in budget
 *    (SignInBudget.attempt, ADR 0045): a unit is reserved on the shared store
 *    before the secret is checked, so a parallel burst cannot verify more
 *    guesses than the budget holds; concurrent calls of one secret share one
 *    reservation and one lookup; a reservation refused while sign-ins of the
 *    same address are in flight here waits for them instead of answering 429.
 *    - budget spent by failures → 429, and the secret is never looked up;
 *    - unknown or revoked → 401 `invalid_token`; the failure is counted;
 *    - token store failure → 503 with Retry-After; nothing counted;
 *    - valid → nothing counted.
 *    With a fail-closed backend that is down, nothing can be reserved: 503
 *    with the limiter's own Retry-After (its next probe of the backend).
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
  const signIn = options.signInBudget ?? new SignInBudget({ limiter: options.authFailureLimiter, policy, clock, onWait: () => options.metrics?.signInWaited?.() });
  const unauthenticated = options.unauthenticatedLimiter;
  const count = (reason: AuthRefusalReason): void => options.metrics?.authFailure(reason);
  const isWellFormed = options.isWellFormed ?? isWellFormedSecret;
  const unauthorized = (res: Response, id: ReturnType<typeof requestIdOf>, reason: AuthFailureReason, budget: Decision | undefined, nowMs: number): void => {
    const metadataUrl = options.signIn?.resourceMetadataUrl(res.req);
    writeUnauthorized(res, id, reason, budget, nowMs, metadataUrl === undefined ? '' : `, resource_metadata="${metadataUrl}"`, options.signIn?.missingTokenMessage);
  };
  // One line when the token store starts failing and one when it answers again, not one per request.
  let storeFailingSince: number | undefined;

  return async function authenticate(req: Request, res: Response, next: NextFunction): Promise<void> {
    const address = clientAddress({ forwardedFor: req.headers['x-forwarded-for'], socketAddress: req.socket.remoteAddress }, options.trustProxyHops);
    const key = authFailureKey(address);
    const id = requestIdOf(req.body);
    try {
      const credential = bearerCredential(req.headers.authorization);
      const wellFormed = typeof credential === 'string' && isWellFormed(credential);
      const cached = wellFormed ? verifier.peek(credential) : undefined;

      if (cached?.kind === 'valid') {
        const budget = await signIn.read(key, waitBudgetOf(res));
        if (budget.spent) {
          count('auth_failures');
          refuseTooManyFailures(res, id, spentBudgetRefusal(budget.decision, clock()), clock());
          return;
        }
        admit(res, next, cached.token, address);
        return;
      }

      // Only what cannot authenticate spends it: a secret not yet seen is bounded by the sign-in budget below,
      // so a flood without tokens from a shared address (a NAT) never blocks a valid token's sign-in.
      let anonymous: Decision | undefined;
      if (cached?.kind !== 'unknown') {
        anonymous = await unauthenticated.consume(key);
        if (!anonymous.allowed) {
          count('unauthenticated_limit');
          refuseUnauthenticated(res, id, anonymous, clock());
          return;
        }
      }

      if (credential === undefined) {
        count('missing_token');
        unauthorized(res, id, 'missing_token', anonymous, clock());
        return;
      }

      if (cached?.kind === 'invalid') {
        const budget = await signIn.read(key, waitBudgetOf(res));
        count('repeated_invalid_token');
        if (budget.spent) {
          refuseTooManyFailures(res, id, spentBudgetRefusal(budget.decision, clock()), clock());
          return;
        }
        unauthorized(res, id, 'invalid_token', budget.decision, clock());
        return;
      }

      let attempt: SignInAttempt<AuthenticatedToken>;
      try {
        attempt = await signIn.attempt(key, credential ?? MALFORMED_HEADER, () => verifyCredential(verifier, credential, isWellFormed), waitBudgetOf(res));
      } catch (error) {
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
        unavailable(res, id, 'store_unavailable', TOKEN_STORE_RETRY_AFTER_MS, 'Token verification is temporarily unavailable');
        return;
      }
      if (attempt.kind === 'unavailable') {
        count('store_unavailable');
        logger.warn('failed sign-in budget cannot be counted (fail-closed backend down); answering 503', { address });
        // The limiter's own hint (until its next probe of the backend), as a refused per-token call gets.
        unavailable(res, id, 'backend_unavailable', attempt.decision.retryAfterMs, 'Sign-in attempts cannot be counted right now');
        return;
      }
      if (attempt.kind === 'busy') {
        count('sign_in_busy');
        logger.warn('sign-ins from this address held the whole failure budget on other instances past the wait; answering 503', { address });
        unavailable(res, id, 'sign_in_busy', attempt.retryAfterMs, 'Too many sign-ins from this address are being verified at once');
        return;
      }
      if (attempt.kind === 'refused') {
        count('auth_failures');
        refuseTooManyFailures(res, id, attempt.decision, clock());
        return;
      }
      if (storeFailingSince !== undefined && wellFormed) {
        logger.info('token store answers again', { event: 'auth.token_store_recovered', durationMs: clock() - storeFailingSince });
        storeFailingSince = undefined;
      }
      if (attempt.kind === 'invalid') {
        const reason: AuthFailureReason = wellFormed ? 'invalid_token' : 'malformed_token';
        const { decision } = attempt;
        count(reason);
        logger.info('authentication failed', { address, reason, failuresRemaining: decision.remaining });
        if (decision.remaining === 0) {
          logger.warn('client address used up its authentication failure budget', { address, retryAfterSeconds: secondsUntil(decision.resetAtMs - clock()) });
        }
        unauthorized(res, id, reason, decision, clock());
        return;
      }
      admit(res, next, attempt.value, address);
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

/** A 401 carries the headers of the per-address budget that counted it (requests without a token, or failed sign-ins). */
function writeUnauthorized(res: Response, id: ReturnType<typeof requestIdOf>, reason: AuthFailureReason, budget: Decision | undefined, nowMs: number, metadata: string, missingTokenMessage: string | undefined): void {
  if (budget !== undefined) setRateLimitHeaders(res, budget, nowMs);
  // RFC 6750 §3.1: no error code when the request carried no credentials. RFC 9728 §5.1: where OAuth clients find our authorization servers.
  res.setHeader('WWW-Authenticate', reason === 'missing_token' ? `Bearer realm="${AUTH_REALM}"${metadata}` : `Bearer realm="${AUTH_REALM}", error="invalid_token"${metadata}`);
  const message =
    reason === 'missing_token'
      ? (missingTokenMessage ?? 'Authentication required: send Authorization: Bearer flk_... with a token from the operator of this service (see /developers); there is no OAuth sign-in.')
      : 'The bearer token is malformed, unknown or revoked.';
  sendJsonRpcError(res, 401, jsonRpcError(id, JsonRpcCode.Unauthorized, message, { reason }));
}

function unavailable(res: Response, id: ReturnType<typeof requestIdOf>, reason: AuthRefusalReason | 'backend_unavailable', retryAfterMs: number, what: string): void {
  const retryAfterSeconds = secondsUntil(retryAfterMs);
  res.setHeader('Retry-After', String(retryAfterSeconds));
  sendJsonRpcError(res, 503, jsonRpcError(id, refusalCode(eraOfHeaders(res.req.headers), 'backend_unavailable'), `${what}; retry after ${retryAfterSeconds} s.`, { reason, retryAfterSeconds }));
}

/**
 * A credential's verdict for the sign-in budget (an `flk_` secret, or a JWT when issuers are configured): a malformed one is a
 * failure without a lookup; a store error throws (503, not a failure).
 */
function verifyCredential(verifier: TokenVerifier, credential: string | null, isWellFormed: (credential: string) => boolean): Promise<SignInVerdict<AuthenticatedToken>> {
  if (typeof credential !== 'string' || !isWellFormed(credential)) return Promise.resolve(INVALID);
  return verifier.verify(credential).then((token) => (token === undefined ? INVALID : { kind: 'valid', value: token }));
}

function refuseUnauthenticated(res: Response, id: ReturnType<typeof requestIdOf>, decision: Decision, nowMs: number): void {
  writeBudgetRefusal(res, id, decision, nowMs, { reason: 'unauthenticated_limit', tooMany: 'requests without a valid token from this address' });
}

function refuseTooManyFailures(res: Response, id: ReturnType<typeof requestIdOf>, decision: Decision, nowMs: number): void {
  writeBudgetRefusal(res, id, decision, nowMs, { reason: 'auth_failures', tooMany: 'failed authentication attempts from this address' });
}
