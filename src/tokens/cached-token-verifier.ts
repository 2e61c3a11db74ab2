import type { AuthenticatedToken, CachedVerdict, TokenRecord, TokenStore, TokenVerifier } from './token-record';
import { toAuthenticatedToken } from './token-record-schema';
import { hashesEqual, hashSecret, isWellFormedSecret } from './token-secret';
import { VerdictCaches } from './verdict-cache';

/** The longest a cached answer may live: the issue promises revocation within 60 s on every instance. */
export const MAX_TOKEN_CACHE_TTL_MS = 60_000;

export interface CachedTokenVerifierOptions {
  readonly store: TokenStore;
  /** How long a positive or negative answer is reused. Default 30000; at most 60000. */
  readonly ttlMs?: number;
  /** Entries kept per kind (valid tokens, unknown/revoked hashes). Default 10000 each. */
  readonly maxEntries?: number;
  /** Injected time; default Date.now. */
  readonly clock?: () => number;
}

/** The store could not answer. Not "unknown token": callers answer 503 and the attempt is not a failure. */
export class TokenStoreUnavailableError extends Error {
  readonly code = 'ERR_FIRELIMIT_TOKEN_STORE_UNAVAILABLE';
  override readonly name = 'TokenStoreUnavailableError';
  constructor(override readonly cause: unknown) {
    super('the token store could not be read');
  }
}

const INVALID: CachedVerdict = { kind: 'invalid' };

/**
 * Verifies bearer secrets against a TokenStore, remembering answers for
 * `ttlMs` so a busy token costs one store read per TTL per instance.
 *
 * - Malformed secrets are refused before hashing, without a lookup or a cache entry.
 * - Positive and negative answers are cached in separate bounded maps, so a
 *   flood of random secrets (negatives) cannot evict the valid tokens.
 * - A revocation, tier or scope change is seen by every instance within
 *   `ttlMs` of being written: no entry outlives its TTL.
 * - Store errors are never cached and never turned into "unknown": they throw
 *   TokenStoreUnavailableError, so a database blip answers 503 (retry) instead
 *   of 401 (your token is bad) and does not count as a failed attempt.
 * - Concurrent lookups of one hash share one store read.
 *
 * Keys are hashes, held only in memory; they are never logged.
 */
export class CachedTokenVerifier implements TokenVerifier {
  readonly ttlMs: number;
  private readonly store: TokenStore;
  private readonly clock: () => number;
  /** Valid tokens, and hashes found unknown or revoked. */
  private readonly verdicts: VerdictCaches;
  private storeReads = 0;

  constructor(options: CachedTokenVerifierOptions) {
    const ttlMs = options.ttlMs ?? 30_000;
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 0 || ttlMs > MAX_TOKEN_CACHE_TTL_MS) {
      throw new RangeError(`ttlMs must be an integer from 0 to ${MAX_TOKEN_CACHE_TTL_MS}, got ${ttlMs}`);
    }
    const maxEntries = options.maxEntries ?? 10_000;
    this.ttlMs = ttlMs;
    this.store = options.store;
    this.clock = options.clock ?? Date.now;
    this.verdicts = new VerdictCaches(maxEntries);
  }

  /** Store reads so far (cache misses); for tests and metrics. */
  get lookups(): number {
    return this.storeReads;
  }

  get cachedEntries(): { valid: number; invalid: number } {
    return this.verdicts.sizes;
  }

  async verify(secret: string): Promise<AuthenticatedToken | undefined> {
    if (typeof secret !== 'string' || !isWellFormedSecret(secret)) return undefined;
    const hash = hashSecret(secret);
    const nowMs = this.clock();
    return this.verdicts.get(hash, nowMs, () => this.lookUp(hash, nowMs));
  }

  peek(secret: string): CachedVerdict {
    if (typeof secret !== 'string' || !isWellFormedSecret(secret)) return INVALID;
    return this.verdicts.peek(hashSecret(secret), this.clock());
  }

  /** Forgets everything, e.g. after this instance itself revoked a token. */
  clear(): void {
    this.verdicts.clear();
  }

  private async lookUp(hash: string, askedAtMs: number): Promise<AuthenticatedToken | undefined> {
    this.storeReads++;
    let record: TokenRecord | undefined;
    try {
      record = await this.store.findByHash(hash);
    } catch (error) {
      throw new TokenStoreUnavailableError(error);
    }
    const live = record !== undefined && record.revokedAtMs === null && hashesEqual(record.secretHash, hash);
    const token = live && record !== undefined ? toAuthenticatedToken(record) : undefined;
    // The TTL counts from before the read: the answer reflects the store no earlier than that, so a
    // revocation written at time R is seen by every lookup after R + ttlMs, however slow the read was.
    const expiresAtMs = askedAtMs + this.ttlMs;
    if (this.ttlMs > 0) this.verdicts.remember(hash, token, expiresAtMs);
    return token;
  }
}
