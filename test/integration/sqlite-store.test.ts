import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { SQLITE_BUSY, SQLITE_CLOSED, SQLITE_MISCONFIGURED, SqliteStoreError } from '../../src/library/backends/sqlite/sqlite-store-error';
import { SqliteWindowStore } from '../../src/library/backends/sqlite/sqlite-store';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { PolicySet } from '../../src/library/window/policy';
import { createCapturingLogger } from '../support/capturing-logger';
import type { ForkedWorker } from '../support/forked-worker';
import { NODE_SQLITE, reportSqliteSkipped, sqliteTestFile, type SqliteTestFile } from '../support/sqlite-runtime';
import { startSqliteWorker, type SqliteWorkerDecision, type SqliteWorkerReply, type SqliteWorkerRequest } from '../support/sqlite-worker';
import { BASE_MS, observed, Reference, TRIO } from '../support/store-contract';

// What the SQLite store adds to the store contract (store-contract*.test.ts runs it there): several OS
// processes on one file admit exactly the limit; a file locked past the busy timeout, closed or not a
// database fails to the outage guard's failure policy; counts survive a restart; old rows are swept.

reportSqliteSkipped('the SQLite store tests');
const describeSqlite = NODE_SQLITE === undefined ? describe.skip : describe;

const FIXED: PolicySet = [{ name: 'fw', algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }];
const BUCKET: PolicySet = [{ name: 'tb', algorithm: 'token-bucket', limit: 1, windowMs: 60_000, burst: 70 }];

describeSqlite('two OS processes on one SQLite file', () => {
  let file: SqliteTestFile;
  const workers: ForkedWorker<SqliteWorkerRequest, SqliteWorkerReply>[] = [];
  beforeAll(() => {
    file = sqliteTestFile('two-processes');
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close({ type: 'close' })));
  });
  afterAll(() => file?.remove());

  test.each([
    ['fixed window of 100', FIXED, 100],
    ['token bucket of 70 at once', BUCKET, 70],
    ['burst 3 + minute 5 + ten-second log 4, all or nothing', TRIO, 3],
  ] as const)('%s: 2 x 150 consumes racing for the write lock admit exactly the limit, every answer from the file', async (_, policies, limit) => {
    for (let i = 0; i < 2; i++) workers.push(startSqliteWorker());
    const key = `tok_${limit}_${policies.length}`;
    const nowMs = BASE_MS + 5000;
    // The limit is the pure algorithm's for 300 calls at one instant, not a number copied by hand.
    const reference = new Reference(policies);
    expect(Array.from({ length: 300 }, () => reference.consume(nowMs, 1)).filter((d) => d.allowed)).toHaveLength(limit);
    await Promise.all(workers.map((w) => w.ask({ type: 'init', path: file.path, policies, nowMs, timeoutMs: 5000 })));
    const answers = await Promise.all(workers.map((w) => w.ask({ type: 'run', key, count: 150 })));
    const decisions = answers.flatMap((a) => (a.type === 'decisions' ? a.decisions : [])) as SqliteWorkerDecision[];
    expect(decisions).toHaveLength(300);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(limit);
    // Fail-closed workers: a decision the file did not make would be a refusal with backend_unavailable.
    expect(decisions.every((d) => d.shared)).toBe(true);
    // Both processes decided all their calls (which one wins the few grants of a small limit is the race's).
    for (const answer of answers) expect(answer.type === 'decisions' ? answer.decisions.length : 0).toBe(150);
  });
});

