import { FleetEstimate, type FleetEstimateOptions } from '../../src/library/limiter/fleet-estimate';
import { createCapturingLogger } from '../support/capturing-logger';

const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A store whose heartbeats the test answers: each beat waits on the test, which resolves it with a count or fails it. */
class ScriptedFleet {
  beats: { instanceId: string; nowMs: number; ttlMs: number; answer: (count: unknown) => void; fail: (error: Error) => void }[] = [];
  left: string[] = [];

  heartbeat(instanceId: string, nowMs: number, ttlMs: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.beats.push({ instanceId, nowMs, ttlMs, answer: (count) => resolve(count as number), fail: reject });
    });
  }

  async leaveFleet(instanceId: string): Promise<void> {
    this.left.push(instanceId);
  }

  /** The latest beat, once the estimate has sent it (it calls the store a microtask later, through withDeadline). */
  async last() {
    await settle();
    const beat = this.beats.at(-1);
    if (beat === undefined) throw new Error('no beat yet');
    return beat;
  }
}

function setup(options: Partial<FleetEstimateOptions> = {}) {
  const store = new ScriptedFleet();
  const clock = { nowMs: 1_000_000 };
  const logger = createCapturingLogger();
  const fleet = new FleetEstimate({ store, instanceId: 'i-1', intervalMs: 10_000, clock: () => clock.nowMs, logger, ...options });
  return { store, clock, logger, fleet };
}

