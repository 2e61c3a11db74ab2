/**
 * A stored API token. The secret itself is never stored: only its SHA-256.
 * `id` is public (it is the rate-limit key and appears in logs); the secret
 * and its hash never do.
 */
export interface TokenRecord {
  /** Public id, e.g. "tok_3kq9x2m1"; safe as a database key and in logs. */
  readonly id: string;
  readonly name: string;
  /** Names a configured rate-limit tier ("default" unless set). */
  readonly tier: string;
  readonly scopes: readonly string[];
  /** Lowercase hex SHA-256 of the secret. */
  readonly secretHash: string;
  readonly createdAtMs: number;
  /** Null while the token is live. */
  readonly revokedAtMs: number | null;
}

/** What request handlers see of a verified token. */
export interface AuthenticatedToken {
  readonly id: string;
  readonly name: string;
  readonly tier: string;
  readonly scopes: readonly string[];
}

/** The scope a token needs to call /mcp. */
export const MCP_SCOPE = 'mcp';

export const DEFAULT_SCOPES: readonly string[] = [MCP_SCOPE];

/** Storage of token records; file (local) and Firestore (production) implement it. */
export interface TokenStore {
  create(record: TokenRecord): Promise<void>;
  findByHash(secretHash: string): Promise<TokenRecord | undefined>;
  get(id: string): Promise<TokenRecord | undefined>;
  list(): Promise<TokenRecord[]>;
  /** Sets revokedAtMs; returns false when no such token. */
  revoke(id: string, nowMs: number): Promise<boolean>;
  /** Changes tier and/or scopes; returns false when no such token. */
  update(id: string, changes: { tier?: string; scopes?: readonly string[] }): Promise<boolean>;
  close(): Promise<void>;
}

/** Turns a presented secret into a token, or undefined (unknown, revoked, malformed). */
/**
 * What a verifier already knows of a secret without asking its store:
 * `valid` and `invalid` are answers still within their cache TTL; `unknown`
 * means verifying it would be a store lookup (a new guess, as far as the
 * failed sign-in limit is concerned).
 */
export type CachedVerdict =
  | { readonly kind: 'valid'; readonly token: AuthenticatedToken }
  | { readonly kind: 'invalid' }
  | { readonly kind: 'unknown' };

export interface TokenVerifier {
  verify(secret: string): Promise<AuthenticatedToken | undefined>;
  /** A synchronous look at the cache; never reads the store. */
  peek(secret: string): CachedVerdict;
}
