import fc from 'fast-check';
import { abortableSleep, SHARED_QUOTA_NAME, toolQuotaKey, UpstreamQuotaGate, UPSTREAM_QUOTA_KEY, type GateAnswer, type UpstreamQuota } from '../../../src/gateway/upstream-quota-gate';
import { MemoryUpstreamQuotaStore } from '../../../src/library/memory/upstream-memory-store';
import { resolveUpstreamPolicy, type UpstreamPolicy } from '../../../src/library/schedule/upstream-policy';
import type { UpstreamCaller } from '../../../src/library/schedule/upstream-holder';
import { formatReservationId } from '../../../src/gateway/reservation-id';

/** A reserved answer as the gate gives it: with the id of its key and slot to echo. */
function reservedOn(key: string, answer: { status: 'reserved'; quota: string; slotAtMs: number; retryAfterMs: number }) {
  return { ...answer, reservation: formatReservationId({ key, slotAtMs: answer.slotAtMs }) };
}

const T0 = Date.UTC(2026, 11, 1, 12);
// 2/s at full headroom: one slot every 500 ms.
const policy = resolveUpstreamPolicy({ limit: 2, windowMs: 1000, headroom: 1, maxWaitMs: 2000, graceMs: 0 });

interface GateSetup {
  readonly shared?: UpstreamPolicy;
  readonly tools?: ReadonlyMap<string, UpstreamPolicy>;
  readonly holdMs: number;
  /** Runs during each sleep, after the clock moved: a caller leaving, say. */
  readonly duringSleep?: () => void;
}

function gateWith(setup: GateSetup) {
  const time = { nowMs: T0 };
  const slept: number[] = [];
  const answers: GateAnswer[] = [];
  const states: string[] = [];
  const asked: string[] = [];
  const memory = new MemoryUpstreamQuotaStore();
  const store = {
    schedule: (key: string, nowMs: number, caller: UpstreamCaller, p: UpstreamPolicy) => {
      asked.push(key);
      return memory.schedule(key, nowMs, caller, p);
    },
  };
  const gate = new UpstreamQuotaGate({
    store,
    ...(setup.shared === undefined ? {} : { shared: setup.shared }),
    ...(setup.tools === undefined ? {} : { tools: setup.tools }),
    holdMs: setup.holdMs,
    clock: () => time.nowMs,
    sleep: async (ms) => {
      slept.push(ms);
      time.nowMs += ms;
      setup.duringSleep?.();
    },
    events: {
      onDecision: (answer) => answers.push(answer),
      onState: (quota: UpstreamQuota, state) => states.push(`${quota.name}:${state?.count ?? 'empty'}`),
    },
  });
  return { gate, time, slept, answers, states, asked, store: memory };
}

function gateAt(holdMs: number) {
  return gateWith({ shared: policy, holdMs });
}

describe('UpstreamQuotaGate: run, hold for a near slot, else answer the slot', () => {
  it.each([
    // holdMs, second caller's answer, sleeps
    [0, { status: 'reserved', quota: SHARED_QUOTA_NAME, slotAtMs: T0 + 500, retryAfterMs: 500 }, []],
    [499, { status: 'reserved', quota: SHARED_QUOTA_NAME, slotAtMs: T0 + 500, retryAfterMs: 500 }, []],
    [500, { status: 'run', heldMs: 500 }, [500]],
    [2000, { status: 'run', heldMs: 500 }, [500]],
  ] as const)('UPSTREAM_HOLD_MS=%s: a second caller in the same ms gets %j', async (holdMs, expected, sleeps) => {
    const { gate, slept } = gateAt(holdMs);
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo' })).toEqual({ status: 'run', heldMs: 0 });
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'echo' })).toEqual(expected.status === 'reserved' ? reservedOn(UPSTREAM_QUOTA_KEY, expected as never) : expected);
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
    expect(answers[5]).toMatchObject({ status: 'rejected', quota: SHARED_QUOTA_NAME, reason: 'max_wait' });
    // tok_e, echoing its slot, still has it: the rejection took nothing.
    const eSlotAtMs = (answers[4] as { slotAtMs: number }).slotAtMs;
    const before = await store.schedule(UPSTREAM_QUOTA_KEY, T0, { tokenId: 'tok_e', tool: 'echo', claimSlotAtMs: eSlotAtMs }, policy);
    expect(before.outcome).toEqual({ status: 'reserved', slotAtMs: eSlotAtMs, retryAfterMs: eSlotAtMs - T0 });
  });

  it('reports every answer to its events, and each state a store answered', async () => {
    const { gate, answers, states } = gateAt(500);
    await gate.admit({ tokenId: 'tok_a', tool: 'echo' });
    await gate.admit({ tokenId: 'tok_b', tool: 'echo' });
    expect(answers).toEqual([{ status: 'run', heldMs: 0 }, { status: 'run', heldMs: 500 }]);
    // tok_b: reserved (count 2), then claimed (still 2).
    expect(states).toEqual(['upstream:1', 'upstream:2', 'upstream:2']);
  });

  it('a tool with no quota of its own and no shared quota runs without asking a store or counting an answer', async () => {
    const { gate, asked, answers } = gateWith({ tools: new Map([['search', policy]]), holdMs: 0 });
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo' })).toEqual({ status: 'run', heldMs: 0 });
    expect(asked).toEqual([]);
    expect(answers).toEqual([]);
  });
});

