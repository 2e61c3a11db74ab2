import type { RateLimitPolicy } from '../../src/library/window/policy';
import { startLimiterWorker, type LimiterWorker, type WorkerDecision } from '../support/limiter-worker';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';

/**
 * Three OS processes, each with its own firebase-admin app and its own
 * limiter, share one token's budget through RTDB. Their clocks are fixed in
 * the same window, so the window cannot roll while they run.
 */
const POLICY: RateLimitPolicy = { name: 'default', limit: 120, windowMs: 60_000 };
const NOW_MS = 1_700_000_010_000;
const PROCESSES = 3;
const PER_PROCESS = 100;
/** Consumes each process has in flight at once; every round, all three fire one batch together. */
const BATCH = 25;

let server: RtdbTestServer;
const workers: LimiterWorker[] = [];

beforeAll(async () => {
  server = await rtdbForTests();
  for (let i = 0; i < PROCESSES; i++) workers.push(startLimiterWorker(server.host));
  await Promise.all(
    workers.map((w) =>
      w.init({ databaseUrl: server.databaseUrl, rootPath: 'rateLimits', policy: POLICY, nowMs: NOW_MS, timeoutMs: 30_000 }),
    ),
  );
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  await server?.close();
});

test('three processes, 300 consumes interleaved: exactly 120 allowed, 180 refused, all shared', async () => {
  // Lock-step rounds: 75 consumes in flight across the three processes each
  // round, so the round that crosses the limit is contended by all of them.
  const perProcess: WorkerDecision[][] = workers.map(() => []);
  for (let round = 0; round < PER_PROCESS / BATCH; round++) {
    const answers = await Promise.all(workers.map((w) => w.run('tok_shared', BATCH, BATCH)));
    answers.forEach((decisions, i) => perProcess[i]?.push(...decisions));
  }
  const all = perProcess.flat();

  expect(all).toHaveLength(PROCESSES * PER_PROCESS);
  expect(all.filter((d) => d.allowed)).toHaveLength(120);
  expect(all.filter((d) => !d.allowed)).toHaveLength(180);
  expect(all.every((d) => d.shared)).toBe(true);
  expect(all.filter((d) => !d.allowed).every((d) => d.reason === 'limit' && d.remaining === 0)).toBe(true);
  // Every process got a share and met refusals: the budget really was shared.
  for (const decisions of perProcess) {
    expect(decisions.some((d) => d.allowed)).toBe(true);
    expect(decisions.some((d) => !d.allowed)).toBe(true);
  }

  expect(await server.read('rateLimits/tok_shared')).toEqual({
    [Math.floor(NOW_MS / POLICY.windowMs)]: 120,
    e: (Math.floor(NOW_MS / POLICY.windowMs) + 1) * POLICY.windowMs,
  });
});
