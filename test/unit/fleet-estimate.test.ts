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

describe('FleetEstimate: edges Stryker found unchecked', () => {
  it('instances reports the last count without starting a beat (a metrics scrape leaves an idle instance idle)', async () => {
    const { fleet, store } = setup();
    expect(fleet.instances).toBe(1);
    await settle();
    expect(store.beats).toHaveLength(0);
  });

  it('the default id ends in its process id and 12 hex digits of randomness', () => {
    expect(new FleetEstimate({ store: new ScriptedFleet() }).instanceId).toMatch(new RegExp(`-${process.pid}-[0-9a-f]{12}$`));
  });

  it('accepts 1 ms as interval and timeout', () => {
    expect(() => new FleetEstimate({ store: new ScriptedFleet(), intervalMs: 1, ttlMs: 2, timeoutMs: 1 })).not.toThrow();
  });

  it('takes a count of 1 after a larger one (it is alone again)', async () => {
    const { fleet, store } = setup();
    for (const count of [3, 1]) {
      const beat = fleet.beat();
      (await store.last()).answer(count);
      await beat;
    }
    expect(fleet.current()).toBe(1);
  });

  it.each<[string, (beat: ScriptedFleet['beats'][number]) => void, string]>([
    ['an error', (beat) => beat.fail(new Error('down')), 'error'],
    ['a bad reply', (beat) => beat.answer(0), 'bad_reply'],
  ])('logs the first failed beat (%s) with its cause and a message', async (_name, badAnswer, cause) => {
    const { fleet, store, logger } = setup();
    const beat = fleet.beat();
    badAnswer(await store.last());
    await beat;
    const failures = logger.entries.filter((entry) => entry.fields.event === 'ratelimit.fleet_heartbeat_failed');
    expect(failures).toEqual([expect.objectContaining({ message: expect.stringContaining('fleet heartbeat failed'), fields: expect.objectContaining({ cause, instances: 1 }) })]);
  });

  it('logs a change of the count with a message', async () => {
    const { fleet, store, logger } = setup();
    const beat = fleet.beat();
    (await store.last()).answer(2);
    await beat;
    expect(logger.entries.find((entry) => entry.fields.event === 'ratelimit.fleet_changed')?.message).toContain('live instances');
  });

  it('with a store that keeps no heartbeats, beats nothing and logs nothing', async () => {
    const logger = createCapturingLogger();
    const fleet = new FleetEstimate({ store: {}, instanceId: 'i-1', logger });
    await fleet.beat();
    expect([fleet.current(), logger.entries]).toEqual([1, []]);
  });

  it('a beat answering after close changes nothing: the instance has left', async () => {
    const { fleet, store, logger } = setup();
    const beat = fleet.beat();
    // Sent before the close (a beat asked for as it closes is not sent at all: tested above).
    const sent = await store.last();
    const closing = fleet.close();
    sent.answer(7);
    await Promise.all([beat, closing]);
    expect([fleet.instances, logger.entries]).toEqual([1, []]);
  });

  it('closed twice, leaves once', async () => {
    const { fleet, store } = setup();
    await fleet.close();
    await fleet.close();
    expect(store.left).toEqual(['i-1']);
  });

  it('closed while waiting for the connection, never beats', async () => {
    const store = new ScriptedFleet();
    let ready!: (ready: boolean) => void;
    const fleet = new FleetEstimate({ store: Object.assign(store, { whenReady: () => new Promise<boolean>((resolve) => (ready = resolve)) }), instanceId: 'i-1' });
    const started = fleet.start();
    await settle();
    await fleet.close();
    ready(true);
    await started;
    expect(store.beats).toHaveLength(0);
  });

  it.each([
    ['started twice', async (fleet: FleetEstimate) => void (await Promise.all([fleet.start(), fleet.start()]))],
    ['started after close', async (fleet: FleetEstimate) => void (await fleet.close(), await fleet.start())],
    ['closed after start', async (fleet: FleetEstimate) => void (await fleet.start(), await fleet.close())],
  ])('%s, runs at most one interval timer, stopped by close', async (_name, run) => {
    jest.useFakeTimers();
    try {
      const store = new ScriptedFleet();
      store.heartbeat = (instanceId, nowMs, ttlMs) => (store.beats.push({ instanceId, nowMs, ttlMs, answer: () => undefined, fail: () => undefined }), Promise.resolve(2));
      const fleet = new FleetEstimate({ store, instanceId: 'i-1', intervalMs: 10_000, clock: () => 1_000_000 });
      await run(fleet);
      const beatsBefore = store.beats.length;
      await fleet.close();
      await jest.advanceTimersByTimeAsync(30_000);
      expect(store.beats.length).toBe(beatsBefore);
      expect(beatsBefore).toBeLessThanOrEqual(1);
    } finally {
      jest.useRealTimers();
    }
  });
});
