import { UpstreamQuotaGate, UPSTREAM_QUOTA_KEY, type GateAnswer } from '../../../src/gateway/upstream-quota-gate';
import { MemoryUpstreamQuotaStore } from '../../../src/limiter/stores/upstream-memory-store';
import { resolveUpstreamPolicy } from '../../../src/limiter/upstream/upstream-policy';

const T0 = Date.UTC(2026, 11, 1, 12);
// 2/s at full headroom: one slot every 500 ms.
const policy = resolveUpstreamPolicy({ limit: 2, windowMs: 1000, headroom: 1, maxWaitMs: 2000, graceMs: 0 });

function gateAt(holdMs: number) {
  const time = { nowMs: T0 };
  const slept: number[] = [];
  const answers: GateAnswer[] = [];
  const store = new MemoryUpstreamQuotaStore();
  const gate = new UpstreamQuotaGate({
    store,
    policy,
    holdMs,
    clock: () => time.nowMs,
    sleep: async (ms) => {
      slept.push(ms);
      time.nowMs += ms;
    },
    events: { onDecision: (answer) => answers.push(answer) },
  });
  return { gate, time, slept, answers, store };
}

describe('UpstreamQuotaGate: run, hold for a near slot, else answer the slot', () => {
  it.each([
    // holdMs, second caller's answer, sleeps
    [0, { status: 'reserved', slotAtMs: T0 + 500, retryAfterMs: 500 }, []],
    [499, { status: 'reserved', slotAtMs: T0 + 500, retryAfterMs: 500 }, []],
    [500, { status: 'run', heldMs: 500 }, [500]],
    [2000, { status: 'run', heldMs: 500 }, [500]],
  ] as const)('UPSTREAM_HOLD_MS=%s: a second caller in the same ms gets %j', async (holdMs, expected, sleeps) => {
    const { gate, slept } = gateAt(holdMs);
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo' })).toEqual({ status: 'run', heldMs: 0 });
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'echo' })).toEqual(expected);
    expect(slept).toEqual(sleeps);
  });

  it('a held caller claims its own reservation: the next caller queues after it, not beside it', async () => {
    const { gate } = gateAt(500);
    await gate.admit({ tokenId: 'tok_a', tool: 'echo' });
    await gate.admit({ tokenId: 'tok_b', tool: 'echo' });
    // tok_b ran at T0+500 by claiming; the cursor is past it, so tok_c is held to T0+1000.
    expect(await gate.admit({ tokenId: 'tok_c', tool: 'echo' })).toEqual({ status: 'run', heldMs: 500 });
  });

  it('rejects past the maximum wait, with the time to try again, and writes nothing', async () => {
    const { gate, store } = gateAt(0);
    const answers: GateAnswer[] = [];
    for (const token of ['a', 'b', 'c', 'd', 'e', 'f']) answers.push(await gate.admit({ tokenId: `tok_${token}`, tool: 'echo' }));
    expect(answers.map((a) => a.status)).toEqual(['run', 'reserved', 'reserved', 'reserved', 'reserved', 'rejected']);
    expect(answers[5]).toMatchObject({ status: 'rejected', reason: 'max_wait' });
    const before = await store.schedule(UPSTREAM_QUOTA_KEY, T0, { tokenId: 'tok_e', tool: 'echo' }, policy);
    expect(before.outcome.status).toBe('reserved');
  });

  it('reports every answer to its events', async () => {
    const { gate, answers } = gateAt(500);
    await gate.admit({ tokenId: 'tok_a', tool: 'echo' });
    await gate.admit({ tokenId: 'tok_b', tool: 'echo' });
    expect(answers).toEqual([{ status: 'run', heldMs: 0 }, { status: 'run', heldMs: 500 }]);
  });
});
