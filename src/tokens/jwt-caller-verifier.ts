import { createHash } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import type { TrustedIssuer } from '../config/auth-issuers';
import { KeySetCache, KeySetUnavailableError } from './key-set-cache';
import { subjectCallerId } from './subject-id';
import { VerdictCaches } from './verdict-cache';
import { isJwtShaped } from './jwt-shape';
import { MCP_SCOPE, type AuthenticatedToken, type CachedVerdict, type TokenVerifier } from './token-record';

const MAX_SCOPES = 64;
const MAX_SUBJECT_CHARS = 255;

export interface JwtCallerVerifierOptions {
  readonly issuers: readonly TrustedIssuer[];
  /** The configured tier names: a tier claim naming anything else gets the issuer's defaultTier. */
  readonly tierNames: readonly string[];
  /** How long a verdict is reused (never past the token's `exp`). Default 30000 (TOKEN_CACHE_TTL_MS). */
  readonly ttlMs?: number;
  /** Verdicts kept per kind. Default 10000. */
  readonly maxEntries?: number;
  /** Injected time for `exp`/`nbf` and the caches; default Date.now. */
  readonly clock?: () => number;
  /** For the key sets and discovery documents; default global fetch. */
  readonly fetch?: typeof fetch;
}

/** The issuer's keys cannot be had: the token may be good, so the caller answers 503 and the attempt is refunded. */
export class IssuerUnavailableError extends Error {
  readonly code = 'ERR_FIRELIMIT_ISSUER_UNAVAILABLE';
  override readonly name = 'IssuerUnavailableError';
  constructor(override readonly cause: unknown) {
    super('the token issuer could not be reached');
  }
}

interface Issuer {
  readonly config: TrustedIssuer;
  readonly keys: KeySetCache;
}

/**
 * Verifies JWTs (OAuth access tokens, Firebase ID tokens) from the trusted
 * issuers with jose, and turns one into the caller of (iss, sub).
 *
 * Nothing in the token chooses how it is checked: the issuer is looked up
 * by exact `iss` among the configured ones (an unknown issuer fetches
 * nothing), the algorithms are that issuer's (asymmetric only, so neither
 * `none` nor an HMAC keyed with a public key can pass), and `aud`, `exp`,
 * `nbf` and `iat` are checked with the issuer's clock tolerance.
 */
export class JwtCallerVerifier implements TokenVerifier {
  private readonly byIssuer = new Map<string, Issuer>();
  private readonly tierNames: ReadonlySet<string>;
  private readonly ttlMs: number;
  private readonly clock: () => number;
  // Valid and invalid verdicts apart, so a flood of forged tokens cannot evict the callers who signed in.
  private readonly verdicts: VerdictCaches;

  constructor(options: JwtCallerVerifierOptions) {
    this.clock = options.clock ?? Date.now;
    this.ttlMs = options.ttlMs ?? 30_000;
    this.tierNames = new Set(options.tierNames);
    this.verdicts = new VerdictCaches(options.maxEntries ?? 10_000);
    for (const config of options.issuers) {
      this.byIssuer.set(config.issuer, {
        config,
        keys: new KeySetCache({ issuer: config.issuer, jwksUrl: config.jwksUrl, maxAgeMs: config.jwksMaxAgeMs, cooldownMs: config.jwksCooldownMs, clock: this.clock, fetch: options.fetch }),
      });
    }
  }

  /** Fetches of every issuer's keys and discovery documents so far; for tests and metrics. */
  get keyFetches(): number {
    let total = 0;
    for (const issuer of this.byIssuer.values()) total += issuer.keys.fetchCount;
    return total;
  }

  async verify(credential: string): Promise<AuthenticatedToken | undefined> {
    if (typeof credential !== 'string' || !isJwtShaped(credential)) return undefined;
    const hash = hashOf(credential);
    const nowMs = this.clock();
    return this.verdicts.get(hash, nowMs, () => this.check(credential, hash, nowMs));
  }

