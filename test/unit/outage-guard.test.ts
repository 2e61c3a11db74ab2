import { MIN_OUTAGE_RETRY_AFTER_MS, OutageGuard } from '../../src/library/limiter/outage-guard';
import { createCapturingLogger, type CapturedEntry } from '../support/capturing-logger';
import { LimiterMetrics } from '../../src/metrics/limiter-metrics';

const TIMEOUT_MS = 1_000;
const PROBE_MS = 5_000;

/** A backend whose next answers the test chooses; counts the calls that reached it. */
function programmableBackend() {
  const backend = {
    healthy: true,
    calls: 0,
    call: (): Promise<string> => {
      backend.calls++;
      return backend.healthy ? Promise.resolve('ok') : Promise.reject(Object.assign(new Error('connect redis://:pw@db:6379 refused'), { code: 'ECONNREFUSED' }));
    },
  };
  return backend;
}

function setup(options: { timeoutMs?: number } = {}) {
  const clock = { nowMs: 1_000_000 };
  const logger = createCapturingLogger();
  const metrics = new LimiterMetrics();
  const guard = new OutageGuard({
    backend: 'rtdb',
    timeoutMs: options.timeoutMs ?? TIMEOUT_MS,
    probeIntervalMs: PROBE_MS,
    logger,
    clock: () => clock.nowMs,
    metrics,
  });
  return { clock, logger, metrics, guard, backend: programmableBackend() };
}

const events = (entries: CapturedEntry[], event: string) => entries.filter((e) => e.fields.event === event);

