import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { describeError } from '../limiter/backend-guard';
import { encodeKeyPart } from '../limiter/key';
import type { Decision } from '../limiter/decision';
import type { RateLimitPolicy } from '../limiter/policy';
import type { RateLimiter } from '../limiter/rate-limiter';
import type { Logger } from '../logging/logger';
import type { AuthenticatedToken, TokenVerifier } from '../tokens/token-record';
import { isWellFormedSecret } from '../tokens/token-secret';
import { addressLimitKeyPart, clientAddress } from './client-address';
import { jsonRpcError, JsonRpcCode, requestIdOf, sendJsonRpcError } from './json-rpc-error';
import { secondsUntil, setRateLimitHeaders } from './rate-limit-headers';

export const AUTH_REALM = 'firelimit';

export interface AuthMiddlewareOptions {
  readonly verifier: TokenVerifier;
  /** Counts failed attempts per client address; a limiter of its own (its own key space and figure). */
  readonly authFailureLimiter: RateLimiter;
  /** The failure budget (`config.rateLimit.authFailures`). Default: the limiter's own policy. */
  readonly authFailurePolicy?: RateLimitPolicy;
  /** Proxies in front of the service whose X-Forwarded-For entries are trusted (`TRUST_PROXY_HOPS`). */
  readonly trustProxyHops: number;
  /** The scope a token needs here, e.g. 'mcp'. */
  readonly requiredScope: string;
  readonly logger: Logger;
  /** Injected time for the headers' relative seconds; default Date.now. */
  readonly clock?: () => number;
}

/** Why a request was not authenticated; logged with the address, and given to the client in `error.data.reason`. */
export type AuthFailureReason = 'missing_token' | 'malformed_token' | 'invalid_token';

/** The verified token, for handlers after this middleware. */
export function tokenOf(res: Response): AuthenticatedToken | undefined {
  const token = (res.locals as { token?: AuthenticatedToken }).token;
  return token !== undefined && typeof token.id === 'string' ? token : undefined;
}

/** The limiter key of an address: its own key space, never a token id. */
export function authFailureKey(address: string): string {
  return `addr:${encodeKeyPart(addressLimitKeyPart(address))}`;
}

/**
 * Bearer authentication for /mcp, in this order:
 *
 * 1. The client address's failure budget is read (cost 0). When it is spent,
 *    429 with the budget's headers, before any token is looked at: a valid
 *    token from a blocked address is refused too, so a guesser learns nothing
 *    from its next guesses (a shared NAT waits out the window with it, at
 *    most one window).
 * 2. No Authorization header → 401 `WWW-Authenticate: Bearer realm="firelimit"`.
 *    Not counted as a failure: MCP clients ask without credentials first to
 *    discover how to authenticate.
 * 3. A malformed, unknown or revoked token → 401 with `error="invalid_token"`;
 *    counts 1 against the address. The attempt that spends the last unit is
 *    still answered 401; the next is 429.
 * 4. A token store failure → 503 with Retry-After, not counted: the client's
 *    token may well be good.
 * 5. A token without `requiredScope` → 403 `error="insufficient_scope"`; not
 *    counted (the token is genuine).
 * 6. Otherwise `res.locals.token` is set and the request continues to the
 *    per-token limiter, so no unauthenticated request reaches a per-token counter.
 *
 * Every refusal is a JSON-RPC error object carrying the request's id when the
 * body parsed (the app parses JSON before this runs). Logs name the address
 * and the reason, never the header, the token or its hash.
 */
