import { DEFAULT_SCOPES, type TokenRecord, type TokenStore } from './token-record';
import { MAX_TOKEN_NAME_LENGTH, SCOPE_PATTERN, summarise, type TokenSummary } from './token-record-schema';
import { generateToken } from './token-secret';

export const DEFAULT_TIER = 'default';

export type TokenInputErrorCode = 'unknown_tier' | 'invalid_scope' | 'invalid_name';

/** Bad input from a person (CLI flags): the message says what is allowed. */
export class TokenInputError extends Error {
  override readonly name = 'TokenInputError';
  constructor(
    readonly code: TokenInputErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface TokenServiceOptions {
  readonly store: TokenStore;
  /**
   * Tier names the configuration defines (`config.rateLimit.tiers`). When
   * given, create and update refuse any other tier, so no token names a limit
   * that is not enforced.
   */
  readonly tiers?: readonly string[];
  /** Injected time; default Date.now. */
  readonly clock?: () => number;
}

export interface CreateTokenInput {
  readonly name: string;
  /** Default 'default'. */
  readonly tier?: string;
  /** Default ['mcp']. */
  readonly scopes?: readonly string[];
}

export interface CreatedToken {
  /** The bearer secret. This is the only time it exists outside its owner's hands: show it once, never store it. */
  readonly secret: string;
  readonly token: TokenSummary;
}

/** Token administration: what the CLI (and any future admin endpoint) does, on any store. */
export class TokenService {
  private readonly store: TokenStore;
  private readonly tiers: readonly string[] | undefined;
  private readonly clock: () => number;

  constructor(options: TokenServiceOptions) {
    this.store = options.store;
    this.tiers = options.tiers;
    this.clock = options.clock ?? Date.now;
  }

  async create(input: CreateTokenInput): Promise<CreatedToken> {
    const name = input.name.trim();
    if (name.length === 0 || name.length > MAX_TOKEN_NAME_LENGTH) {
      throw new TokenInputError('invalid_name', `a token name must be 1 to ${MAX_TOKEN_NAME_LENGTH} characters`);
    }
    const tier = this.checkTier(input.tier ?? DEFAULT_TIER);
    const scopes = this.checkScopes(input.scopes ?? DEFAULT_SCOPES);
    const generated = generateToken();
    const record: TokenRecord = {
      id: generated.id,
      name,
      tier,
      scopes,
      secretHash: generated.secretHash,
      createdAtMs: this.clock(),
      revokedAtMs: null,
    };
    await this.store.create(record);
    return { secret: generated.secret, token: summarise(record) };
  }

  /** Every token, oldest first, without hashes. */
  async list(): Promise<TokenSummary[]> {
    const records = await this.store.list();
    return records.sort((a, b) => a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id)).map(summarise);
  }

  async get(id: string): Promise<TokenSummary | undefined> {
    const record = await this.store.get(id);
    return record === undefined ? undefined : summarise(record);
  }

  /** False when there is no such token. Revoking a revoked token keeps its first revocation time. */
  async revoke(id: string): Promise<boolean> {
    return this.store.revoke(id, this.clock());
  }

  /** False when there is no such token. Takes effect on every instance within the verifier's cache TTL. */
  async update(id: string, changes: { tier?: string; scopes?: readonly string[] }): Promise<boolean> {
    return this.store.update(id, {
      ...(changes.tier !== undefined && { tier: this.checkTier(changes.tier) }),
      ...(changes.scopes !== undefined && { scopes: this.checkScopes(changes.scopes) }),
    });
  }

  private checkTier(tier: string): string {
    if (this.tiers !== undefined && !this.tiers.includes(tier)) {
      throw new TokenInputError('unknown_tier', `unknown tier ${JSON.stringify(tier)}; configured tiers: ${this.tiers.join(', ')} (set more with RATE_LIMIT_TIERS)`);
    }
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(tier)) {
      throw new TokenInputError('unknown_tier', `a tier name is 1-64 characters of [A-Za-z0-9_-], got ${JSON.stringify(tier)}`);
    }
    return tier;
  }

  private checkScopes(scopes: readonly string[]): string[] {
    const unique = [...new Set(scopes.map((s) => s.trim()).filter(Boolean))];
    const bad = unique.find((s) => !SCOPE_PATTERN.test(s));
    if (bad !== undefined) {
      throw new TokenInputError('invalid_scope', `a scope is 1-64 characters of [A-Za-z0-9:._-], got ${JSON.stringify(bad)}`);
    }
    return unique;
  }
}
