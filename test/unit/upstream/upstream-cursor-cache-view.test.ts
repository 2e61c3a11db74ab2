import type { BackendName } from '../../../src/library/limiter/limit-store';
import { MemoryUpstreamQuotaStore } from '../../../src/library/memory/upstream-memory-store';
import { CachedUpstreamQuota } from '../../../src/library/quota/upstream-cursor-cache';
import type { UpstreamCaller } from '../../../src/library/schedule/upstream-holder';
import type { UpstreamPolicy } from '../../../src/library/schedule/upstream-policy';
import type { UpstreamQuotaStore, UpstreamScheduled } from '../../../src/library/schedule/upstream-quota-store';

// The cursor cache over a store that answers views cut short, as the Redis
// store does past UPSTREAM_VIEW_LIMIT reservations (ADR 0063). Time is injected.

const T0 = 1_700_000_000_000;
/** One a second, 100 ms of grace, 10 s of wait: after a run, nine slots T0+1000, T0+2100, … T0+9800, then max_wait. */
const POLICY: UpstreamPolicy = { limit: 1, windowMs: 1000, headroomBp: 10_000, maxWaitMs: 10_000, dailyBudget: 0, graceMs: 100, maxReservations: 20, maxReservationsPerHolder: 20 };
const caller = (i: number, claimSlotAtMs?: number): UpstreamCaller => ({ tokenId: `tok_${String(i).padStart(16, '0')}`, ...(claimSlotAtMs === undefined ? {} : { claimSlotAtMs }) });

/** The memory store, answering with the first `listed` reservations and a count of the rest. */
class ViewingStore implements UpstreamQuotaStore {
  readonly backend: BackendName = 'redis';
  readonly memory = new MemoryUpstreamQuotaStore();
  calls = 0;
  constructor(private readonly listed: number) {}
  async schedule(key: string, nowMs: number, who: UpstreamCaller, policy: UpstreamPolicy): Promise<UpstreamScheduled> {
    this.calls++;
    const { outcome, state } = this.memory.scheduleSync(key, nowMs, who, policy);
    if (state === null || state.reservations.length <= this.listed) return { outcome, state };
    return { outcome, state: { ...state, reservations: state.reservations.slice(0, this.listed), omitted: state.reservations.length - this.listed } };
  }
  async close(): Promise<void> {}
}

async function queueOfNine(): Promise<{ store: ViewingStore; cache: CachedUpstreamQuota }> {
  const store = new ViewingStore(2);
  for (let i = 0; i < 10; i++) await store.memory.schedule('q', T0, caller(i), POLICY);
  const cache = new CachedUpstreamQuota({ store, maxStalenessMs: 1000 });
  expect((await cache.schedule('q', T0 + 10, caller(100), POLICY)).outcome).toEqual({ status: 'rejected', reason: 'max_wait', retryAfterMs: 890 });
  return { store, cache };
}

describe('CachedUpstreamQuota on views cut short', () => {
  test('a rejection the view decides in full is answered locally, with the view', async () => {
    const { store, cache } = await queueOfNine();
    const answer = await cache.schedule('q', T0 + 20, caller(101), POLICY);
    expect(answer.outcome).toEqual({ status: 'rejected', reason: 'max_wait', retryAfterMs: 880 });
    expect(answer.state?.omitted).toBe(7);
    expect({ storeCalls: store.calls, stats: cache.stats }).toEqual({ storeCalls: 1, stats: { answeredLocally: 1, forwarded: 1 } });
  });

  test('a holder echoing a slot the view leaves out goes to the store and is told that slot, not rejected', async () => {
    const { store, cache } = await queueOfNine();
    // Caller 5 holds the fifth slot, T0 + 1000 + 4 × 1100; the view lists only the first two.
    const answer = await cache.schedule('q', T0 + 30, caller(5, T0 + 5400), POLICY);
    expect(answer.outcome).toEqual({ status: 'reserved', slotAtMs: T0 + 5400, retryAfterMs: 5370 });
    expect({ storeCalls: store.calls, stats: cache.stats }).toEqual({ storeCalls: 2, stats: { answeredLocally: 0, forwarded: 2 } });
  });
});
