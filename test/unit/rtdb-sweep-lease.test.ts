import fc from 'fast-check';
import { leaseVerdict, sweepLeasePath } from '../../src/library/backends/rtdb/rtdb-sweep-lease';
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
