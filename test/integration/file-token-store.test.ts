import { mkdtemp, readdir, readFile, rm, stat, writeFile, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createCapturingLogger } from '../support/capturing-logger';
import { CachedTokenVerifier, TokenStoreUnavailableError } from '../../src/tokens/cached-token-verifier';
import { FileTokenStore, TokenFileLockError, TokenFileMissingError } from '../../src/tokens/file-token-store';
import type { TokenRecord } from '../../src/tokens/token-record';
import { acquireTokenFileLock } from '../../src/tokens/token-file-lock';
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

async function writeTokens(file: string, tokens: readonly TokenRecord[]): Promise<void> {
  await writeFile(file, JSON.stringify({ version: 1, tokens: tokens.map((t) => strip(t as ReturnType<typeof makeRecord>)) }, null, 2), { mode: 0o600 });
}

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

describeTokenStoreContract('FileTokenStore', async () => new FileTokenStore({ path: path.join(dir, 'tokens.json') }));

describe('FileTokenStore with a broken file', () => {
  it('names the path and the line and column of a JSON syntax error, in the error and in one log line', async () => {
    const file = path.join(dir, 'tokens.json');
    const record = makeRecord();
    // The error sits on line 3, right after a hash: V8's own message would quote the text around it.
    await writeFile(file, `{"version":1,"tokens":[\n{"secretHash":"${record.secretHash}"\n x}]}`);
    const logger = createCapturingLogger();
    const store = new FileTokenStore({ path: file, logger });
    const error = await rejectionOf(store.findByHash(record.secretHash));
    expect(error).toBeInstanceOf(CorruptTokenRecordError);
    expect(error).toMatchObject({ code: 'ERR_FIRELIMIT_CORRUPT_TOKEN_RECORD', where: file });
    expect(error.message).toContain(file);
    expect(error.message).toMatch(/JSON syntax error at line 3 column 2/);
    expect(error.message).not.toContain(record.secretHash);
    for (let i = 0; i < 5; i++) await expect(store.findByHash(record.secretHash)).rejects.toBe(error);
    expect(logger.entries).toEqual([
      {
        severity: 'ERROR',
        message: 'token file is corrupt; sign-ins answer 503 until it is fixed',
        fields: { event: 'tokens.file_unreadable', path: file, code: 'ERR_FIRELIMIT_CORRUPT_TOKEN_RECORD', where: file, reason: expect.stringMatching(/^JSON syntax error at line 3 column 2: /) as unknown },
      },
    ]);
    expect(JSON.stringify(logger.entries)).not.toContain(record.secretHash);
  });

  it('says a truncated file ends early, with the position of the end', async () => {
    const file = path.join(dir, 'tokens.json');
    await writeFile(file, '{"version":1,\n"tokens":[');
    await expect(new FileTokenStore({ path: file }).list()).rejects.toThrow(`${file}: JSON syntax error: the file ends early (line 2 column 11)`);
  });

  it('names the record and the field of an invalid record, in the error and the log, without its hash', async () => {
    const file = path.join(dir, 'tokens.json');
    const good = makeRecord();
    const bad = makeRecord({ secretHash: `${makeRecord().secretHash}`.toUpperCase() });
    await writeTokens(file, [good, bad]);
    const logger = createCapturingLogger();
    const error = await rejectionOf(new FileTokenStore({ path: file, logger }).findByHash(good.secretHash));
    expect(error.message).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} tokens\\[1\\]: invalid token record, field secretHash: `));
    expect(logger.entries[0]?.fields).toMatchObject({ path: file, where: `${file} tokens[1]`, reason: expect.stringContaining('field secretHash') as unknown });
    expect(JSON.stringify(logger.entries) + error.message).not.toMatch(/[0-9a-f]{64}/i);
  });

  it('refuses a file where two records share a secretHash: neither authenticates', async () => {
    const file = path.join(dir, 'tokens.json');
    const first = makeRecord({ tier: 'default' });
    const second = makeRecord({ secretHash: first.secretHash, tier: 'pro' });
    await writeTokens(file, [makeRecord(), first, second]);
    const logger = createCapturingLogger();
    const store = new FileTokenStore({ path: file, logger });
    const error = await rejectionOf(store.findByHash(first.secretHash));
    expect(error).toBeInstanceOf(CorruptTokenRecordError);
    expect(error.message).toBe(`${file} tokens[2]: same secretHash as tokens[1]; neither is used until one is removed`);
    const verifier = new CachedTokenVerifier({ store });
    await expect(verifier.verify(first.secret)).rejects.toBeInstanceOf(TokenStoreUnavailableError);
    expect(JSON.stringify(logger.entries)).not.toContain(first.secretHash);
  });

  it('refuses a file where two records share an id', async () => {
    const file = path.join(dir, 'tokens.json');
    const first = makeRecord();
    await writeTokens(file, [first, makeRecord({ id: first.id })]);
    await expect(new FileTokenStore({ path: file }).get(first.id)).rejects.toThrow(`${file} tokens[1]: duplicate id ${first.id}, also at tokens[0]`);
  });

  it('fails, logging once with the path, when a file it has read is deleted; the verifier answers unavailable, not unknown', async () => {
    const file = path.join(dir, 'tokens.json');
    const record = makeRecord();
    await writeTokens(file, [record]);
    const logger = createCapturingLogger();
    const store = new FileTokenStore({ path: file, logger });
    const verifier = new CachedTokenVerifier({ store, ttlMs: 0 });
    expect(await verifier.verify(record.secret)).toMatchObject({ id: record.id });

    await rm(file);
    for (let i = 0; i < 3; i++) {
      const error = await rejectionOf(verifier.verify(record.secret));
      expect(error).toBeInstanceOf(TokenStoreUnavailableError);
      expect((error as TokenStoreUnavailableError).cause).toBeInstanceOf(TokenFileMissingError);
    }
    await expect(store.list()).rejects.toMatchObject({ code: 'ERR_FIRELIMIT_TOKEN_FILE_MISSING', path: file });
    expect(logger.entries).toEqual([
      {
        severity: 'ERROR',
        message: 'token file is gone; sign-ins answer 503 until it is restored',
        fields: { event: 'tokens.file_unreadable', path: file, code: 'ERR_FIRELIMIT_TOKEN_FILE_MISSING', reason: 'deleted or renamed away after it was read' },
      },
    ]);

    // Restored: served again, and the recovery is logged once.
    await writeTokens(file, [record]);
    expect(await verifier.verify(record.secret)).toMatchObject({ id: record.id });
    expect(await verifier.verify(record.secret)).toMatchObject({ id: record.id });
    expect(logger.entries.map((e) => [e.severity, e.message, e.fields.path])).toEqual([
      ['ERROR', 'token file is gone; sign-ins answer 503 until it is restored', file],
      ['INFO', 'token file is readable again', file],
    ]);
  });

  it('still reads a file that never existed (a first start) as an empty store', async () => {
    const file = path.join(dir, 'tokens.json');
    const logger = createCapturingLogger();
    const store = new FileTokenStore({ path: file, logger });
    expect(await store.findByHash(makeRecord().secretHash)).toBeUndefined();
    expect(await store.findByHash(makeRecord().secretHash)).toBeUndefined();
    expect(logger.entries).toEqual([]);
  });

  it('looks a hash up without scanning: 2,000 lookups in a 20,000-token file take well under the seconds a scan would', async () => {
    const file = path.join(dir, 'tokens.json');
    const records = Array.from({ length: 20_000 }, () => makeRecord());
    await writeTokens(file, records);
    const store = new FileTokenStore({ path: file });
    await store.list(); // parse once, outside the timing
    const sample = records.filter((_, i) => i % 10 === 0);
    const started = process.hrtime.bigint();
    for (const record of sample) expect((await store.findByHash(record.secretHash))?.id).toBe(record.id);
    const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
    // A scan compares every record: ~20,000 x 2,000 constant-time compares, a minute on this machine.
    expect(elapsedMs).toBeLessThan(5000);
    expect(await store.findByHash(makeRecord().secretHash)).toBeUndefined();
  });
});

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
      expect(JSON.parse(await readFile(`${file}.lock`, 'utf8'))).toMatchObject({ pid: reply.pid, hostname: os.hostname() });
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

  it('releasing a lock that was broken and taken by another writer leaves the other writer\'s lock alone', async () => {
    const lockPath = path.join(dir, 'tokens.json.lock');
    const release = await acquireTokenFileLock(lockPath);
    await rm(lockPath);
    const theirs = JSON.stringify({ pid: 1, hostname: 'some-other-host' });
    await writeFile(lockPath, theirs);
    await release();
    expect(await readFile(lockPath, 'utf8')).toBe(theirs);
  });

  it('refuses a stale age that is not below the lock timeout', () => {
    expect(() => new FileTokenStore({ path: path.join(dir, 'tokens.json'), lockTimeoutMs: 5000, staleLockMs: 10_000 })).toThrow(RangeError);
    expect(() => new FileTokenStore({ path: path.join(dir, 'tokens.json'), lockTimeoutMs: 5000, staleLockMs: 5000 })).toThrow(/below lockTimeoutMs/);
  });
});
