import type { App } from 'firebase-admin/app';
import { RtdbWindowStore } from '../../src/library/backends/rtdb/rtdb-store';
import { getDatabase } from 'firebase-admin/database';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { Decision } from '../../src/library/window/decision';
import type { RateLimitPolicy } from '../../src/library/window/policy';
import type { RateLimiter } from '../../src/library/limiter/rate-limiter';
import { createAdminApp, deleteAdminApp } from '../support/rtdb-server/admin-app';
import { rtdbForTests, SELF_SET_HOST_VAR, type RtdbTestServer } from '../support/rtdb-server';

/**
 * The limiter in front of an RTDB that hangs (SIGSTOP) or goes away (process
 * stopped, then restarted on the same port). Decisions must keep coming
 * within the deadline, from the local window, and be shared again once the
 * database is back.
 */
const TIMEOUT_MS = 300;
/** Deadline plus room for a loaded two-core machine. */
const MAX_DECISION_MS = TIMEOUT_MS + 250;
/** Reconnect backoff after a dropped connection grows from 1 s; give it room but stay bounded. */
const RECOVERY_BUDGET_MS = 30_000;
/** The outage guard sends one probe per interval while the backend is down. */
const PROBE_INTERVAL_MS = 200;
const WINDOW_MS = 60_000;
/** A window boundary: each test starts here, so its window (60 s) cannot roll while it runs. */
const START_MS = 28_333_000 * WINDOW_MS;

// suspend()/stop() need our own server process; the official emulator cannot be paused from here.
const emulatorHost = process.env.FIREBASE_DATABASE_EMULATOR_HOST;
const external = emulatorHost !== undefined && emulatorHost !== '' && emulatorHost !== process.env[SELF_SET_HOST_VAR];
const describeOwnServer = external ? describe.skip : describe;
if (external) {
  console.warn(`rtdb-outage: skipped, FIREBASE_DATABASE_EMULATOR_HOST=${emulatorHost} is an external emulator that cannot be suspended or stopped`);
}

let server: RtdbTestServer;
let app: App;
const limiters: RateLimiter[] = [];

/**
 * Injected time that moves with real time (the outage guard schedules its
 * probes by it), from START_MS when the test starts, plus any jump a test asks for.
 */
function testClock(): { now: () => number; jump: (ms: number) => void } {
  const startedAt = performance.now();
  let jumpedMs = 0;
  return {
    now: () => START_MS + jumpedMs + Math.floor(performance.now() - startedAt),
    jump: (ms) => {
      jumpedMs += ms;
    },
  };
}

async function newLimiter(policy: RateLimitPolicy, rootPath: string, clock: () => number): Promise<RateLimiter> {
  const limiter = await createRateLimiter({
    store: new RtdbWindowStore({ database: getDatabase(app), rootPath, clock }),
    policy,
    timeoutMs: TIMEOUT_MS,
    probeIntervalMs: PROBE_INTERVAL_MS,
    clock,
  });
  limiters.push(limiter);
  return limiter;
}

async function timed(limiter: RateLimiter, key: string): Promise<{ decision: Decision; ms: number }> {
  const started = performance.now();
  const decision = await limiter.consume(key);
  return { decision, ms: performance.now() - started };
}

/** Consumes until a decision is shared again; short waits between tries, bounded overall. */
async function untilShared(limiter: RateLimiter, key: string): Promise<Decision> {
  const deadline = Date.now() + RECOVERY_BUDGET_MS;
  for (;;) {
    const decision = await limiter.consume(key);
    if (decision.shared) return decision;
    if (Date.now() > deadline) throw new Error(`decisions still not shared ${RECOVERY_BUDGET_MS} ms after the database came back`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function expectLocalAnswersInTime(limiter: RateLimiter, key: string, count: number): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (let i = 0; i < count; i++) {
    const { decision, ms } = await timed(limiter, key);
    expect(ms).toBeLessThan(MAX_DECISION_MS);
    expect(decision.shared).toBe(false);
    decisions.push(decision);
  }
  return decisions;
}

describeOwnServer('RTDB outage behind createRateLimiter', () => {
  beforeAll(async () => {
    server = await rtdbForTests();
    app = createAdminApp(server);
  });

  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.close()));
    if (app !== undefined) await deleteAdminApp(app);
    await server?.close();
  });

  test('a hung database (SIGSTOP): local answers within the deadline, shared again after resume', async () => {
    const limiter = await newLimiter({ name: 'default', limit: 1000, windowMs: WINDOW_MS }, 'hung', testClock().now);
    expect(await limiter.consume('tok')).toMatchObject({ shared: true, reason: 'within_limit' });

    await server.suspend();
    try {
      const local = await expectLocalAnswersInTime(limiter, 'tok', 4);
      for (const d of local) expect(d).toMatchObject({ allowed: true, reason: 'local_fallback' });
    } finally {
      await server.resume();
    }

    const back = await untilShared(limiter, 'tok');
    expect(back).toMatchObject({ allowed: true, shared: true, reason: 'within_limit' });
    expect(await limiter.consume('tok')).toMatchObject({ shared: true });
  });

  test('a stopped database, restarted on the same port: local answers in time, shared again after the restart', async () => {
    const limiter = await newLimiter({ name: 'default', limit: 1000, windowMs: WINDOW_MS }, 'stopped', testClock().now);
    expect(await limiter.consume('tok')).toMatchObject({ shared: true });

    await server.stop();
    try {
      const local = await expectLocalAnswersInTime(limiter, 'tok', 4);
      for (const d of local) expect(d).toMatchObject({ allowed: true, reason: 'local_fallback' });
    } finally {
      await server.restart();
    }

    const back = await untilShared(limiter, 'tok');
    expect(back).toMatchObject({ allowed: true, shared: true, reason: 'within_limit' });
    expect(await limiter.consume('tok')).toMatchObject({ shared: true });
  });

  test('refused by the local window during an outage, then shared again; late commits only ever add', async () => {
    const policy: RateLimitPolicy = { name: 'default', limit: 3, windowMs: WINDOW_MS };
    const clock = testClock();
    const limiter = await newLimiter(policy, 'refused', clock.now);
    const windowNumber = Math.floor(START_MS / WINDOW_MS);
    expect(await limiter.consume('tok')).toMatchObject({ allowed: true, shared: true, remaining: 2 });

    await server.suspend();
    let local: Decision[];
    try {
      local = await expectLocalAnswersInTime(limiter, 'tok', 4);
    } finally {
      await server.resume();
    }
    // The local window starts from the shared count this instance last saw (1): two allowed, then refused.
    expect(local.map((d) => [d.allowed, d.reason])).toEqual([
      [true, 'local_fallback'],
      [true, 'local_fallback'],
      [false, 'limit'],
      [false, 'limit'],
    ]);
    expect(local[3]?.retryAfterMs).toBeGreaterThan(0);

    // Back: the two local grants are written into the shared window. The
    // abandoned transactions may still commit too; they can only add (stricter).
    const back = await untilShared(limiter, 'tok');
    expect(back.shared).toBe(true);
    const stored = (await server.read('refused/tok')) as Record<string, number>;
    expect(stored[String(windowNumber)]).toBeGreaterThanOrEqual(policy.limit);
    expect(back.allowed).toBe(false);

    // The next window starts a fresh shared budget.
    clock.jump(WINDOW_MS);
    expect(await limiter.consume('tok')).toMatchObject({ allowed: true, shared: true, remaining: 2 });
  });
});