export function createAuthMiddleware(options: AuthMiddlewareOptions): RequestHandler {
  const clock = options.clock ?? Date.now;
  const policy = options.authFailurePolicy ?? options.authFailureLimiter.policy;
  const { verifier, logger, requiredScope } = options;
  const limiter = options.authFailureLimiter;

  return async function authenticate(req: Request, res: Response, next: NextFunction): Promise<void> {
    const address = clientAddress({ forwardedFor: req.headers['x-forwarded-for'], socketAddress: req.socket.remoteAddress }, options.trustProxyHops);
    const key = authFailureKey(address);
    const id = requestIdOf(req.body);
    try {
      const budget = await limiter.consume(key, { cost: 0, policy });
      if (isSpent(budget)) {
        refuseTooManyFailures(res, id, asRefusal(budget, clock()), clock());
        return;
      }

      const credential = bearerCredential(req.headers.authorization);
      if (credential === undefined) {
        unauthorized(res, id, 'missing_token');
        return;
      }

      const wellFormed = credential !== null && isWellFormedSecret(credential);
      let token: AuthenticatedToken | undefined;
      if (wellFormed) {
        try {
          token = await verifier.verify(credential);
        } catch (error) {
          // Class and code only, of the store's own error: its message could quote the query, and the query holds a hash.
          logger.error('token store unavailable; answering 503', { address, error: describeError(error instanceof Error && error.cause !== undefined ? error.cause : error) });
          res.setHeader('Retry-After', '1');
          sendJsonRpcError(res, 503, jsonRpcError(id, JsonRpcCode.BackendUnavailable, 'Token verification is temporarily unavailable; retry after 1 s.', { retryAfterSeconds: 1 }));
          return;
        }
      }
      if (token === undefined) {
        const reason: AuthFailureReason = wellFormed ? 'invalid_token' : 'malformed_token';
        const decision = await limiter.consume(key, { cost: 1, policy });
        logger.info('authentication failed', { address, reason, failuresRemaining: decision.remaining });
        if (!decision.allowed && decision.reason !== 'backend_unavailable') {
          // Another instance spent the budget meanwhile: tell the client to back off now.
          refuseTooManyFailures(res, id, decision, clock());
          return;
        }
        if (decision.remaining === 0 && decision.allowed) {
          logger.warn('client address used up its authentication failure budget', { address, retryAfterSeconds: secondsUntil(decision.resetAtMs - clock()) });
        }
        unauthorized(res, id, reason);
        return;
      }

      if (!token.scopes.includes(requiredScope)) {
        logger.info('token lacks the required scope', { address, tokenId: token.id, requiredScope });
        res.setHeader('WWW-Authenticate', `Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="${requiredScope}"`);
        sendJsonRpcError(res, 403, jsonRpcError(id, JsonRpcCode.Forbidden, `This token lacks the "${requiredScope}" scope.`, { reason: 'insufficient_scope', requiredScope }));
        return;
      }

      (res.locals as { token?: AuthenticatedToken }).token = token;
      next();
    } catch (error) {
      next(error);
    }
  };
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

function asRefusal(decision: Decision, nowMs: number): Decision {
  return { ...decision, allowed: false, reason: 'limit', retryAfterMs: Math.max(0, decision.resetAtMs - nowMs) };
}

function unauthorized(res: Response, id: ReturnType<typeof requestIdOf>, reason: AuthFailureReason): void {
  // RFC 6750 §3.1: no error code when the request carried no credentials.
  res.setHeader('WWW-Authenticate', reason === 'missing_token' ? `Bearer realm="${AUTH_REALM}"` : `Bearer realm="${AUTH_REALM}", error="invalid_token"`);
  const message =
    reason === 'missing_token'
      ? 'Authentication required: send Authorization: Bearer <token>.'
      : 'The bearer token is malformed, unknown or revoked.';
  sendJsonRpcError(res, 401, jsonRpcError(id, JsonRpcCode.Unauthorized, message, { reason }));
}

function refuseTooManyFailures(res: Response, id: ReturnType<typeof requestIdOf>, decision: Decision, nowMs: number): void {
  setRateLimitHeaders(res, decision, nowMs);
  const retryAfterSeconds = secondsUntil(decision.retryAfterMs);
  sendJsonRpcError(
    res,
    429,
    jsonRpcError(id, JsonRpcCode.RateLimited, `Too many failed authentication attempts from this address. Retry after ${retryAfterSeconds} s.`, {
      reason: 'auth_failures',
      retryAfterSeconds,
      resetAt: new Date(decision.resetAtMs).toISOString(),
      limit: decision.limit,
      windowSeconds: Math.round(decision.windowMs / 1000),
    }),
  );
}
