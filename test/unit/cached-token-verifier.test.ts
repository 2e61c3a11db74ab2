import { CachedTokenVerifier, TokenStoreUnavailableError } from '../../src/tokens/cached-token-verifier';
import type { TokenRecord, TokenStore } from '../../src/tokens/token-record';
import { generateToken } from '../../src/tokens/token-secret';

/** A TokenStore over a Map (our own interface, not a database client), with a switch to make reads fail. */
class MapTokenStore implements TokenStore {
  readonly records = new Map<string, TokenRecord>();
  reads = 0;
  failing = false;

  async create(record: TokenRecord): Promise<void> {
    this.records.set(record.id, record);
  }
  async findByHash(secretHash: string): Promise<TokenRecord | undefined> {
    this.reads++;
    if (this.failing) throw new Error('store down');
    return [...this.records.values()].find((r) => r.secretHash === secretHash);
  }
  async get(id: string): Promise<TokenRecord | undefined> {
    return this.records.get(id);
  }
  async list(): Promise<TokenRecord[]> {
    return [...this.records.values()];
  }
  async revoke(id: string, nowMs: number): Promise<boolean> {
    const r = this.records.get(id);
    if (!r) return false;
    this.records.set(id, { ...r, revokedAtMs: nowMs });
    return true;
  }
  async update(id: string, changes: { tier?: string; scopes?: readonly string[] }): Promise<boolean> {
    const r = this.records.get(id);
    if (!r) return false;
    this.records.set(id, { ...r, ...changes } as TokenRecord);
    return true;
  }
  async close(): Promise<void> {}
}

function setup(options: { ttlMs?: number; maxEntries?: number } = {}) {
  const store = new MapTokenStore();
  let nowMs = 1_000_000;
  const clock = { advance: (ms: number) => (nowMs += ms) };
  const verifier = new CachedTokenVerifier({ store, clock: () => nowMs, ttlMs: options.ttlMs ?? 30_000, maxEntries: options.maxEntries });
  const addToken = (tier = 'default', scopes: string[] = ['mcp']) => {
    const t = generateToken();
    store.records.set(t.id, { id: t.id, name: 'n', tier, scopes, secretHash: t.secretHash, createdAtMs: 0, revokedAtMs: null });
    return t;
  };
  return { store, verifier, clock, addToken };
}

