import fc from 'fast-check';
import { leaseVerdict, SweepLease, sweepLeasePath } from '../../src/library/backends/rtdb/rtdb-sweep-lease';
import { FakeLeaseDatabase } from '../support/fake-lease-database';
import { fcNumRuns } from '../support/fc-num-runs';

const ME = 'me';
const NOW = 1_000_000;
const LEASE_MS = 180_000;
const mine = { take: true, next: { holder: ME, expiresAtMs: NOW + LEASE_MS } };

describe('leaseVerdict: whether this sweeper may run now', () => {
  test.each<[string, unknown, boolean]>([
    ['no lease yet', null, true],
    ['no lease (undefined)', undefined, true],
    ['held by another, live', { holder: 'other', expiresAtMs: NOW + 1 }, false],
    ['held by another, expiring exactly now', { holder: 'other', expiresAtMs: NOW }, true],
    ['held by another, expired', { holder: 'other', expiresAtMs: NOW - 1 }, true],
    ['ours, live: renewed', { holder: ME, expiresAtMs: NOW + 5 }, true],
    ['ours, expired: renewed', { holder: ME, expiresAtMs: NOW - 5 }, true],
    ['malformed: no holder', { expiresAtMs: NOW + 1000 }, true],
    ['malformed: expiry not a number', { holder: 'other', expiresAtMs: String(NOW + 1000) }, true],
    ['malformed: a bare string', 'junk', true],
  ])('%s', (_name, current, take) => {
    expect(leaseVerdict(current, NOW, ME, LEASE_MS)).toEqual(take ? mine : { take: false });
  });

  test('property: mutual exclusion: once a sweeper takes the lease, no other takes it until LEASE_MS after that sweeper last took it', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ who: fc.constantFrom('a', 'b', 'c'), stepMs: fc.integer({ min: 0, max: LEASE_MS }) }), { maxLength: 40 }), (steps) => {
        let lease: unknown = null;
        let last: { holder: string; atMs: number } | undefined;
        let nowMs = 0;
        for (const { who, stepMs } of steps) {
          nowMs += stepMs;
          const verdict = leaseVerdict(lease, nowMs, who, LEASE_MS);
          if (!verdict.take) {
            // Refused only while another's lease is live.
            expect(last !== undefined && last.holder !== who && nowMs < last.atMs + LEASE_MS).toBe(true);
            continue;
          }
          if (last !== undefined && last.holder !== who) expect(nowMs).toBeGreaterThanOrEqual(last.atMs + LEASE_MS);
          lease = verdict.next;
          last = { holder: who, atMs: nowMs };
        }
      }),
      { numRuns: fcNumRuns(300) },
    );
  });
});

describe('sweepLeasePath', () => {
  test.each([
    ['rateLimits', 'sweeperLeases/rateLimits'],
    ['bench/limiter/x', 'sweeperLeases/bench|limiter|x'],
  ])('%s leases at %s', (root, path) => {
    expect(sweepLeasePath(root)).toBe(path);
  });
});

const ROOT = 'rateLimits';
const PATH = sweepLeasePath(ROOT);
const NOW_MS = 1_800_000_000_000;

function leaseOn(db: FakeLeaseDatabase, options: { holder?: string; rootPath?: string; clock?: () => number } = {}): SweepLease {
  return new SweepLease({ database: db.database, rootPath: options.rootPath ?? ROOT, leaseMs: LEASE_MS, clock: options.clock ?? (() => NOW_MS), holder: options.holder ?? 'me' });
}