describe('UpstreamQuotaGate: a tool with its own quota is held to it and to the shared one', () => {
  // The tool's own quota: one call a minute (T = 60 s); the shared one: 2/s (T = 500 ms).
  const perMinute = resolveUpstreamPolicy({ limit: 1, windowMs: 60_000, headroom: 1, maxWaitMs: 120_000, graceMs: 0 });

  it('asks the quota with the longer interval first, whichever it is', async () => {
    for (const [shared, own, first] of [[policy, perMinute, toolQuotaKey('search')], [perMinute, policy, UPSTREAM_QUOTA_KEY]] as const) {
      const { gate, asked } = gateWith({ shared, tools: new Map([['search', own]]), holdMs: 0 });
      expect(gate.quotasFor('search').map((q) => q.key)).toEqual(first === UPSTREAM_QUOTA_KEY ? [UPSTREAM_QUOTA_KEY, toolQuotaKey('search')] : [toolQuotaKey('search'), UPSTREAM_QUOTA_KEY]);
      await gate.admit({ tokenId: 'tok_a', tool: 'search' });
      expect(asked).toEqual(gate.quotasFor('search').map((q) => q.key));
    }
  });

  it('equal intervals: the tool\'s own quota is asked first', () => {
    const { gate } = gateWith({ shared: policy, tools: new Map([['search', policy]]), holdMs: 0 });
    expect(gate.quotasFor('search').map((q) => q.name)).toEqual(['search', SHARED_QUOTA_NAME]);
  });

  it('the tool\'s quota answers "reserved" for a second caller while another tool still runs on the shared quota', async () => {
    const { gate } = gateWith({ shared: policy, tools: new Map([['search', perMinute]]), holdMs: 0 });
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'search' })).toEqual({ status: 'run', heldMs: 0 });
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'search' })).toEqual(reservedOn(toolQuotaKey('search'), { status: 'reserved', quota: 'search', slotAtMs: T0 + 60_000, retryAfterMs: 60_000 }));
    // The shared quota counted only tok_a's search; echo's slot is the next one on it.
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'echo' })).toEqual(reservedOn(UPSTREAM_QUOTA_KEY, { status: 'reserved', quota: SHARED_QUOTA_NAME, slotAtMs: T0 + 500, retryAfterMs: 500 }));
  });

  it('a call waiting on the tool\'s quota takes nothing from the shared one until it runs', async () => {
    const { gate, asked } = gateWith({ shared: policy, tools: new Map([['search', perMinute]]), holdMs: 0 });
    await gate.admit({ tokenId: 'tok_a', tool: 'search' });
    asked.length = 0;
    await gate.admit({ tokenId: 'tok_b', tool: 'search' });
    expect(asked).toEqual([toolQuotaKey('search')]);
  });

  it('a reserved caller that comes back at its slot runs on both quotas', async () => {
    const { gate, time } = gateWith({ shared: policy, tools: new Map([['search', perMinute]]), holdMs: 0 });
    await gate.admit({ tokenId: 'tok_a', tool: 'search' });
    const reserved = await gate.admit({ tokenId: 'tok_b', tool: 'search' });
    time.nowMs = (reserved as { slotAtMs: number }).slotAtMs;
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'search' })).toEqual({ status: 'run', heldMs: 0 });
  });

  it('when the shared quota is the one that makes a tool\'s caller wait, the answer names the shared quota', async () => {
    // Shared: one call a minute; the tool's own: 2/s. The shared quota has the longer interval, so it is asked first.
    const { gate } = gateWith({ shared: perMinute, tools: new Map([['search', policy]]), holdMs: 0 });
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo' })).toEqual({ status: 'run', heldMs: 0 });
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'search' })).toMatchObject({ status: 'reserved', quota: SHARED_QUOTA_NAME });
  });

  it('a hold for the tool\'s slot ends with one pass over both quotas, so both counted the call when it runs', async () => {
    const fast = resolveUpstreamPolicy({ limit: 10, windowMs: 1000, headroom: 1, maxWaitMs: 2000, graceMs: 0 });
    const { gate, slept, asked } = gateWith({ shared: fast, tools: new Map([['search', policy]]), holdMs: 1000 });
    await gate.admit({ tokenId: 'tok_a', tool: 'search' });
    asked.length = 0;
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'search' })).toEqual({ status: 'run', heldMs: 500 });
    expect(slept).toEqual([500]);
    expect(asked).toEqual([toolQuotaKey('search'), toolQuotaKey('search'), UPSTREAM_QUOTA_KEY]);
  });

  it('a tool name with characters a key cannot hold gets a valid key of its own', () => {
    expect(toolQuotaKey('files.read')).toBe('tool:files%2Eread');
    expect(toolQuotaKey('files.read')).not.toBe(toolQuotaKey('files%2Eread'));
  });

  it('property: whatever the callers and clock, no quota runs two calls closer than its interval', async () => {
    const shared = resolveUpstreamPolicy({ limit: 4, windowMs: 1000, headroom: 1, maxWaitMs: 3000, graceMs: 0 });
    const own = resolveUpstreamPolicy({ limit: 1, windowMs: 1000, headroom: 1, maxWaitMs: 3000, graceMs: 0 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ token: fc.constantFrom('tok_a', 'tok_b', 'tok_c'), tool: fc.constantFrom('search', 'echo'), stepMs: fc.integer({ min: 0, max: 700 }) }), { maxLength: 40 }),
        fc.integer({ min: 0, max: 600 }),
        async (calls, holdMs) => {
          const { gate, time } = gateWith({ shared, tools: new Map([['search', own]]), holdMs });
          const runs: { atMs: number; tool: string }[] = [];
          for (const call of calls) {
            time.nowMs += call.stepMs;
            const answer = await gate.admit({ tokenId: call.token, tool: call.tool });
            if (answer.status === 'run') runs.push({ atMs: time.nowMs, tool: call.tool });
          }
          const gaps = (list: number[]) => list.slice(1).map((at, i) => at - (list[i] as number));
          expect(gaps(runs.map((r) => r.atMs)).every((gap) => gap >= 250)).toBe(true);
          expect(gaps(runs.filter((r) => r.tool === 'search').map((r) => r.atMs)).every((gap) => gap >= 1000)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('UpstreamQuotaGate: a caller that leaves while held', () => {
  it('is answered "cancelled" after the hold and its call is not run', async () => {
    const controller = new AbortController();
    const { gate, answers } = gateWith({ shared: policy, holdMs: 1000, duringSleep: () => controller.abort() });
    await gate.admit({ tokenId: 'tok_a', tool: 'echo' });
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'echo' }, controller.signal)).toEqual({ status: 'cancelled', heldMs: 500 });
    expect(answers.at(-1)).toEqual({ status: 'cancelled', heldMs: 500 });
  });

  it('a caller already gone is not scheduled at all', async () => {
    const controller = new AbortController();
    controller.abort();
    const { gate, asked } = gateWith({ shared: policy, holdMs: 1000 });
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo' }, controller.signal)).toEqual({ status: 'cancelled', heldMs: 0 });
    expect(asked).toEqual([]);
  });

  it('the real sleep ends as soon as the caller leaves', async () => {
    const memory = new MemoryUpstreamQuotaStore();
    const slow = resolveUpstreamPolicy({ limit: 1, windowMs: 60_000, headroom: 1, maxWaitMs: 120_000, graceMs: 0 });
    let nowMs = T0;
    const gate = new UpstreamQuotaGate({ store: memory, shared: slow, holdMs: 60_000, clock: () => nowMs });
    await gate.admit({ tokenId: 'tok_a', tool: 'echo' });
    const controller = new AbortController();
    const held = gate.admit({ tokenId: 'tok_b', tool: 'echo' }, controller.signal);
    await new Promise((resolve) => setImmediate(resolve));
    nowMs += 5;
    controller.abort();
    // A 60 s hold that ended on the abort: jest's 5 s test timeout would fail this otherwise.
    expect(await held).toEqual({ status: 'cancelled', heldMs: 5 });
  });
});

