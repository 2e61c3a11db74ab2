import type { BackendGuard, GuardedResult } from '../../../src/library/limiter/backend-guard';
import { GuardedUpstreamQuota } from '../../../src/library/quota/upstream-guarded-store';
import { MemoryUpstreamQuotaStore } from '../../../src/library/memory/upstream-memory-store';
import { resolveUpstreamPolicy } from '../../../src/library/schedule/upstream-policy';
import type { UpstreamQuotaStore } from '../../../src/library/schedule/upstream-quota-store';
import { WaitBudget } from '../../../src/library/limiter/wait-budget';

const T0 = Date.UTC(2026, 11, 1, 12);
const policy = resolveUpstreamPolicy({ limit: 1, windowMs: 60_000, headroom: 1, maxWaitMs: 120_000, graceMs: 0 });
const caller = { tokenId: 'tok_a', tool: 'echo' };

const passes: BackendGuard = { run: async <T>(call: () => Promise<T>): Promise<GuardedResult<T>> => ({ ok: true, value: await call() }) };
const down = (retryAfterMs?: number): BackendGuard => ({ run: async <T>(): Promise<GuardedResult<T>> => ({ ok: false, cause: 'timeout', ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }) });

function sharedStore(): UpstreamQuotaStore & { calls: number } {
  const memory = new MemoryUpstreamQuotaStore();
  const store = { backend: 'rtdb' as const, calls: 0, schedule: (...[key, nowMs, caller, policy, restore]: Parameters<UpstreamQuotaStore['schedule']>) => ((store.calls += 1), memory.schedule(key, nowMs, caller, policy, restore)), close: async () => undefined };
  return store;
}

