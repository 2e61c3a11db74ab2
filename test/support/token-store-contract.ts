import type { TokenRecord, TokenStore } from '../../src/tokens/token-record';
import { generateToken } from '../../src/tokens/token-secret';

/** A fresh, valid record; fields can be overridden. */
export function makeRecord(overrides: Partial<TokenRecord> = {}): TokenRecord & { secret: string } {
  const t = generateToken();
  return {
    id: t.id,
    name: 'test token',
    tier: 'default',
    scopes: ['mcp'],
    secretHash: t.secretHash,
    createdAtMs: 1_700_000_000_000,
    revokedAtMs: null,
    secret: t.secret,
    ...overrides,
  };
}

function stored(record: TokenRecord & { secret?: string }): TokenRecord {
  const { secret: _secret, ...rest } = record;
  return rest;
}

/** The behaviour every TokenStore promises; each store's suite runs it against a real backend. */
export function describeTokenStoreContract(name: string, open: () => Promise<TokenStore>): void {
  describe(`${name} (TokenStore contract)`, () => {
    let store: TokenStore;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    it('finds a created token by hash and by id', async () => {
      const record = makeRecord({ tier: 'pro', scopes: ['mcp', 'extra'] });
      await store.create(stored(record));
      expect(await store.findByHash(record.secretHash)).toEqual(stored(record));
      expect(await store.get(record.id)).toEqual(stored(record));
    });

    it('answers undefined for an unknown hash or id', async () => {
      await store.create(stored(makeRecord()));
      expect(await store.findByHash(makeRecord().secretHash)).toBeUndefined();
      expect(await store.get('tok_doesnotexist0000')).toBeUndefined();
    });

    it('refuses a second token with the same id', async () => {
      const record = makeRecord();
      await store.create(stored(record));
      await expect(store.create(stored(makeRecord({ id: record.id })))).rejects.toThrow();
      expect(await store.findByHash(record.secretHash)).toEqual(stored(record));
    });

    it('lists every token', async () => {
      const records = [makeRecord({ createdAtMs: 1 }), makeRecord({ createdAtMs: 2 }), makeRecord({ createdAtMs: 3 })];
      for (const r of records) await store.create(stored(r));
      const listed = await store.list();
      expect(listed.map((r) => r.id).sort()).toEqual(records.map((r) => r.id).sort());
    });

    it('revokes a token once: a second revocation keeps the first time', async () => {
      const record = makeRecord();
      await store.create(stored(record));
      expect(await store.revoke(record.id, 5_000)).toBe(true);
      expect(await store.revoke(record.id, 9_000)).toBe(true);
      expect((await store.findByHash(record.secretHash))?.revokedAtMs).toBe(5_000);
    });

    it('answers false when revoking or updating an unknown id', async () => {
      expect(await store.revoke('tok_doesnotexist0000', 1)).toBe(false);
      expect(await store.update('tok_doesnotexist0000', { tier: 'pro' })).toBe(false);
    });

    it('changes tier and scopes, each alone or together, leaving the rest', async () => {
      const record = makeRecord();
      await store.create(stored(record));
      expect(await store.update(record.id, { tier: 'pro' })).toBe(true);
      expect(await store.get(record.id)).toMatchObject({ tier: 'pro', scopes: ['mcp'], secretHash: record.secretHash });
      expect(await store.update(record.id, { scopes: ['a', 'b'] })).toBe(true);
      expect(await store.get(record.id)).toMatchObject({ tier: 'pro', scopes: ['a', 'b'] });
      expect(await store.update(record.id, { tier: 'default', scopes: [] })).toBe(true);
      expect(await store.get(record.id)).toMatchObject({ tier: 'default', scopes: [], revokedAtMs: null });
    });

    it('refuses a record that is not a valid token record', async () => {
      await expect(store.create({ ...stored(makeRecord()), secretHash: 'not-a-hash' })).rejects.toThrow(/secretHash/);
    });
  });
}
