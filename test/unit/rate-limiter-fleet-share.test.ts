import { DeadlineGuard } from '../support/deadline-guard';
import type { Adjustment } from '../../src/library/window/algorithm';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import type { FleetEstimate } from '../../src/library/limiter/fleet-estimate';
import type { LimitStore, StoreDecision } from '../../src/library/limiter/limit-store';
import { WindowRateLimiter } from '../../src/library/limiter/rate-limiter';
import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import { silentLogger } from '../../src/shared/logger';

/**
 * The outage fallback's share of the fleet (ADR 0067): with a fleet estimate
 * of n, a local call is charged n units per unit of cost (outage-share.ts),
 * the ledger owes the shared store the real cost, and the decision counts
 * the caller's calls.
 */

const W = 60_000;
const policy: RateLimitPolicy = { name: 'default', limit: 100, windowMs: W };

/** Shared-looking: decides with MemoryWindowStore's logic while up; rejects everything while down. */
class SwitchableStore implements LimitStore {
  readonly backend = 'redis' as const;
  readonly shared: boolean;
  up = true;
  closed: string[] = [];
  private readonly counters = new MemoryWindowStore();

  constructor(shared = true) {
    this.shared = shared;
  }

  consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    return this.up ? this.counters.consume(key, nowMs, policies, cost) : Promise.reject(new Error('down'));
  }

  adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    return this.up ? this.counters.adjust(key, nowMs, policies, adjustments) : Promise.reject(new Error('down'));
  }

  async close(): Promise<void> {
    this.closed.push('store');
  }
}

function setup(options: { instances?: number; policies?: PolicySet; shared?: boolean; ownsFleet?: boolean } = {}) {
  const store = new SwitchableStore(options.shared ?? true);
  const clock = { nowMs: 100 * W + 1_000 };
  const fleetState = { instances: options.instances ?? 4 };
  const fleet = { current: () => fleetState.instances, close: async () => void store.closed.push('fleet') } as unknown as FleetEstimate;
  const limiter = new WindowRateLimiter({
    store,
    guard: new DeadlineGuard({ backend: store.backend, timeoutMs: 1_000, logger: silentLogger }),
    policies: options.policies ?? [policy],
    failurePolicy: 'fail-open',
    clock: () => clock.nowMs,
    logger: silentLogger,
    ...(options.instances === 0 ? {} : { fleet, ownsFleet: options.ownsFleet ?? false }),
  });
  return { store, clock, limiter, fleetState };
}

async function admitted(limiter: WindowRateLimiter, calls: number, cost = 1): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < calls; i++) if ((await limiter.consume('tok_a', { cost })).allowed) allowed++;
  return allowed;
}

describe('the outage fallback shares what a key has left among the fleet', () => {
  it.each([
    // instances, cost, calls admitted locally from the 80 units left
    [1, 1, 80],
    [2, 1, 40],
    [4, 1, 20],
    [3, 1, 26],
    [4, 2, 10],
    [4, 5, 4],
    [40, 1, 2],
    // More instances than units left: the first call still gets what is left (the bound is max(remaining, n × cost)).
    [81, 1, 1],
    [200, 1, 1],
    [30, 5, 1],
  ])('%i instances, cost %i: admits %i of the 80 units left', async (instances, cost, expected) => {
    const { limiter, store } = setup({ instances });
    await limiter.consume('tok_a', { cost: 20 });
    store.up = false;
    expect(await admitted(limiter, 100, cost)).toBe(expected);
  });

  it('a fleet larger than a small limit: each instance still gets one call a window, not none', async () => {
    const { limiter, store } = setup({ instances: 50, policies: [{ name: 'small', limit: 5, windowMs: W }] });
    store.up = false;
    expect(await admitted(limiter, 10)).toBe(1);
  });

  it('owes the shared store the real cost, not the charged units', async () => {
    const { limiter, store } = setup({ instances: 4 });
    await limiter.consume('tok_a');
    store.up = false;
    expect(await admitted(limiter, 30)).toBe(24);
    expect(limiter.unreconciledUnits).toBe(24);
    store.up = true;
    await limiter.reconcile();
    store.up = true;
    expect(await limiter.consume('tok_a', { cost: 0 })).toMatchObject({ shared: true, remaining: 100 - 1 - 24 });
  });

  it("counts remaining in the caller's calls, the top figure and every policy's", async () => {
    const hour: RateLimitPolicy = { name: 'hour', limit: 1000, windowMs: 60 * W };
    const { limiter, store } = setup({ instances: 4, policies: [policy, hour] });
    await limiter.consume('tok_a', { policies: [policy, hour] });
    store.up = false;
    const decision = await limiter.consume('tok_a', { policies: [policy, hour] });
    expect(decision).toMatchObject({ allowed: true, shared: false, reason: 'local_fallback', remaining: Math.floor((99 - 4) / 4) });
    expect(decision.policies.map((d) => d.remaining)).toEqual([Math.floor((99 - 4) / 4), Math.floor((999 - 4) / 4)]);
  });

  it('a refund of a local grant gives back what it was charged, so a reserve-then-refund costs nothing', async () => {
    const { limiter, store } = setup({ instances: 4 });
    store.up = false;
    for (let i = 0; i < 60; i++) {
      const spent = await limiter.consume('tok_a');
      expect(spent.allowed).toBe(true);
      await limiter.refund('tok_a', spent);
    }
    expect(await admitted(limiter, 30)).toBe(25);
  });

  it('a cost-0 read is charged nothing', async () => {
    const { limiter, store } = setup({ instances: 4 });
    store.up = false;
    for (let i = 0; i < 5; i++) expect(await limiter.consume('tok_a', { cost: 0 })).toMatchObject({ allowed: true, remaining: 25 });
  });

  it('the estimate is asked on each fallback call: a fleet that grew shrinks the share from then on', async () => {
    const { limiter, store, fleetState } = setup({ instances: 1 });
    store.up = false;
    expect(await admitted(limiter, 10)).toBe(10);
    fleetState.instances = 10;
    expect(await admitted(limiter, 100)).toBe(9);
  });

  it('ignores a fleet on a store that is not shared: nothing there fails over', async () => {
    const { limiter } = setup({ instances: 4, shared: false });
    expect(limiter.fleet).toBeUndefined();
  });

  it.each([
    [true, ['fleet', 'store']],
    [false, ['store']],
  ])('close with ownsFleet %p closes the fleet first, while the store can still take its leave', async (ownsFleet, order) => {
    const { limiter, store } = setup({ instances: 4, ownsFleet });
    await limiter.close();
    expect(store.closed).toEqual(order);
  });
});