describeSqlite('the SQLite store on its own', () => {
  let file: SqliteTestFile;
  beforeEach(() => {
    file = sqliteTestFile();
  });
  afterEach(() => file.remove());

  test('the file is in WAL mode and holds the counts across a restart of the store', async () => {
    const first = new SqliteWindowStore({ path: file.path, sweepIntervalMs: 0 });
    const reference = new Reference(FIXED);
    for (let i = 0; i < 3; i++) expect(observed(await first.consume('tok', BASE_MS, FIXED, 30), FIXED, BASE_MS)).toEqual(reference.consume(BASE_MS, 30));
    await first.close();
    expect(file.raw.prepare('PRAGMA journal_mode').get()).toEqual(expect.objectContaining({ journal_mode: 'wal' }));
    const second = new SqliteWindowStore({ path: file.path, sweepIntervalMs: 0 });
    const after = await second.consume('tok', BASE_MS + 1, FIXED, 30);
    expect(observed(after, FIXED, BASE_MS + 1)).toEqual(reference.consume(BASE_MS + 1, 30));
    expect(after.allowed).toBe(false);
    await second.close();
  });

  test('a file another connection holds locked past the busy timeout fails with SQLITE_BUSY after about that long, and stores nothing', async () => {
    const store = new SqliteWindowStore({ path: file.path, timeoutMs: 80, sweepIntervalMs: 0 });
    await store.consume('tok', BASE_MS, FIXED, 1);
    file.raw.exec('BEGIN IMMEDIATE');
    const startedAt = performance.now();
    const error = await store.consume('tok', BASE_MS, FIXED, 1).catch((e: unknown) => e);
    const waitedMs = performance.now() - startedAt;
    file.raw.exec('ROLLBACK');
    expect(error).toBeInstanceOf(SqliteStoreError);
    expect(error).toMatchObject({ code: SQLITE_BUSY, sqliteCode: 5 });
    expect((error as Error).message).toMatch(/busy timeout \(80 ms, RATE_LIMIT_TIMEOUT_MS\)/);
    expect(waitedMs).toBeGreaterThanOrEqual(70);
    expect(waitedMs).toBeLessThan(2000);
    // Only the first call landed; once the lock is gone the store answers again.
    expect((await store.consume('tok', BASE_MS, FIXED, 0)).decisions[0]?.remaining).toBe(99);
    await store.close();
  });

  test.each([
    ['fail-open', { allowed: true, shared: false }],
    ['fail-closed', { allowed: false, shared: false, reason: 'backend_unavailable' }],
  ] as const)('a locked file is an outage the limiter answers by its failure policy: %s', async (failurePolicy, expected) => {
    const limiter = await createRateLimiter({
      store: new SqliteWindowStore({ path: file.path, timeoutMs: 50, sweepIntervalMs: 0 }),
      policies: FIXED,
      timeoutMs: 1000,
      failurePolicy,
      clock: () => BASE_MS,
    });
    expect(await limiter.consume('tok')).toMatchObject({ allowed: true, shared: true });
    file.raw.exec('BEGIN IMMEDIATE');
    try {
      expect(await limiter.consume('tok')).toMatchObject(expected);
    } finally {
      file.raw.exec('ROLLBACK');
      await limiter.close();
    }
  });

  test('a file that stops taking writes fails with SQLITE_MISCONFIGURED, said once at ERROR with the fix, and again after a commit in between', async () => {
    const logger = createCapturingLogger();
    const store = new SqliteWindowStore({ path: file.path, sweepIntervalMs: 0, logger });
    // query_only makes SQLite answer every write SQLITE_READONLY, as a file remounted read-only does.
    store.connection.statement('PRAGMA query_only = ON').run();
    for (let i = 0; i < 3; i++) {
      await expect(store.consume('tok', BASE_MS, FIXED, 1)).rejects.toMatchObject({ name: 'SqliteStoreError', code: SQLITE_MISCONFIGURED, sqliteCode: 8 });
    }
    const errors = () => logger.entries.filter((e) => e.severity === 'ERROR');
    expect(errors()).toHaveLength(1);
    expect(errors()[0]).toMatchObject({ fields: { event: 'ratelimit.sqlite_misconfigured', backend: 'sqlite', sqliteCode: 8 } });
    expect(errors()[0]?.message).toMatch(/point SQLITE_PATH at a file in a directory this process can write/);
    store.connection.statement('PRAGMA query_only = OFF').run();
    expect((await store.consume('tok', BASE_MS, FIXED, 1)).allowed).toBe(true);
    store.connection.statement('PRAGMA query_only = ON').run();
    await expect(store.consume('tok', BASE_MS, FIXED, 1)).rejects.toMatchObject({ code: SQLITE_MISCONFIGURED });
    expect(errors()).toHaveLength(2);
    await store.close();
  });

  test('a closed store refuses with SQLITE_CLOSED instead of touching the file', async () => {
    const store = new SqliteWindowStore({ path: file.path, sweepIntervalMs: 0 });
    await store.close();
    await expect(store.consume('tok', BASE_MS, FIXED, 1)).rejects.toMatchObject({ code: SQLITE_CLOSED });
    await expect(store.adjust('tok', BASE_MS, FIXED, [{ deltaUnits: -1, atLeast: null }])).rejects.toMatchObject({ code: SQLITE_CLOSED });
  });

  test('a SQLITE_PATH that is not a database is refused at construction, naming the knob and the fix', () => {
    writeFileSync(file.path, 'this is not a database, it is a text file that happens to be long enough to have a header\n'.repeat(20));
    let error: unknown;
    try {
      new SqliteWindowStore({ path: file.path });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ name: 'SqliteStoreError', code: SQLITE_MISCONFIGURED, sqliteCode: 26 });
    expect((error as Error).message).toMatch(/not a firelimit SQLite database .*SQLITE_PATH/);
  });

  test('a SQLITE_PATH under a file, not a directory, is refused at construction', () => {
    writeFileSync(file.path, '');
    expect(() => new SqliteWindowStore({ path: path.join(file.path, 'limits.sqlite') })).toThrow(/SQLITE_PATH/);
  });

  test.each([
    ['timeoutMs', { timeoutMs: 0 }],
    ['lagMarginMs', { lagMarginMs: -1 }],
    ['sweepIntervalMs', { sweepIntervalMs: 1.5 }],
    ['namespace', { namespace: '' }],
  ] as const)('a bad %s is refused with its name', (name, option) => {
    expect(() => new SqliteWindowStore({ path: file.path, ...option })).toThrow(new RegExp(name));
  });

  test('the sweep removes rows only once their state expired more than the lag margin ago, and only in its namespace', async () => {
    const store = new SqliteWindowStore({ path: file.path, lagMarginMs: 10_000, sweepIntervalMs: 0 });
    const neighbour = new SqliteWindowStore({ path: file.path, namespace: 'other', sweepIntervalMs: 0 });
    const short: PolicySet = [{ name: 's', algorithm: 'fixed-window', limit: 5, windowMs: 1000 }];
    const window = BASE_MS; // a whole second: the window [BASE_MS, BASE_MS + 1000)
    await store.consume('old', window, short, 1);
    await neighbour.consume('old', window, short, 1);
    await store.consume('live', window + 5000, short, 1);
    const rows = (namespace: string) => file.raw.prepare('SELECT key FROM firelimit_limits WHERE namespace = ? ORDER BY key').all(namespace).map((r) => r.key);
    // Expired at +1 s; kept until +11 s for a clock that steps back.
    expect(store.sweep(window + 11_000)).toBe(0);
    expect(rows('limits')).toEqual(['live', 'old']);
    expect(store.sweep(window + 11_001)).toBe(1);
    expect(rows('limits')).toEqual(['live']);
    expect(rows('other')).toEqual(['old']);
    await Promise.all([store.close(), neighbour.close()]);
  });

  test('a refusal and a call that leaves every state empty write no row', async () => {
    const store = new SqliteWindowStore({ path: file.path, sweepIntervalMs: 0 });
    await store.consume('zero', BASE_MS, FIXED, 0);
    await store.consume('huge', BASE_MS, FIXED, 101);
    expect(file.raw.prepare('SELECT count(*) AS n FROM firelimit_limits').get()).toEqual(expect.objectContaining({ n: 0 }));
    await store.close();
  });
});