describe('UpstreamQuotaGate: bounded holds against a store that keeps saying "not yet"', () => {
  /** A store whose clock runs ahead of ours: every answer is "reserved, come back in retryAfterMs". */
  function laggingGate(retryAfterMs: number, holdMs: number, duringSleep?: () => void) {
    const time = { nowMs: T0 };
    const slept: number[] = [];
    const store = { schedule: async () => ({ outcome: { status: 'reserved' as const, slotAtMs: time.nowMs + retryAfterMs, retryAfterMs }, state: null }) };
    const gate = new UpstreamQuotaGate({
      store,
      shared: policy,
      holdMs,
      clock: () => time.nowMs,
      sleep: async (ms) => {
        slept.push(ms);
        time.nowMs += ms;
        duringSleep?.();
      },
    });
    return { gate, slept };
  }

  it('holds at most four times, then answers the slot it was last given', async () => {
    const { gate, slept } = laggingGate(1, 1000);
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo' })).toEqual(reservedOn(UPSTREAM_QUOTA_KEY, { status: 'reserved', quota: SHARED_QUOTA_NAME, slotAtMs: T0 + 3 + 1, retryAfterMs: 1 }));
    expect(slept).toEqual([1, 1, 1, 1]);
  });

  it('stops holding once the time held so far and the wait to come pass the hold', async () => {
    const { gate, slept } = laggingGate(300, 500);
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo' })).toEqual(reservedOn(UPSTREAM_QUOTA_KEY, { status: 'reserved', quota: SHARED_QUOTA_NAME, slotAtMs: T0 + 600, retryAfterMs: 300 }));
    expect(slept).toEqual([300]);
  });

  it('a caller that leaves during the last hold is answered "cancelled", not its slot', async () => {
    const controller = new AbortController();
    let sleeps = 0;
    const { gate } = laggingGate(1, 1000, () => {
      if (++sleeps === 4) controller.abort();
    });
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo' }, controller.signal)).toEqual({ status: 'cancelled', heldMs: 4 });
  });

  it('events with neither method are fine', async () => {
    const gate = new UpstreamQuotaGate({ store: new MemoryUpstreamQuotaStore(), shared: policy, holdMs: 0, clock: () => T0, events: {} });
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo' })).toEqual({ status: 'run', heldMs: 0 });
  });

  it('the default sleep holds without a signal too', async () => {
    const memory = new MemoryUpstreamQuotaStore();
    // A grace and a hold far longer than the 20 ms slot: however late a loaded machine fires the real timer, the
    // held caller still finds its reservation (with no grace it had expired a millisecond late: a CI failure).
    const fast = resolveUpstreamPolicy({ limit: 50, windowMs: 1000, headroom: 1, maxWaitMs: 1000, graceMs: 60_000 });
    const gate = new UpstreamQuotaGate({ store: memory, shared: fast, holdMs: 60_000, clock: Date.now });
    await gate.admit({ tokenId: 'tok_a', tool: 'echo' });
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'echo' })).toMatchObject({ status: 'run' });
  });
});

