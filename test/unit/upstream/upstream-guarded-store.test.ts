import type { BackendGuard, GuardedResult } from '../../../src/limiter/backend-guard';
import { GuardedUpstreamQuota } from '../../../src/limiter/stores/upstream-guarded-store';
import { MemoryUpstreamQuotaStore } from '../../../src/limiter/stores/upstream-memory-store';
import { resolveUpstreamPolicy } from '../../../src/limiter/upstream/upstream-policy';
import type { UpstreamQuotaStore } from '../../../src/limiter/upstream/upstream-quota-store';

const T0 = Date.UTC(2026, 11, 1, 12);
const policy = resolveUpstreamPolicy({ limit: 1, windowMs: 60_000, headroom: 1, maxWaitMs: 120_000, graceMs: 0 });
const caller = { tokenId: 'tok_a', tool: 'echo' };

const passes: BackendGuard = { run: async <T>(call: () => Promise<T>): Promise<GuardedResult<T>> => ({ ok: true, value: await call() }) };
const down = (retryAfterMs?: number): BackendGuard => ({ run: async <T>(): Promise<GuardedResult<T>> => ({ ok: false, cause: 'timeout', ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }) });

function sharedStore(): UpstreamQuotaStore & { calls: number } {
  const memory = new MemoryUpstreamQuotaStore();
  const store = { backend: 'rtdb' as const, calls: 0, schedule: (...args: Parameters<UpstreamQuotaStore['schedule']>) => ((store.calls += 1), memory.schedule(...args)), close: async () => undefined };
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

  it('close closes the shared store', async () => {
    const store = sharedStore();
    const close = jest.spyOn(store, 'close');
    await new GuardedUpstreamQuota({ store, guard: passes, failurePolicy: 'fail-open' }).close();
    expect(close).toHaveBeenCalledTimes(1);
  });
});