describe('SweepLease.tryTake: one sweeper per root at a time', () => {
  test.each<[string, unknown, boolean, unknown]>([
    ['takes a free lease until now + leaseMs', undefined, true, { holder: 'me', expiresAtMs: NOW_MS + LEASE_MS }],
    ['leaves a live lease of another holder as it is', { holder: 'other', expiresAtMs: NOW_MS + 1 }, false, { holder: 'other', expiresAtMs: NOW_MS + 1 }],
    ['takes over a lease of another holder that expires now', { holder: 'other', expiresAtMs: NOW_MS }, true, { holder: 'me', expiresAtMs: NOW_MS + LEASE_MS }],
    ['renews its own live lease', { holder: 'me', expiresAtMs: NOW_MS + 5 }, true, { holder: 'me', expiresAtMs: NOW_MS + LEASE_MS }],
    ['replaces a malformed lease', 'junk', true, { holder: 'me', expiresAtMs: NOW_MS + LEASE_MS }],
  ])('%s', async (_name, stored, took, after) => {
    const db = new FakeLeaseDatabase();
    if (stored !== undefined) db.values.set(PATH, stored);
    expect(await leaseOn(db).tryTake()).toBe(took);
    expect(db.values.get(PATH)).toEqual(after);
  });

  test('goes by the last run of its update: a free cached view, then the server value held by another, is not taken', async () => {
    const db = new FakeLeaseDatabase();
    db.values.set(PATH, { holder: 'other', expiresAtMs: NOW_MS + 1 });
    db.staleViews.set(PATH, null);
    expect(await leaseOn(db).tryTake()).toBe(false);
    expect(db.values.get(PATH)).toEqual({ holder: 'other', expiresAtMs: NOW_MS + 1 });
  });

  test('goes by the last run of its update: a cached view held by another, then the server value free, is taken', async () => {
    const db = new FakeLeaseDatabase();
    db.staleViews.set(PATH, { holder: 'other', expiresAtMs: NOW_MS + 1 });
    expect(await leaseOn(db).tryTake()).toBe(true);
    expect(db.values.get(PATH)).toEqual({ holder: 'me', expiresAtMs: NOW_MS + LEASE_MS });
  });

  test('of two sweepers on one root, the second is refused until the first one\'s lease lapses on its own clock', async () => {
    const db = new FakeLeaseDatabase();
    let nowMs = NOW_MS;
    const [a, b] = [leaseOn(db, { holder: 'a', clock: () => nowMs }), leaseOn(db, { holder: 'b', clock: () => nowMs })];
    expect(await a.tryTake()).toBe(true);
    nowMs = NOW_MS + LEASE_MS - 1;
    expect(await b.tryTake()).toBe(false);
    nowMs = NOW_MS + LEASE_MS;
    expect(await b.tryTake()).toBe(true);
    expect(await a.tryTake()).toBe(false);
  });

  test('runs its transaction on the root\'s own leaf, without applying it locally first', async () => {
    const db = new FakeLeaseDatabase();
    await leaseOn(db, { rootPath: 'bench/limiter/x' }).tryTake();
    expect(db.calls).toEqual([{ path: 'sweeperLeases/bench|limiter|x', applyLocally: false }]);
  });

  test('rejects when the database does', async () => {
    const db = new FakeLeaseDatabase();
    db.failWith = new Error('permission denied');
    await expect(leaseOn(db).tryTake()).rejects.toThrow('permission denied');
  });
});

describe('SweepLease: construction', () => {
  test.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses a leaseMs of %p, naming the knob', (leaseMs) => {
    const db = new FakeLeaseDatabase();
    expect(() => new SweepLease({ database: db.database, rootPath: ROOT, leaseMs, clock: () => NOW_MS })).toThrow(new RangeError(`leaseMs must be a positive number, got ${leaseMs}`));
  });

  test('accepts a leaseMs below one ms (any positive number)', () => {
    const db = new FakeLeaseDatabase();
    expect(() => new SweepLease({ database: db.database, rootPath: ROOT, leaseMs: 0.5, clock: () => NOW_MS })).not.toThrow();
  });

  test('keeps the holder it is given', () => {
    expect(leaseOn(new FakeLeaseDatabase(), { holder: 'instance-7' }).holder).toBe('instance-7');
  });

  test('without a holder, each lease gets its own random id, so two instances never renew each other\'s lease', async () => {
    const db = new FakeLeaseDatabase();
    const make = () => new SweepLease({ database: db.database, rootPath: ROOT, leaseMs: LEASE_MS, clock: () => NOW_MS });
    const [a, b] = [make(), make()];
    expect(a.holder).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.holder).not.toBe(b.holder);
    expect(await a.tryTake()).toBe(true);
    expect(await b.tryTake()).toBe(false);
  });
});