/** A value in the exposition text, e.g. series('firelimit_backend_outages_total{backend="rtdb"}'). */
async function series(metrics: LimiterMetrics, name: string): Promise<number | undefined> {
  const line = (await metrics.scrape()).split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('OutageGuard', () => {
  it('passes healthy calls through and logs nothing', async () => {
    const { guard, backend, logger } = setup();
    for (let i = 0; i < 5; i++) await expect(guard.run(backend.call)).resolves.toEqual({ ok: true, value: 'ok' });
    expect(backend.calls).toBe(5);
    expect(logger.entries).toEqual([]);
    expect(guard.state).toEqual({ open: false, sinceMs: undefined });
  });

  it('opens an outage on the first failure with one log line holding backend, cause and a message-free error', async () => {
    const { guard, backend, logger, clock, metrics } = setup();
    backend.healthy = false;
    const first = await guard.run(backend.call);
    expect(first).toMatchObject({ ok: false, cause: 'error', retryAfterMs: PROBE_MS });
    expect(guard.state).toEqual({ open: true, sinceMs: clock.nowMs });
    expect(logger.entries).toHaveLength(1);
    expect(logger.entries[0]).toMatchObject({
      severity: 'WARNING',
      fields: { event: 'ratelimit.outage_started', backend: 'rtdb', cause: 'error', error: 'Error:ECONNREFUSED' },
    });
    expect(JSON.stringify(logger.entries)).not.toMatch(/pw|redis:\/\//);
    expect(await series(metrics, 'firelimit_backend_outages_total{backend="rtdb"}')).toBe(1);
    expect(await series(metrics, 'firelimit_backend_outage_active{backend="rtdb"}')).toBe(1);
  });

  it('does not call the backend or log again per request while the outage lasts', async () => {
    const { guard, backend, logger, clock } = setup();
    backend.healthy = false;
    await guard.run(backend.call);
    for (let i = 0; i < 100; i++) {
      clock.nowMs += 10; // 1 s in all, well inside the probe interval
      await expect(guard.run(backend.call)).resolves.toMatchObject({ ok: false, cause: 'outage' });
    }
    expect(backend.calls).toBe(1);
    expect(logger.entries).toHaveLength(1);
  });

  it('reports retryAfterMs as the time to the next probe, never below 1 s', async () => {
    const { guard, backend, clock } = setup();
    backend.healthy = false;
    await guard.run(backend.call);
    clock.nowMs += 2_000;
    await expect(guard.run(backend.call)).resolves.toMatchObject({ retryAfterMs: PROBE_MS - 2_000 });
    clock.nowMs += 2_900;
    await expect(guard.run(backend.call)).resolves.toMatchObject({ retryAfterMs: MIN_OUTAGE_RETRY_AFTER_MS });
  });

  it('probes at most once per interval, and a failed probe neither logs nor restarts the outage', async () => {
    const { guard, backend, logger, clock } = setup();
    const openedAt = clock.nowMs;
    backend.healthy = false;
    await guard.run(backend.call);
    // 30 s of traffic every 100 ms: probes at +5 s, +10 s, ... +30 s.
    for (let t = 100; t <= 30_000; t += 100) {
      clock.nowMs = openedAt + t;
      await guard.run(backend.call);
    }
    expect(backend.calls).toBe(1 + 6);
    expect(logger.entries).toHaveLength(1);
    expect(guard.state).toEqual({ open: true, sinceMs: openedAt });
  });

  it('the first successful probe closes the outage with one recovery line holding its duration', async () => {
    const { guard, backend, logger, clock, metrics } = setup();
    const openedAt = clock.nowMs;
    backend.healthy = false;
    await guard.run(backend.call);
    backend.healthy = true;
    clock.nowMs = openedAt + PROBE_MS - 1;
    await expect(guard.run(backend.call)).resolves.toMatchObject({ ok: false, cause: 'outage' });
    clock.nowMs = openedAt + PROBE_MS;
    await expect(guard.run(backend.call)).resolves.toEqual({ ok: true, value: 'ok' });
    expect(guard.state.open).toBe(false);
    for (let i = 0; i < 10; i++) await expect(guard.run(backend.call)).resolves.toMatchObject({ ok: true });
    expect(events(logger.entries, 'ratelimit.outage_started')).toHaveLength(1);
    const ended = events(logger.entries, 'ratelimit.outage_ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({ severity: 'INFO', fields: { backend: 'rtdb', durationMs: PROBE_MS, failedProbes: 0 } });
    expect(await series(metrics, 'firelimit_backend_outage_active{backend="rtdb"}')).toBe(0);
  });

  it('many concurrent calls failing at the start of an outage produce one line and one outage', async () => {
    const { guard, logger, metrics } = setup();
    const rejecters: ((e: Error) => void)[] = [];
    const pending = Array.from({ length: 50 }, () =>
      guard.run(() => new Promise<string>((_, reject) => rejecters.push(reject))),
    );
    await Promise.resolve();
    rejecters.forEach((reject) => reject(new Error('down')));
    const results = await Promise.all(pending);
    expect(results.every((r) => !r.ok && r.cause === 'error')).toBe(true);
    expect(logger.entries).toHaveLength(1);
    expect(guard.outageCount).toBe(1);
    expect(await series(metrics, 'firelimit_backend_outages_total{backend="rtdb"}')).toBe(1);
  });

  it('while a probe is in flight, other calls fail at once instead of waiting on it', async () => {
    const { guard, backend, clock } = setup();
    backend.healthy = false;
    await guard.run(backend.call);
    clock.nowMs += PROBE_MS;
    let resolveProbe: (v: string) => void = () => undefined;
    const probe = guard.run(() => new Promise<string>((resolve) => (resolveProbe = resolve)));
    // The probe's interval has not ended, but even past it a second probe must not start while one is out.
    clock.nowMs += PROBE_MS * 3;
    const others = await Promise.all(Array.from({ length: 10 }, () => guard.run(backend.call)));
    expect(others.every((r) => !r.ok && r.cause === 'outage')).toBe(true);
    expect(backend.calls).toBe(1);
    resolveProbe('ok');
    await expect(probe).resolves.toEqual({ ok: true, value: 'ok' });
    expect(guard.state.open).toBe(false);
  });

  it('counts a call past the deadline as a failure and opens the outage on it', async () => {
    const { guard, logger } = setup({ timeoutMs: 30 });
    const startedAt = Date.now();
    const result = await guard.run(() => new Promise<string>((resolve) => setTimeout(() => resolve('late'), 500).unref()));
    expect(Date.now() - startedAt).toBeLessThan(400);
    expect(result).toMatchObject({ ok: false, cause: 'timeout' });
    expect(logger.entries).toHaveLength(1);
    expect(logger.entries[0]?.fields).toMatchObject({ event: 'ratelimit.outage_started', cause: 'timeout', timeoutMs: 30 });
  });

  it('treats a call that throws synchronously as a failure, not an exception', async () => {
    const { guard } = setup();
    const result = await guard.run((): Promise<string> => {
      throw new TypeError('sync');
    });
    expect(result).toMatchObject({ ok: false, cause: 'error' });
    expect(guard.state.open).toBe(true);
  });

  it('a failure of a call sent before the recovery does not reopen the outage', async () => {
    const { guard, backend, clock, logger } = setup();
    let rejectOld: (e: Error) => void = () => undefined;
    const old = guard.run(() => new Promise<string>((_, reject) => (rejectOld = reject)));
    backend.healthy = false;
    await guard.run(backend.call); // opens
    backend.healthy = true;
    clock.nowMs += PROBE_MS;
    await guard.run(backend.call); // probe succeeds: closed
    rejectOld(new Error('stale'));
    await expect(old).resolves.toMatchObject({ ok: false, cause: 'error' });
    expect(guard.state.open).toBe(false);
    expect(logger.entries.map((e) => e.fields.event)).toEqual(['ratelimit.outage_started', 'ratelimit.outage_ended']);
  });

  it('opens a second outage after a recovery, with its own pair of lines', async () => {
    const { guard, backend, clock, logger, metrics } = setup();
    for (let round = 0; round < 2; round++) {
      backend.healthy = false;
      await guard.run(backend.call);
      backend.healthy = true;
      clock.nowMs += PROBE_MS;
      await guard.run(backend.call);
    }
    expect(logger.entries.map((e) => e.fields.event)).toEqual([
      'ratelimit.outage_started',
      'ratelimit.outage_ended',
      'ratelimit.outage_started',
      'ratelimit.outage_ended',
    ]);
    expect(await series(metrics, 'firelimit_backend_outages_total{backend="rtdb"}')).toBe(2);
  });

  it('observes the duration of every call sent to the backend, not of calls refused during an outage', async () => {
    const { guard, backend, metrics } = setup();
    await guard.run(backend.call);
    backend.healthy = false;
    await guard.run(backend.call);
    for (let i = 0; i < 20; i++) await guard.run(backend.call);
    expect(await series(metrics, 'firelimit_backend_call_duration_seconds_count{backend="rtdb"}')).toBe(2);
  });

  it.each([
    { name: 'a probe interval of 0', timeoutMs: 1_000, probeIntervalMs: 0, message: 'OutageGuard: probeIntervalMs must be a positive number, got 0' },
    { name: 'a negative probe interval', timeoutMs: 1_000, probeIntervalMs: -5_000, message: 'OutageGuard: probeIntervalMs must be a positive number, got -5000' },
    { name: 'an infinite probe interval (never probe again)', timeoutMs: 1_000, probeIntervalMs: Number.POSITIVE_INFINITY, message: 'OutageGuard: probeIntervalMs must be a positive number, got Infinity' },
    { name: 'a deadline of 0', timeoutMs: 0, probeIntervalMs: 5_000, message: 'OutageGuard: timeoutMs must be a positive number, got 0' },
    { name: 'a negative deadline', timeoutMs: -1, probeIntervalMs: 5_000, message: 'OutageGuard: timeoutMs must be a positive number, got -1' },
    { name: 'a NaN deadline', timeoutMs: Number.NaN, probeIntervalMs: 5_000, message: 'OutageGuard: timeoutMs must be a positive number, got NaN' },
    { name: 'an infinite deadline', timeoutMs: Number.POSITIVE_INFINITY, probeIntervalMs: 5_000, message: 'OutageGuard: timeoutMs must be a positive number, got Infinity' },
  ])('refuses $name with a RangeError naming the option', ({ timeoutMs, probeIntervalMs, message }) => {
    const logger = createCapturingLogger();
    expect(() => new OutageGuard({ backend: 'rtdb', timeoutMs, probeIntervalMs, logger })).toThrow(new RangeError(message));
  });

  it.each([
    { timeoutMs: 1, probeIntervalMs: 1 },
    { timeoutMs: 0.5, probeIntervalMs: 0.5 },
  ])('accepts the smallest positive deadline $timeoutMs and probe interval $probeIntervalMs', ({ timeoutMs, probeIntervalMs }) => {
    const logger = createCapturingLogger();
    expect(() => new OutageGuard({ backend: 'rtdb', timeoutMs, probeIntervalMs, logger })).not.toThrow();
  });

  it('reports no outage for its backend in the metrics from the moment it is made', async () => {
    const { metrics } = setup();
    expect(await series(metrics, 'firelimit_backend_outage_active{backend="rtdb"}')).toBe(0);
  });

  it('the recovery line counts the probes that failed before it', async () => {
    const { guard, backend, logger, clock } = setup();
    const openedAt = clock.nowMs;
    backend.healthy = false;
    await guard.run(backend.call);
    for (let i = 1; i <= 3; i++) {
      clock.nowMs = openedAt + i * PROBE_MS;
      await expect(guard.run(backend.call)).resolves.toMatchObject({ ok: false, cause: 'error', retryAfterMs: PROBE_MS });
    }
    backend.healthy = true;
    clock.nowMs = openedAt + 4 * PROBE_MS + 250;
    await guard.run(backend.call);
    expect(events(logger.entries, 'ratelimit.outage_ended')[0]?.fields).toMatchObject({ failedProbes: 3, durationMs: 4 * PROBE_MS + 250 });
  });

  it('the next outage starts its failed-probe count again from 0', async () => {
    const { guard, backend, logger, clock } = setup();
    backend.healthy = false;
    await guard.run(backend.call);
    clock.nowMs += PROBE_MS;
    await guard.run(backend.call); // a failed probe
    backend.healthy = true;
    clock.nowMs += PROBE_MS;
    await guard.run(backend.call); // recovers
    backend.healthy = false;
    await guard.run(backend.call); // second outage
    backend.healthy = true;
    clock.nowMs += PROBE_MS;
    await guard.run(backend.call);
    expect(events(logger.entries, 'ratelimit.outage_ended').map((e) => e.fields.failedProbes)).toEqual([1, 0]);
  });

  it('names the limiter, deadline and probe interval in the outage line', async () => {
    const logger = createCapturingLogger();
    const guard = new OutageGuard({ backend: 'redis', limiter: 'signin', timeoutMs: 250, probeIntervalMs: 2_000, logger, clock: () => 0 });
    await guard.run(() => Promise.reject(new Error('down')));
    expect(logger.entries[0]?.fields).toEqual({
      event: 'ratelimit.outage_started',
      backend: 'redis',
      limiter: 'signin',
      cause: 'error',
      error: 'Error',
      timeoutMs: 250,
      probeIntervalMs: 2_000,
    });
  });

  it('a probe that fails reports the time to the next probe, counted from when it started', async () => {
    const { guard, clock } = setup();
    const openedAt = clock.nowMs;
    await guard.run(() => Promise.reject(new Error('down')));
    clock.nowMs = openedAt + PROBE_MS;
    const probe = guard.run(() => {
      clock.nowMs += 1_500; // the probe took 1.5 s to fail
      return Promise.reject(new Error('still down'));
    });
    await expect(probe).resolves.toMatchObject({ ok: false, cause: 'error', retryAfterMs: PROBE_MS - 1_500 });
    clock.nowMs = openedAt + 2 * PROBE_MS - 1;
    await expect(guard.run(() => Promise.resolve('x'))).resolves.toMatchObject({ ok: false, cause: 'outage' });
    clock.nowMs = openedAt + 2 * PROBE_MS;
    await expect(guard.run(() => Promise.resolve('x'))).resolves.toEqual({ ok: true, value: 'x' });
  });

  it('rounds a fractional time to the next probe up to whole milliseconds', async () => {
    const clock = { nowMs: 100 };
    const guard = new OutageGuard({ backend: 'rtdb', timeoutMs: 1_000, probeIntervalMs: 5_000, logger: createCapturingLogger(), clock: () => clock.nowMs });
    await guard.run(() => Promise.reject(new Error('down')));
    clock.nowMs = 100 + 2_999.5;
    await expect(guard.run(() => Promise.resolve('x'))).resolves.toMatchObject({ retryAfterMs: 2_001 });
  });

  it.each([
    { name: 'at once', afterMs: 0 },
    { name: 'a second later', afterMs: 1_000 },
    { name: 'a minute later', afterMs: 60_000 },
  ])('a stale failure that arrives $name after the recovery reports the floor, not the time to a probe no longer scheduled', async ({ afterMs }) => {
    const { guard, backend, clock } = setup();
    let rejectOld: (e: Error) => void = () => undefined;
    const old = guard.run(() => new Promise<string>((_, reject) => (rejectOld = reject)));
    backend.healthy = false;
    await guard.run(backend.call);
    backend.healthy = true;
    clock.nowMs += PROBE_MS;
    await guard.run(backend.call);
    clock.nowMs += afterMs;
    rejectOld(new Error('stale'));
    await expect(old).resolves.toMatchObject({ ok: false, cause: 'error', retryAfterMs: MIN_OUTAGE_RETRY_AFTER_MS });
  });

  it('says in words what an outage means and when it ends', async () => {
    const { guard, backend, logger, clock } = setup();
    backend.healthy = false;
    await guard.run(backend.call);
    backend.healthy = true;
    clock.nowMs += PROBE_MS;
    await guard.run(backend.call);
    expect(logger.entries.map((e) => [e.severity, e.message])).toEqual([
      ['WARNING', 'rate limit backend outage started; answering by the failure policy and probing the backend'],
      ['INFO', 'rate limit backend outage ended; shared decisions resumed'],
    ]);
  });

  it('works through an outage and a recovery without metrics or an injected clock (monotonic whole milliseconds)', async () => {
    const logger = createCapturingLogger();
    const guard = new OutageGuard({ backend: 'memory', timeoutMs: 1_000, probeIntervalMs: 60_000, logger });
    await expect(guard.run(() => Promise.reject(new Error('down')))).resolves.toMatchObject({ ok: false, cause: 'error' });
    const refused = await guard.run(() => Promise.resolve('x'));
    expect(refused).toMatchObject({ ok: false, cause: 'outage' });
    const retryAfterMs = refused.ok ? Number.NaN : refused.retryAfterMs;
    expect(Number.isInteger(retryAfterMs)).toBe(true);
    // Well inside the 60 s interval whatever the machine's load, and never below the floor.
    expect(retryAfterMs).toBeGreaterThan(30_000);
    expect(retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(guard.state.open).toBe(true);
    expect(Number.isInteger(guard.state.sinceMs)).toBe(true);
  });

  it('closes an outage without metrics', async () => {
    const logger = createCapturingLogger();
    const clock = { nowMs: 0 };
    const guard = new OutageGuard({ backend: 'rtdb', timeoutMs: 1_000, probeIntervalMs: 5_000, logger, clock: () => clock.nowMs });
    await guard.run(() => Promise.reject(new Error('down')));
    clock.nowMs = 5_000;
    await expect(guard.run(() => Promise.resolve('back'))).resolves.toEqual({ ok: true, value: 'back' });
    expect(guard.state).toEqual({ open: false, sinceMs: undefined });
  });

  it('refuses a non-positive deadline or probe interval instead of fixing it up', () => {
    const logger = createCapturingLogger();
    expect(() => new OutageGuard({ backend: 'rtdb', timeoutMs: 0, probeIntervalMs: 1, logger })).toThrow(/timeoutMs/);
    expect(() => new OutageGuard({ backend: 'rtdb', timeoutMs: 1, probeIntervalMs: Number.NaN, logger })).toThrow(/probeIntervalMs/);
  });
});