describe('abortableSleep', () => {
  function fakeSignal(aborted = false) {
    return { aborted, addEventListener: jest.fn(), removeEventListener: jest.fn() };
  }

  it('resolves at once for a signal already aborted, listening to nothing', async () => {
    jest.useFakeTimers();
    try {
      const signal = fakeSignal(true);
      let done = false;
      void abortableSleep(60_000, signal as unknown as AbortSignal).then(() => (done = true));
      await Promise.resolve();
      expect(done).toBe(true);
      expect(signal.addEventListener).not.toHaveBeenCalled();
    } finally {
      jest.useRealTimers();
    }
  });

  it('listens once for the abort, and stops listening when the time is up', async () => {
    jest.useFakeTimers();
    try {
      const signal = fakeSignal();
      const slept = abortableSleep(1000, signal as unknown as AbortSignal);
      expect(signal.addEventListener).toHaveBeenCalledWith('abort', expect.any(Function), { once: true });
      jest.advanceTimersByTime(1000);
      await slept;
      expect(signal.removeEventListener).toHaveBeenCalledWith('abort', signal.addEventListener.mock.calls[0]?.[1]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('ends early on the abort', async () => {
    jest.useFakeTimers();
    try {
      const controller = new AbortController();
      let done = false;
      const slept = abortableSleep(60_000, controller.signal).then(() => (done = true));
      controller.abort();
      await slept;
      expect(done).toBe(true);
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('UpstreamQuotaGate: every forwarded request is scheduled, unless the limits file prices it 0 on the shared quota', () => {
  const search = resolveUpstreamPolicy({ limit: 1, windowMs: 1000, headroom: 1, maxWaitMs: 0, graceMs: 0 });
  const costs = { methods: new Map([['resources/read', 0]] as const), tools: new Map([['free', 0], ['search', 0]] as const) };
  const gate = new UpstreamQuotaGate({ store: new MemoryUpstreamQuotaStore(), shared: policy, tools: new Map([['search', search]]), costs, holdMs: 0, clock: () => T0 });
  it.each([
    ['tools/call of a tool without a quota of its own: the shared quota', 'tools/call', 'echo', [UPSTREAM_QUOTA_KEY]],
    ['prompts/get: the shared quota', 'prompts/get', undefined, [UPSTREAM_QUOTA_KEY]],
    ['completion/complete: the shared quota', 'completion/complete', undefined, [UPSTREAM_QUOTA_KEY]],
    ['resources/read priced 0: no quota', 'resources/read', undefined, []],
    ['a tool priced 0: no quota', 'tools/call', 'free', []],
    ['a tool priced 0 with a quota of its own: its own quota only', 'tools/call', 'search', [toolQuotaKey('search')]],
  ] as const)('%s', (_what, method, tool, keys) => {
    expect(gate.quotasFor(tool, method).map((q) => q.key)).toEqual(keys);
  });

  it('a read and a prompt in the same ms: one runs, the other is given the next slot, as tool calls are', async () => {
    const { gate: reads } = gateAt(0);
    const [first, second] = await Promise.all([reads.admit({ tokenId: 'tok_a', method: 'resources/read' }), reads.admit({ tokenId: 'tok_b', method: 'prompts/get' })]);
    expect(first).toEqual({ status: 'run', heldMs: 0 });
    expect(second).toEqual(reservedOn(UPSTREAM_QUOTA_KEY, { status: 'reserved', quota: SHARED_QUOTA_NAME, slotAtMs: T0 + 500, retryAfterMs: 500 }));
  });
});

describe('UpstreamQuotaGate: one slot per call (issue 17 item 4)', () => {
  it('parallel calls of one token: 1 runs, each that waits gets a slot of its own up to its share, and each runs when it comes back echoing its id', async () => {
    const { gate, time } = gateAt(0);
    const first = await Promise.all(Array.from({ length: 10 }, () => gate.admit({ tokenId: 'tok_a', tool: 'echo' })));
    const reserved = first.filter((a): a is Extract<GateAnswer, { status: 'reserved' }> => a.status === 'reserved');
    expect(first.filter((a) => a.status === 'run')).toHaveLength(1);
    // maxWaitMs 2000 at 500 ms a slot: 5 fit, so the token's share (a quarter, rounded up) is 2; the rest are told so.
    expect(reserved).toHaveLength(2);
    expect(first.filter((a) => a.status === 'rejected' && a.reason === 'token_reservations_full')).toHaveLength(7);
    expect(new Set(reserved.map((a) => a.slotAtMs)).size).toBe(reserved.length);
    for (const answer of [...reserved].sort((a, b) => a.slotAtMs - b.slotAtMs)) {
      time.nowMs = answer.slotAtMs;
      expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo', reservation: answer.reservation })).toEqual({ status: 'run', heldMs: 0 });
    }
  });

  it('a call back early with its id is told its own slot; a foreign id claims nothing of its owner\'s; a made-up one is as no id', async () => {
    const { gate, time } = gateAt(0);
    await gate.admit({ tokenId: 'tok_a', tool: 'echo' });
    const mine = (await gate.admit({ tokenId: 'tok_a', tool: 'echo' })) as Extract<GateAnswer, { status: 'reserved' }>;
    time.nowMs = mine.slotAtMs - 100;
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo', reservation: mine.reservation })).toEqual({ ...mine, retryAfterMs: 100 });
    time.nowMs = mine.slotAtMs;
    // Another token echoing tok_a's id is a new caller: it queues, and tok_a still runs on its slot.
    expect(await gate.admit({ tokenId: 'tok_b', tool: 'echo', reservation: mine.reservation })).toMatchObject({ status: 'reserved' });
    expect(await gate.admit({ tokenId: 'tok_a', tool: 'echo', reservation: 'r1.bm90LW91cnM' })).toEqual({ status: 'run', heldMs: 0 });
  });
});
