import { MIN_OUTAGE_RETRY_AFTER_MS, OutageGuard } from '../../src/limiter/outage-guard';
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

  it('refuses a non-positive deadline or probe interval instead of fixing it up', () => {
    const logger = createCapturingLogger();
    expect(() => new OutageGuard({ backend: 'rtdb', timeoutMs: 0, probeIntervalMs: 1, logger })).toThrow(/timeoutMs/);
    expect(() => new OutageGuard({ backend: 'rtdb', timeoutMs: 1, probeIntervalMs: Number.NaN, logger })).toThrow(/probeIntervalMs/);
  });
});