describe('GuardedUpstreamQuota: the shared quota when its backend is down', () => {
  it('answers what the shared store answers while the guard lets the call through', async () => {
    const store = sharedStore();
    const unshared = jest.fn();
    const guarded = new GuardedUpstreamQuota({ store, guard: passes, failurePolicy: 'fail-open', onUnshared: unshared });
    expect((await guarded.schedule('upstream', T0, caller, policy)).outcome).toEqual({ status: 'run', claimed: false });
    expect(unshared).not.toHaveBeenCalled();
    expect((await guarded.schedule('upstream', T0, { tokenId: 'tok_b', tool: 'echo' }, policy)).outcome).toMatchObject({ status: 'reserved', slotAtMs: T0 + 60_000 });
    expect(store.calls).toBe(2);
    expect(guarded.backend).toBe('rtdb');
  });

  it("hands the guard the request's wait budget, so the quota's store call waits only what the request has left (ADR 0047)", async () => {
    const given: (WaitBudget | undefined)[] = [];
    const recording: BackendGuard = { run: async <T>(call: () => Promise<T>, budget?: WaitBudget): Promise<GuardedResult<T>> => (given.push(budget), { ok: true, value: await call() }) };
    const guarded = new GuardedUpstreamQuota({ store: sharedStore(), guard: recording, failurePolicy: 'fail-open' });
    const budget = new WaitBudget(500, () => 0);
    await guarded.schedule('upstream', T0, caller, policy, undefined, budget);
    await guarded.schedule('upstream', T0, caller, policy);
    expect(given).toEqual([budget, undefined]);
  });

  it('fail-open: schedules on this instance alone, one cursor per key, and reports each decision as unshared', async () => {
    const causes: string[] = [];
    const guarded = new GuardedUpstreamQuota({ store: sharedStore(), guard: down(), failurePolicy: 'fail-open', onUnshared: (cause) => causes.push(cause) });
    expect((await guarded.schedule('upstream', T0, caller, policy)).outcome).toEqual({ status: 'run', claimed: false });
    // The local cursor still spaces calls: the next one waits its interval.
    expect((await guarded.schedule('upstream', T0, { tokenId: 'tok_b', tool: 'echo' }, policy)).outcome).toMatchObject({ status: 'reserved', slotAtMs: T0 + 60_000 });
    expect((await guarded.schedule('tool:search', T0, caller, policy)).outcome).toEqual({ status: 'run', claimed: false });
    expect(causes).toEqual(['timeout', 'timeout', 'timeout']);
  });

  it.each([
    [undefined, 1000],
    [300, 1000],
    [5000, 5000],
  ])('fail-closed: rejected as unavailable, retry after the guard\'s %s ms, never sooner than 1 s', async (retryAfterMs, expected) => {
    const guarded = new GuardedUpstreamQuota({ store: sharedStore(), guard: down(retryAfterMs), failurePolicy: 'fail-closed' });
    expect(await guarded.schedule('upstream', T0, caller, policy)).toEqual({ outcome: { status: 'rejected', reason: 'unavailable', retryAfterMs: expected }, state: null });
  });

  it('hands the shared store, as `restore`, the last state it answered for that key, and nothing for a key not seen yet', async () => {
    const store = sharedStore();
    const restores: unknown[] = [];
    const spy = { ...store, schedule: (...args: Parameters<UpstreamQuotaStore['schedule']>) => (restores.push(args[4]), store.schedule(...args)) };
    const guarded = new GuardedUpstreamQuota({ store: spy, guard: passes, failurePolicy: 'fail-open' });
    const first = await guarded.schedule('upstream', T0, caller, policy);
    await guarded.schedule('upstream', T0 + 1, caller, policy);
    await guarded.schedule('tool:search', T0, caller, policy);
    expect(restores).toEqual([null, first.state, null]);
  });

  it('a shared store that lost the key (restarted empty) goes on from this instance\'s view: the next call waits, it is not run inside the interval', async () => {
    const memory = new MemoryUpstreamQuotaStore();
    const guarded = new GuardedUpstreamQuota({ store: memory, guard: passes, failurePolicy: 'fail-open' });
    await guarded.schedule('upstream', T0, caller, policy);
    const reserved = await guarded.schedule('upstream', T0, { tokenId: 'tok_b', tool: 'echo' }, policy);
    memory.forget('upstream');
    expect((await guarded.schedule('upstream', T0 + 1, { tokenId: 'tok_c', tool: 'echo' }, policy)).outcome).toMatchObject({ status: 'reserved', slotAtMs: T0 + 120_000 });
    // tok_b's reservation was in that view too: it keeps its slot and runs on it.
    expect((await guarded.schedule('upstream', T0 + 60_000, { tokenId: 'tok_b', tool: 'echo' }, policy)).outcome).toEqual({ status: 'run', claimed: true, slotAtMs: T0 + 60_000 });
    expect(reserved.outcome).toMatchObject({ slotAtMs: T0 + 60_000 });
  });

  it('fail-open: an outage\'s local cursor starts from the last shared state, and a later outage from the shared state of then, not from the earlier outage\'s cursor', async () => {
    let healthy = true;
    const guard: BackendGuard = { run: async (call) => (healthy ? passes.run(call) : down().run(call)) };
    const guarded = new GuardedUpstreamQuota({ store: sharedStore(), guard, failurePolicy: 'fail-open' });
    expect((await guarded.schedule('upstream', T0, caller, policy)).outcome).toEqual({ status: 'run', claimed: false });
    healthy = false;
    // Without the shared view the local cursor was empty: this ran, one second after the shared run.
    expect((await guarded.schedule('upstream', T0 + 1000, { tokenId: 'tok_b', tool: 'echo' }, policy)).outcome).toMatchObject({ status: 'reserved', slotAtMs: T0 + 60_000 });
    healthy = true;
    expect((await guarded.schedule('upstream', T0 + 200_000, caller, policy)).outcome).toEqual({ status: 'run', claimed: false });
    healthy = false;
    // The first outage's local state (cursor long passed) would have let this run.
    expect((await guarded.schedule('upstream', T0 + 201_000, { tokenId: 'tok_c', tool: 'echo' }, policy)).outcome).toMatchObject({ status: 'reserved', slotAtMs: T0 + 260_000 });
  });

  it('close closes the shared store', async () => {
    const store = sharedStore();
    const close = jest.spyOn(store, 'close');
    await new GuardedUpstreamQuota({ store, guard: passes, failurePolicy: 'fail-open' }).close();
    expect(close).toHaveBeenCalledTimes(1);
  });
});

describe('GuardedUpstreamQuota with a fleet estimate: a fail-open outage schedules on this instance\'s share (ADR 0067)', () => {
  const perSecond = resolveUpstreamPolicy({ limit: 10, windowMs: 1000, headroom: 1, maxWaitMs: 0, graceMs: 0 });

  it.each([
    [1, 10],
    [2, 5],
    [5, 2],
    [10, 1],
  ])('%i live instances: this one runs %i calls in the second the store is down, not 10', async (instances, expected) => {
    const guarded = new GuardedUpstreamQuota({ store: sharedStore(), guard: down(), failurePolicy: 'fail-open', fleet: { current: () => instances } });
    let run = 0;
    for (let t = 0; t < 1000; t += 10) {
      const { outcome } = await guarded.schedule('upstream', T0 + t, { tokenId: `tok_${t}`, tool: 'echo' }, perSecond);
      if (outcome.status === 'run') run++;
    }
    expect(run).toBe(expected);
  });

  it('the shared store, while up, is asked with the policy as configured, whatever the fleet', async () => {
    const store = sharedStore();
    const policies: unknown[] = [];
    const spy = { ...store, schedule: (...args: Parameters<UpstreamQuotaStore['schedule']>) => (policies.push(args[3]), store.schedule(...args)) };
    const guarded = new GuardedUpstreamQuota({ store: spy, guard: passes, failurePolicy: 'fail-open', fleet: { current: () => 4 } });
    await guarded.schedule('upstream', T0, caller, perSecond);
    expect(policies).toEqual([perSecond]);
  });
});