describe('FleetEstimate', () => {
  it('counts one instance, itself, until a beat has answered', async () => {
    const { fleet, store } = setup();
    expect(fleet.current()).toBe(1);
    await settle();
    expect(store.beats).toHaveLength(1);
  });

  it('takes the count a beat answers, and sends its id, its clock and a TTL of three intervals', async () => {
    const { fleet, store } = setup();
    const beat = fleet.beat();
    expect(await store.last()).toMatchObject({ instanceId: 'i-1', nowMs: 1_000_000, ttlMs: 30_000 });
    (await store.last()).answer(4);
    await beat;
    expect(fleet.current()).toBe(4);
  });

  it('asked when its last beat is an interval old, starts one without waiting for it; younger, none', async () => {
    const { fleet, store, clock } = setup();
    const first = fleet.beat();
    (await store.last()).answer(2);
    await first;
    clock.nowMs += 9_999;
    expect(fleet.current()).toBe(2);
    await settle();
    expect(store.beats).toHaveLength(1);
    clock.nowMs += 1;
    expect(fleet.current()).toBe(2);
    await settle();
    expect(store.beats).toHaveLength(2);
    // One in flight: asking again starts no second one.
    clock.nowMs += 20_000;
    fleet.current();
    await settle();
    expect(store.beats).toHaveLength(2);
    (await store.last()).answer(3);
    await settle();
    expect(fleet.current()).toBe(3);
  });

  it.each([
    ['an error', (beat: ScriptedFleet['beats'][number]) => beat.fail(new Error('redis://:pw@host down'))],
    ['zero', (beat: ScriptedFleet['beats'][number]) => beat.answer(0)],
    ['a fraction', (beat: ScriptedFleet['beats'][number]) => beat.answer(2.5)],
    ['not a number', (beat: ScriptedFleet['beats'][number]) => beat.answer('3')],
  ])('a beat answered with %s keeps the last count, and is logged once until one succeeds', async (_, badAnswer) => {
    const { fleet, store, logger } = setup();
    const first = fleet.beat();
    (await store.last()).answer(5);
    await first;
    for (let i = 0; i < 2; i++) {
      const bad = fleet.beat();
      badAnswer(await store.last());
      await bad;
      expect(fleet.current()).toBe(5);
    }
    const failures = logger.entries.filter((entry) => entry.fields.event === 'ratelimit.fleet_heartbeat_failed');
    expect(failures).toHaveLength(1);
    expect(JSON.stringify(failures)).not.toContain('pw@');
    const good = fleet.beat();
    (await store.last()).answer(6);
    await good;
    const bad = fleet.beat();
    badAnswer(await store.last());
    await bad;
    expect(logger.entries.filter((entry) => entry.fields.event === 'ratelimit.fleet_heartbeat_failed')).toHaveLength(2);
  });

  it('a beat that never answers counts as failed after the timeout, and the next one can start', async () => {
    jest.useFakeTimers();
    try {
      const { fleet, store, clock } = setup({ timeoutMs: 500 });
      const hung = fleet.beat();
      await jest.advanceTimersByTimeAsync(500);
      await hung;
      clock.nowMs += 10_000;
      fleet.current();
      await jest.advanceTimersByTimeAsync(0);
      expect(store.beats).toHaveLength(2);
    } finally {
      jest.useRealTimers();
    }
  });

  it('logs a change of the count once, with both figures', async () => {
    const { fleet, store, logger } = setup();
    for (const count of [3, 3, 4]) {
      const beat = fleet.beat();
      (await store.last()).answer(count);
      await beat;
    }
    expect(logger.entries.filter((entry) => entry.fields.event === 'ratelimit.fleet_changed').map((entry) => [entry.fields.previous, entry.fields.instances])).toEqual([
      [1, 3],
      [3, 4],
    ]);
  });

  it('close waits for a beat in flight, then leaves, so the beat cannot write it back; then beats no more', async () => {
    const { fleet, store, clock } = setup();
    const beat = fleet.beat();
    await store.last();
    const closing = fleet.close();
    await settle();
    expect(store.left).toEqual([]);
    (await store.last()).answer(2);
    await beat;
    await closing;
    expect(store.left).toEqual(['i-1']);
    clock.nowMs += 60_000;
    fleet.current();
    await settle();
    expect(store.beats).toHaveLength(1);
  });

  it('a beat asked for as it closes is not sent', async () => {
    const { fleet, store } = setup();
    const beat = fleet.beat();
    await fleet.close();
    await beat;
    await settle();
    expect(store.beats).toHaveLength(0);
    expect(store.left).toEqual(['i-1']);
  });

  it('beat() waits for the beat in flight and then sends its own, so its count is no older than the call', async () => {
    const { fleet, store } = setup();
    const first = fleet.beat();
    await store.last();
    const second = fleet.beat();
    (await store.last()).answer(1);
    await first;
    (await store.last()).answer(4);
    await second;
    expect(store.beats).toHaveLength(2);
    expect(fleet.current()).toBe(4);
  });

  it('start waits for the store to be connected before its first beat', async () => {
    const store = Object.assign(new ScriptedFleet(), { ready: undefined as undefined | ((ready: boolean) => void) });
    const connecting = Object.assign(store, { whenReady: () => new Promise<boolean>((resolve) => (store.ready = resolve)) });
    const fleet = new FleetEstimate({ store: connecting, instanceId: 'i-1' });
    const started = fleet.start();
    await settle();
    expect(store.beats).toHaveLength(0);
    store.ready?.(true);
    await settle();
    expect(store.beats).toHaveLength(1);
    store.beats[0]?.answer(3);
    await started;
    expect(fleet.current()).toBe(3);
    await fleet.close();
  });

  it('start beats at once and then on its interval', async () => {
    jest.useFakeTimers();
    try {
      const { fleet, store } = setup();
      const started = fleet.start();
      await jest.advanceTimersByTimeAsync(0);
      expect(store.beats).toHaveLength(1);
      store.beats[0]?.answer(2);
      await started;
      await jest.advanceTimersByTimeAsync(10_000);
      expect(store.beats).toHaveLength(2);
      store.beats[1]?.answer(2);
      await fleet.close();
    } finally {
      jest.useRealTimers();
    }
  });

  it('the default id is one RTDB can hold as a key and differs per estimate', () => {
    const store = new ScriptedFleet();
    const ids = [new FleetEstimate({ store }), new FleetEstimate({ store })].map((fleet) => fleet.instanceId);
    expect(ids[0]).not.toBe(ids[1]);
    for (const id of ids) expect(id).not.toMatch(/[.$#[\]/\s]/);
  });

  it.each([
    [{ intervalMs: 0 }, /intervalMs must be a positive integer/],
    [{ intervalMs: 1.5 }, /intervalMs must be a positive integer/],
    [{ ttlMs: -1 }, /ttlMs must be a positive integer/],
    [{ timeoutMs: 0 }, /timeoutMs must be a positive integer/],
    [{ intervalMs: 10_000, ttlMs: 10_000 }, /ttlMs \(10000\) must be longer than intervalMs \(10000\)/],
  ])('refuses %p', (options, message) => {
    expect(() => new FleetEstimate({ store: new ScriptedFleet(), ...options })).toThrow(message);
  });
});