  peek(credential: string): CachedVerdict {
    if (typeof credential !== 'string' || !isJwtShaped(credential)) return { kind: 'invalid' };
    return this.verdicts.peek(hashOf(credential), this.clock());
  }

  private async check(credential: string, hash: string, askedAtMs: number): Promise<AuthenticatedToken | undefined> {
    const verified = await this.verifyWithIssuer(credential);
    if (verified === undefined) {
      this.verdicts.remember(hash, undefined, askedAtMs + this.ttlMs);
      return undefined;
    }
    const { caller, expiresAtMs } = verified;
    // Never past the token's own `exp`.
    this.verdicts.remember(hash, caller, Math.min(askedAtMs + this.ttlMs, expiresAtMs));
    return caller;
  }

  private async verifyWithIssuer(credential: string): Promise<{ caller: AuthenticatedToken; expiresAtMs: number } | undefined> {
    let claimedIssuer: unknown;
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(credential).alg;
      claimedIssuer = decodeJwt(credential).iss;
    } catch {
      return undefined;
    }
    const issuer = typeof claimedIssuer === 'string' ? this.byIssuer.get(claimedIssuer) : undefined;
    // Before any key is fetched: an issuer we do not trust or an algorithm it does not use costs nothing.
    if (issuer === undefined || typeof alg !== 'string' || !(issuer.config.algorithms as readonly string[]).includes(alg)) return undefined;
    const { config } = issuer;
    const nowMs = this.clock();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(credential, issuer.keys.getKey, {
        issuer: config.issuer,
        audience: config.audience,
        algorithms: [...config.algorithms],
        clockTolerance: Math.floor(config.clockToleranceMs / 1000),
        currentDate: new Date(nowMs),
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (error) {
      if (error instanceof KeySetUnavailableError) throw new IssuerUnavailableError(error);
      if (error instanceof errors.JOSEError || error instanceof TypeError) return undefined;
      throw new IssuerUnavailableError(error);
    }
    const { sub, exp, iat } = payload;
    if (typeof sub !== 'string' || sub.length === 0 || sub.length > MAX_SUBJECT_CHARS || typeof exp !== 'number') return undefined;
    // A token issued in the future was not issued by a clock we agree with (Firebase requires iat and auth_time in the past).
    const latestIssueSec = (nowMs + config.clockToleranceMs) / 1000;
    if (iat !== undefined && iat > latestIssueSec) return undefined;
    if (config.preset === 'firebase' && (typeof payload.auth_time !== 'number' || payload.auth_time > latestIssueSec)) return undefined;

    const scopes = scopesOf(payload);
    const tierClaim = payload[config.tierClaim];
    const tier = typeof tierClaim === 'string' && this.tierNames.has(tierClaim) ? tierClaim : config.defaultTier;
    if (config.scope === null || scopes.includes(config.scope)) {
      if (!scopes.includes(MCP_SCOPE)) scopes.push(MCP_SCOPE);
    }
    const caller: AuthenticatedToken = { id: subjectCallerId(config.issuer, sub), name: `signed in with ${config.issuer}`, tier, scopes };
    return { caller, expiresAtMs: exp * 1000 };
  }
}

/** `scope` (RFC 9068, space-separated) or `scp` (Okta, Entra: a list or a string), bounded. */
export function scopesOf(payload: JWTPayload): string[] {
  const raw = payload.scope ?? payload.scp;
  const list = typeof raw === 'string' ? raw.split(' ') : Array.isArray(raw) ? raw : [];
  const scopes: string[] = [];
  for (const scope of list) {
    if (typeof scope === 'string' && scope !== '' && scope.length <= 128 && !scopes.includes(scope)) scopes.push(scope);
    if (scopes.length >= MAX_SCOPES) break;
  }
  return scopes;
}

function hashOf(credential: string): string {
  return createHash('sha256').update(credential, 'utf8').digest('hex');
}