describe('CachedTokenVerifier', () => {
  it('returns the token (id, name, tier, scopes) for a live secret and nothing of its hash', async () => {
    const { verifier, addToken } = setup();
    const t = addToken('pro', ['mcp', 'admin']);
    const token = await verifier.verify(t.secret);
    expect(token).toEqual({ id: t.id, name: 'n', tier: 'pro', scopes: ['mcp', 'admin'] });
    expect(JSON.stringify(token)).not.toContain(t.secretHash);
  });

  it('refuses malformed secrets without a store read', async () => {
    const { verifier, store } = setup();
    for (const bad of ['', 'Bearer x', 'flk_short', 'x'.repeat(10_000)]) expect(await verifier.verify(bad)).toBeUndefined();
    expect(store.reads).toBe(0);
  });

  it('reads the store once per TTL for a busy token', async () => {
    const { verifier, store, clock, addToken } = setup({ ttlMs: 30_000 });
    const t = addToken();
    for (let i = 0; i < 10; i++) {
      expect(await verifier.verify(t.secret)).toBeDefined();
      clock.advance(2_000);
    }
    expect(store.reads).toBe(1);
    clock.advance(10_000); // 40 s after the first read
    await verifier.verify(t.secret);
    expect(store.reads).toBe(2);
  });

  it('keeps accepting a revoked token until the TTL ends, and refuses it from then on', async () => {
    const { verifier, store, clock, addToken } = setup({ ttlMs: 30_000 });
    const t = addToken();
    expect(await verifier.verify(t.secret)).toBeDefined();
    await store.revoke(t.id, 0);
    clock.advance(29_999);
    expect(await verifier.verify(t.secret)).toBeDefined();
    clock.advance(1);
    expect(await verifier.verify(t.secret)).toBeUndefined();
  });

  it('shows a tier or scope change after the TTL, not before', async () => {
    const { verifier, store, clock, addToken } = setup({ ttlMs: 10_000 });
    const t = addToken('default', ['mcp']);
    await verifier.verify(t.secret);
    await store.update(t.id, { tier: 'pro', scopes: ['other'] });
    clock.advance(9_000);
    expect(await verifier.verify(t.secret)).toMatchObject({ tier: 'default', scopes: ['mcp'] });
    clock.advance(1_000);
    expect(await verifier.verify(t.secret)).toMatchObject({ tier: 'pro', scopes: ['other'] });
  });

  it('caches unknown secrets too, for the same TTL', async () => {
    const { verifier, store, clock } = setup({ ttlMs: 30_000 });
    const unknown = generateToken().secret;
    expect(await verifier.verify(unknown)).toBeUndefined();
    expect(await verifier.verify(unknown)).toBeUndefined();
    expect(store.reads).toBe(1);
    clock.advance(30_000);
    await verifier.verify(unknown);
    expect(store.reads).toBe(2);
  });

  it('caches a revoked token as refused', async () => {
    const { verifier, store, addToken } = setup();
    const t = addToken();
    await store.revoke(t.id, 0);
    expect(await verifier.verify(t.secret)).toBeUndefined();
    expect(await verifier.verify(t.secret)).toBeUndefined();
    expect(store.reads).toBe(1);
  });

  it('throws TokenStoreUnavailableError on a store failure and caches nothing, so the next call reads again', async () => {
    const { verifier, store, addToken } = setup();
    const t = addToken();
    store.failing = true;
    await expect(verifier.verify(t.secret)).rejects.toBeInstanceOf(TokenStoreUnavailableError);
    store.failing = false;
    expect(await verifier.verify(t.secret)).toMatchObject({ id: t.id });
    expect(store.reads).toBe(2);
  });

  it('shares one store read between concurrent verifications of one secret', async () => {
    const { verifier, store, addToken } = setup();
    const t = addToken();
    const results = await Promise.all(Array.from({ length: 20 }, () => verifier.verify(t.secret)));
    expect(results.every((r) => r?.id === t.id)).toBe(true);
    expect(store.reads).toBe(1);
  });

  it('holds at most maxEntries per kind, evicting the least recently used', async () => {
    const { verifier, store, addToken } = setup({ maxEntries: 3 });
    const tokens = [addToken(), addToken(), addToken(), addToken()];
    for (const t of tokens.slice(0, 3)) await verifier.verify(t.secret);
    await verifier.verify(tokens[0]!.secret); // touch the first: the second is now least recently used
    await verifier.verify(tokens[3]!.secret);
    expect(verifier.cachedEntries.valid).toBe(3);
    const readsBefore = store.reads;
    await verifier.verify(tokens[0]!.secret);
    expect(store.reads).toBe(readsBefore);
    await verifier.verify(tokens[1]!.secret);
    expect(store.reads).toBe(readsBefore + 1);
  });

  it('does not let a flood of unknown secrets evict valid tokens', async () => {
    const { verifier, store, addToken } = setup({ maxEntries: 5 });
    const t = addToken();
    await verifier.verify(t.secret);
    for (let i = 0; i < 50; i++) await verifier.verify(generateToken().secret);
    expect(verifier.cachedEntries).toEqual({ valid: 1, invalid: 5 });
    const readsBefore = store.reads;
    await verifier.verify(t.secret);
    expect(store.reads).toBe(readsBefore);
  });

  it.each([-1, 60_001, 1.5])('refuses a TTL of %p ms (the bound is 60 s)', (ttlMs) => {
    expect(() => new CachedTokenVerifier({ store: new MapTokenStore(), ttlMs })).toThrow(RangeError);
  });
});
