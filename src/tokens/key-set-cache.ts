import { createLocalJWKSet, errors, type FlattenedJWSInput, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import { mayFetchKeys, type KeySetState, type RefreshBounds } from './jwks-refresh';

/** The issuer's keys (or its discovery document) could not be fetched and none are held: callers answer 503, not 401. */
export class KeySetUnavailableError extends Error {
  readonly code = 'ERR_FIRELIMIT_KEY_SET_UNAVAILABLE';
  override readonly name = 'KeySetUnavailableError';
  constructor(readonly issuer: string, override readonly cause?: unknown) {
    super(`the signing keys of ${issuer} cannot be fetched right now`);
  }
}

export interface KeySetCacheOptions extends RefreshBounds {
  readonly issuer: string;
  /** Undefined: `jwks_uri` from the issuer's OpenID Connect / RFC 8414 discovery document. */
  readonly jwksUrl: string | undefined;
  /** Default global fetch. */
  readonly fetch?: typeof fetch;
  /** Injected time; default Date.now. */
  readonly clock?: () => number;
  /** Per fetch; default 5000. */
  readonly timeoutMs?: number;
}

/** Larger than any real key set (Google's holds 2 to 3 keys in under 2 KiB); a bigger answer is not read. */
const MAX_DOCUMENT_BYTES = 256 * 1024;
const DEFAULT_TIMEOUT_MS = 5_000;

type LocalKeySet = ReturnType<typeof createLocalJWKSet>;

/**
 * One issuer's signing keys, fetched at most once per `cooldownMs` (see
 * jwks-refresh.ts) and shared by concurrent lookups. Key selection and the
 * signature itself are jose's (createLocalJWKSet, jwtVerify); this class only
 * decides when to fetch. jose's own remote set is not used: its cooldown reads
 * the real clock and a failed fetch leaves no mark, so while an issuer is
 * down every request would fetch again.
 */
export class KeySetCache {
  private readonly fetchImpl: typeof fetch;
  private readonly clock: () => number;
  private readonly timeoutMs: number;
  private state: KeySetState = { lastAttemptAtMs: undefined, keysFetchedAtMs: undefined };
  private local: LocalKeySet | undefined;
  private jwksUrl: string | undefined;
  private pending: Promise<void> | undefined;
  private fetches = 0;

  constructor(private readonly options: KeySetCacheOptions) {
    this.fetchImpl = options.fetch ?? fetch;
    this.clock = options.clock ?? Date.now;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.jwksUrl = options.jwksUrl;
  }

  /** Fetches started so far (key sets and discovery documents); for tests and metrics. */
  get fetchCount(): number {
    return this.fetches;
  }

  /** A jose key getter (JWTVerifyGetKey) for this issuer. */
  readonly getKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<Awaited<ReturnType<LocalKeySet>>> => {
    // A fetch in flight is waited for, not skipped because its start put us in the cooldown.
    if (this.pending !== undefined) await this.pending.catch(() => undefined);
    else if (mayFetchKeys(this.state, this.clock(), 'use', this.options)) await this.refresh().catch(() => undefined);
    const local = this.local;
    if (local === undefined) throw new KeySetUnavailableError(this.options.issuer);
    try {
      return await local(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || !mayFetchKeys(this.state, this.clock(), 'unknown_kid', this.options)) throw error;
      // A kid we do not hold: a rotation we have not seen yet, or a forgery. Either way at most one fetch per cooldown.
      await this.refresh();
      return await (this.local ?? local)(header, token);
    }
  };

  /** One fetch at a time; a failure is remembered as an attempt (so it too waits out the cooldown) and keeps the old keys. */
  private refresh(): Promise<void> {
    if (this.pending !== undefined) return this.pending;
    this.state = { ...this.state, lastAttemptAtMs: this.clock() };
    this.pending = this.load()
      .then((keys) => {
        this.local = createLocalJWKSet(keys);
        this.state = { ...this.state, keysFetchedAtMs: this.clock() };
      })
      .catch((error: unknown) => {
        // Old keys keep working; with none, the caller gets 503 (the token may be good).
        if (this.local === undefined) throw new KeySetUnavailableError(this.options.issuer, error);
      })
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }

  private async load(): Promise<JSONWebKeySet> {
    this.jwksUrl ??= await this.discoverJwksUrl();
    const body = await this.getJson(this.jwksUrl);
    if (body === null || typeof body !== 'object' || !Array.isArray((body as { keys?: unknown }).keys)) throw new Error('not a JWK set');
    return body as JSONWebKeySet;
  }

  private async discoverJwksUrl(): Promise<string> {
    const issuer = new URL(this.options.issuer);
    const path = issuer.pathname === '/' ? '' : issuer.pathname.replace(/\/$/, '');
    const document = (await this.getJson(`${issuer.origin}${path}/.well-known/openid-configuration`)) as { issuer?: unknown; jwks_uri?: unknown } | null;
    // OpenID Connect Discovery §4.3: the document must name the issuer we asked about, or its keys are someone else's.
    if (document?.issuer !== this.options.issuer || typeof document.jwks_uri !== 'string') throw new Error('the discovery document names another issuer or no jwks_uri');
    const jwksUrl = new URL(document.jwks_uri);
    if (jwksUrl.protocol !== 'https:' && !(jwksUrl.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(jwksUrl.hostname))) throw new Error('jwks_uri is not https');
    return jwksUrl.href;
  }

  private async getJson(url: string): Promise<unknown> {
    this.fetches++;
    const response = await this.fetchImpl(url, {
      headers: { accept: 'application/json, application/jwk-set+json' },
      redirect: 'error',
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
    const declared = Number(response.headers.get('content-length') ?? '0');
    if (declared > MAX_DOCUMENT_BYTES) throw new Error('document too large');
    const text = await readBounded(response, MAX_DOCUMENT_BYTES);
    return JSON.parse(text) as unknown;
  }
}

async function readBounded(response: Response, maxBytes: number): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new Error('document too large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
