import { mkdtemp, readdir, readFile, rm, stat, writeFile, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileTokenStore, TokenFileLockError } from '../../src/tokens/file-token-store';
import { CorruptTokenRecordError } from '../../src/tokens/token-record-schema';
import { forkWorker } from '../support/forked-worker';
import { describeTokenStoreContract, makeRecord } from '../support/token-store-contract';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-tokens-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const strip = ({ secret: _s, ...record }: ReturnType<typeof makeRecord>) => record;

describeTokenStoreContract('FileTokenStore', async () => new FileTokenStore({ path: path.join(dir, 'tokens.json') }));

describe('FileTokenStore on disk', () => {
  it('reads a missing file as no tokens, without creating it', async () => {
    const file = path.join(dir, 'absent', 'tokens.json');
    const store = new FileTokenStore({ path: file });
    expect(await store.list()).toEqual([]);
    await expect(stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('creates the parent directories and writes the file with mode 0600, leaving no temporary files', async () => {
    const file = path.join(dir, 'nested', 'deeper', 'tokens.json');
    const store = new FileTokenStore({ path: file });
    await store.create(strip(makeRecord()));
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(file))).mode & 0o077).toBe(0);
    expect(await readdir(path.dirname(file))).toEqual(['tokens.json']);
  });

  it('stores the hash and never the secret', async () => {
    const file = path.join(dir, 'tokens.json');
    const record = makeRecord();
    await new FileTokenStore({ path: file }).create(strip(record));
    const text = await readFile(file, 'utf8');
    expect(text).toContain(record.secretHash);
    expect(text).not.toContain(record.secret);
  });

  it('lets a long-running reader see tokens another store (the CLI) created and revoked, on its next lookup', async () => {
    const file = path.join(dir, 'tokens.json');
    const server = new FileTokenStore({ path: file });
    const cli = new FileTokenStore({ path: file });
    const record = makeRecord();
    expect(await server.findByHash(record.secretHash)).toBeUndefined();
    await cli.create(strip(record));
    expect(await server.findByHash(record.secretHash)).toMatchObject({ id: record.id, revokedAtMs: null });
    await cli.revoke(record.id, 42);
    expect(await server.findByHash(record.secretHash)).toMatchObject({ revokedAtMs: 42 });
  });

  it('loses no token when two stores on one file create concurrently', async () => {
    const file = path.join(dir, 'tokens.json');
    const a = new FileTokenStore({ path: file });
    const b = new FileTokenStore({ path: file });
    const records = Array.from({ length: 20 }, () => makeRecord());
    await Promise.all(records.map((r, i) => (i % 2 === 0 ? a : b).create(strip(r))));
    expect((await new FileTokenStore({ path: file }).list()).map((r) => r.id).sort()).toEqual(records.map((r) => r.id).sort());
  });

  it('refuses a corrupt file instead of reading it as empty, and does not overwrite it', async () => {
    const file = path.join(dir, 'tokens.json');
    await writeFile(file, '{"version":1,"tokens":[', { mode: 0o600 });
    const store = new FileTokenStore({ path: file });
    await expect(store.findByHash(makeRecord().secretHash)).rejects.toBeInstanceOf(CorruptTokenRecordError);
    await expect(store.create(strip(makeRecord()))).rejects.toBeInstanceOf(CorruptTokenRecordError);
    expect(await readFile(file, 'utf8')).toBe('{"version":1,"tokens":[');
  });

  it('refuses a file with an invalid record, naming the record', async () => {
    const file = path.join(dir, 'tokens.json');
    await writeFile(file, JSON.stringify({ version: 1, tokens: [{ ...strip(makeRecord()), tier: 'no spaces allowed' }] }));
    await expect(new FileTokenStore({ path: file }).list()).rejects.toThrow(/tokens\[0\].*tier/);
  });

  it('waits for a lock held by a live process and gives up with a clear error', async () => {
    const file = path.join(dir, 'tokens.json');
    // This very process is alive on this host: however old, its lock is waited for, not broken.
    await writeFile(`${file}.lock`, JSON.stringify({ pid: process.pid, hostname: os.hostname() }));
    const old = new Date(Date.now() - 60_000);
    await utimes(`${file}.lock`, old, old);
    const store = new FileTokenStore({ path: file, lockTimeoutMs: 200, staleLockMs: 100 });
    await expect(store.create(strip(makeRecord()))).rejects.toMatchObject({ name: 'TokenFileLockError', code: 'ERR_FIRELIMIT_TOKEN_FILE_LOCKED' });
    await expect(store.create(strip(makeRecord()))).rejects.toBeInstanceOf(TokenFileLockError);
  });

  it('breaks at once the lock of a writer that was SIGKILLed while holding it', async () => {
    const file = path.join(dir, 'tokens.json');
    const holder = forkWorker<{ type: 'noop' }, { type: 'locked'; pid: number }>(
      path.join(__dirname, '..', 'support', 'token-lock-holder.ts'),
      { LOCK_PATH: `${file}.lock` },
      'lock holder',
    );
    try {
      // The holder replies once it holds the lock; the request itself is ignored.
      const reply = await holder.ask({ type: 'noop' });
      expect(JSON.parse(await readFile(`${file}.lock`, 'utf8'))).toEqual({ pid: reply.pid, hostname: os.hostname() });
    } finally {
      await holder.kill();
    }
    await stat(`${file}.lock`); // left behind, as a killed CLI leaves it

    const store = new FileTokenStore({ path: file });
    const started = Date.now();
    await store.create(strip(makeRecord()));
    // Well under the 3 s age rule: the dead owner's pid is what broke it.
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await store.list()).toHaveLength(1);
    await expect(stat(`${file}.lock`)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('breaks a lock from another host (or without an owner) once it is older than staleLockMs', async () => {
    const file = path.join(dir, 'tokens.json');
    for (const content of [JSON.stringify({ pid: 1, hostname: 'some-other-host' }), '12345', '']) {
      await writeFile(`${file}.lock`, content);
      const old = new Date(Date.now() - 60_000);
      await utimes(`${file}.lock`, old, old);
      const store = new FileTokenStore({ path: file });
      await store.create(strip(makeRecord()));
    }
    expect(await new FileTokenStore({ path: file }).list()).toHaveLength(3);
  });

  it('breaks a fresh lock from another host within the lock timeout, so a waiting writer never gives up on it', async () => {
    const file = path.join(dir, 'tokens.json');
    await writeFile(`${file}.lock`, JSON.stringify({ pid: 1, hostname: 'some-other-host' }));
    const store = new FileTokenStore({ path: file, lockTimeoutMs: 600, staleLockMs: 300 });
    await store.create(strip(makeRecord()));
    expect(await store.list()).toHaveLength(1);
  });

  it('refuses a stale age that is not below the lock timeout', () => {
    expect(() => new FileTokenStore({ path: path.join(dir, 'tokens.json'), lockTimeoutMs: 5000, staleLockMs: 10_000 })).toThrow(RangeError);
    expect(() => new FileTokenStore({ path: path.join(dir, 'tokens.json'), lockTimeoutMs: 5000, staleLockMs: 5000 })).toThrow(/below lockTimeoutMs/);
  });
});
