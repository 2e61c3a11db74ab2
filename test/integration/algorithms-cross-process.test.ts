import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { burst, callStatus, roomInWindow, sleepUntil, warmToken, type StatusPolicy, type TimedResponse } from '../support/mcp-calls';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';
import { startReadyServer, type ServerProcess } from '../support/server-process';
import { PRICED_STATUS } from '../support/mcp-test-app';

/**
 * Every algorithm's promise, held across THREE real server processes
 * (src/server.ts, configured only by environment) sharing one backend, on
 * RTDB and on Redis. Each case fires a burst spread over the three processes
 * at once and checks the exact count the algorithm promises, then that a
 * refusal's Retry-After (and JSON-RPC data.retryAfterSeconds) is honoured: a
 * call made once it has passed succeeds.
 *
 * One set of processes per backend serves every case: the default tier comes
 * from RATE_LIMIT_ALGORITHM / RATE_LIMIT_PER_MINUTE / RATE_LIMIT_BURST (a token
 * bucket), the others from one LIMITS_FILE with a tier per algorithm, windows
 * of seconds so nothing waits a minute, and one token per tier. The two
 * backends run each case side by side, so the waits are paid once, and the
 * longest case (two limits, which waits out a 10 s window) runs beside the others.
 *
 * Time: the processes share this machine's clock, so the decision for a call
 * was taken at or after its `sentAtMs` and at or before its `receivedAtMs`;
 * every bound below is written with those, so a slow, loaded machine makes a
 * bound looser, never wrong. The shared backend gets a long deadline and
 * fail-closed: a slow backend then shows up as a 503, never as a count quietly
 * taken from one process's local window.
 */

const DEFAULT_TIER = { perMinute: 20, burst: 4 }; // token bucket: 4 at once, then one every 3 s
// Windows are seconds long, not less: a burst through three processes on a loaded machine can take a second.
const FIXED = { limit: 4, windowMs: 6_000 };
const SLIDING = { limit: 4, windowMs: 6_000 };
const LOG = { limit: 4, windowMs: 4_000 };
const LEAKY = { limit: 1, windowMs: 2_000, burst: 3 }; // one every 2 s, 3 at once
const COMBO_BUCKET = { limit: 2, windowMs: 3_000, burst: 3 }; // a token every 1.5 s
const COMBO_WINDOW = { limit: 5, windowMs: 15_000 };

const LIMITS_FILE = {
  tiers: {
    fixed: { limits: [{ algorithm: 'fixed-window', limit: FIXED.limit, window: `${FIXED.windowMs / 1000}s` }] },
    sliding: { limits: [{ algorithm: 'sliding-window', limit: SLIDING.limit, window: `${SLIDING.windowMs / 1000}s` }] },
    log: { limits: [{ algorithm: 'sliding-log', limit: LOG.limit, window: '4s' }] },
    leaky: { limits: [{ algorithm: 'leaky-bucket', limit: LEAKY.limit, window: '2s', burst: LEAKY.burst }] },
    combo: {
      limits: [
        { algorithm: 'token-bucket', limit: COMBO_BUCKET.limit, window: `${COMBO_BUCKET.windowMs / 1000}s`, burst: COMBO_BUCKET.burst },
        { algorithm: 'fixed-window', limit: COMBO_WINDOW.limit, window: `${COMBO_WINDOW.windowMs / 1000}s` },
      ],
    },
  },
};

const TIERS = ['default', 'fixed', 'sliding', 'log', 'leaky', 'combo'] as const;
type TierName = (typeof TIERS)[number];

type BackendName = 'rtdb' | 'redis';

interface Cluster {
  readonly backend: BackendName;
  readonly servers: readonly ServerProcess[];
  readonly ports: readonly number[];
}

let dir: string;
const secrets = {} as Record<TierName, string>;
let rtdb: RtdbTestServer | undefined;
let redis: RedisServer | undefined;
const clusters: Cluster[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-algorithms-'));
  const tokensFile = path.join(dir, 'tokens.json');
  const limitsFile = path.join(dir, 'limits.json');
  await writeFile(limitsFile, JSON.stringify(LIMITS_FILE));
  const store = new FileTokenStore({ path: tokensFile });
  const service = new TokenService({ store });
  for (const tier of TIERS) secrets[tier] = (await service.create({ name: `algorithms-${tier}`, tier })).secret;
  await store.close();

  [rtdb, redis] = await Promise.all([rtdbForTests(), startRedisServer()]);
  const common = {
    ...PRICED_STATUS,
    TOKENS_FILE: tokensFile,
    LIMITS_FILE: limitsFile,
    RATE_LIMIT_ALGORITHM: 'token-bucket',
    RATE_LIMIT_PER_MINUTE: String(DEFAULT_TIER.perMinute),
    RATE_LIMIT_BURST: String(DEFAULT_TIER.burst),
    // A slow shared backend must be a visible 503, not a silent local count (see above).
    RATE_LIMIT_FAILURE_POLICY: 'fail-closed',
    RATE_LIMIT_TIMEOUT_MS: '10000',
    // Bursts of first sign-ins reserve sign-in attempts; not what is under test here.
    AUTH_FAILURES_PER_MINUTE: '1000',
    TOKEN_CACHE_TTL_MS: '60000',
  };
  const envs: Record<BackendName, Record<string, string>> = {
    rtdb: { ...common, RATE_LIMIT_BACKEND: 'rtdb', FIREBASE_DATABASE_URL: rtdb.databaseUrl, FIREBASE_DATABASE_EMULATOR_HOST: rtdb.host },
    redis: { ...common, RATE_LIMIT_BACKEND: 'redis', REDIS_URL: redis.url },
  };
  const backends: BackendName[] = ['rtdb', 'redis'];
  // All six at once: on two loaded cores a start takes seconds, and they overlap.
  const taken = new Set<number>();
  const started = await Promise.allSettled(backends.flatMap((backend) => [0, 1, 2].map(() => startDistinctServer(envs[backend], taken))));
  const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed !== undefined) {
    await Promise.all(servers.map((server) => server.kill()));
    throw failed.reason;
  }
  backends.forEach((backend, b) => {
    const own = servers.slice(3 * b, 3 * b + 3);
    clusters.push({ backend, servers: own, ports: own.map((server) => server.port) });
  });
  // Each process verifies and caches every token now, so no burst pays for a first sign-in.
  const warmed = await Promise.all(clusters.flatMap((c) => c.ports.map(async (port) => {
    const statuses: number[] = [];
    for (const tier of TIERS) statuses.push(await warmToken(port, secrets[tier]));
    return statuses;
  })));
  expect(warmed.flat().filter((status) => status !== 400)).toEqual([]);
  for (const server of clusters.flatMap((c) => c.servers)) expect(server.child.exitCode).toBeNull();
}, 180_000);

/**
 * A ready server on a port no other server of this file holds, still running.
 * Six free-port probes race each other (and other suites on this machine): a
 * start that lost its port is retried, and a process that exited while another
 * answered its /healthz on the same port is never counted as one of the three.
 */
async function startDistinctServer(env: Record<string, string>, taken: Set<number>): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    let server: ServerProcess | undefined;
    try {
      server = await startReadyServer(env, 90_000);
    } catch (error) {
      if (attempt >= 3) throw error;
      continue;
    }
    if (!taken.has(server.port) && server.child.exitCode === null && server.child.signalCode === null) {
      taken.add(server.port);
      return server;
    }
    await server.kill();
    if (attempt >= 3) throw new Error(`no distinct running server after ${attempt} starts (port ${server.port})\n${server.stderr()}`);
  }
}

afterAll(async () => {
  await Promise.all(clusters.flatMap((c) => c.servers.map((server) => server.kill())));
  await rtdb?.close();
  await redis?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** Runs the case on both backends side by side; a failure names its backend. */
async function onEachBackend(scenario: (c: Cluster) => Promise<void>): Promise<void> {
  const results = await Promise.allSettled(clusters.map((c) => scenario(c)));
  const failures = results.flatMap((result, i) => (result.status === 'rejected' ? [{ backend: (clusters[i] as Cluster).backend, error: result.reason as unknown }] : []));
  if (failures.length === 0) return;
  const message = failures.map(({ backend, error }) => `[${backend}] ${error instanceof Error ? error.message : String(error)}`).join('\n\n');
  const first = failures[0]?.error;
  const error = new Error(message);
  if (first instanceof Error && first.stack !== undefined) error.stack = `${message}\n${first.stack.split('\n').slice(1).join('\n')}`;
  throw error;
}

function show(r: TimedResponse): string {
  return `${r.status} on :${r.port} ${JSON.stringify(r.body).slice(0, 400)}`;
}

function retryAfterSeconds(r: TimedResponse): number {
  return Number(r.headers['retry-after']);
}

/** When a client that obeys this refusal calls again: Retry-After counted from when the refusal arrived. */
function retryDeadline(r: TimedResponse): number {
  return r.receivedAtMs + retryAfterSeconds(r) * 1000;
}

function earliest(rs: readonly TimedResponse[], of: (r: TimedResponse) => number): number {
  return Math.min(...rs.map(of));
}

function latest(rs: readonly TimedResponse[], of: (r: TimedResponse) => number): number {
  return Math.max(...rs.map(of));
}

/** First call sent to last answer received: the longest the burst's decisions can have been apart. */
function spanMs(rs: readonly TimedResponse[]): number {
  return latest(rs, (r) => r.receivedAtMs) - earliest(rs, (r) => r.sentAtMs);
}

function remainingOf(r: TimedResponse): number | undefined {
  return r.body.result?.structuredContent?.remaining;
}

function policyOf(r: TimedResponse, name: string): StatusPolicy {
  const policy = r.body.result?.structuredContent?.policies.find((p) => p.name === name);
  if (policy === undefined) throw new Error(`no policy ${name} in ${show(r)}`);
  return policy;
}

/**
 * Every answer is a shared decision: 200 counted by the shared store, or 429
 * refused by it with a Retry-After that the JSON-RPC error repeats. Anything
 * else (a 503 from a slow backend, a 401) fails here, by name.
 */
function decisions(c: Cluster, tier: TierName, rs: readonly TimedResponse[]): { allowed: TimedResponse[]; refused: TimedResponse[] } {
  expect(rs.filter((r) => r.status !== 200 && r.status !== 429).map(show)).toEqual([]);
  const allowed = rs.filter((r) => r.status === 200);
  const refused = rs.filter((r) => r.status === 429);
  for (const r of allowed) {
    expect(r.body.result?.structuredContent).toMatchObject({ shared: true, reason: 'within_limit', backend: c.backend, tier });
  }
  for (const r of refused) {
    expect(r.body.error?.code).toBe(-32029);
    expect(r.body.error?.data).toMatchObject({ error: 'rate_limited', reason: 'limit' });
    const seconds = retryAfterSeconds(r);
    expect(Number.isInteger(seconds) && seconds >= 1).toBe(true);
    expect(r.body.error?.data?.retryAfterSeconds).toBe(seconds);
  }
  return { allowed, refused };
}

/** The documented bound on an exact Retry-After due at `dueAtMs`: whole seconds, rounded up, from when the decision was taken. */
function expectRetryAfterFor(r: TimedResponse, dueAtMs: { earliest: number; latest: number }): void {
  const seconds = retryAfterSeconds(r);
  expect(seconds).toBeGreaterThanOrEqual(Math.max(1, Math.ceil((dueAtMs.earliest - r.receivedAtMs) / 1000)));
  expect(seconds).toBeLessThanOrEqual(Math.max(1, Math.ceil((dueAtMs.latest - r.sentAtMs) / 1000)));
}

/**
 * The refusals decided on the burst's final state: those reporting the latest
 * `data.resetAt` (exact to the ms; a bucket's full time, a TAT, a log's newest
 * entry, a window's end: it moves only when units are spent). Only their
 * Retry-After is a promise about what follows. One decided mid-burst was exact
 * for the state it saw, "if nothing else happens", but the burst's later
 * allowed calls did happen: e.g. GCRA refuses a caller whose clock lags the
 * stored TAT by a few ms while one unit is still free, with a Retry-After of
 * ~1 ms, and the next caller then takes that unit.
 */
function finalRefusals(refused: readonly TimedResponse[]): TimedResponse[] {
  const resetOf = (r: TimedResponse): number => Date.parse(r.body.error?.data?.resetAt ?? '');
  const last = latest(refused, resetOf);
  expect(Number.isFinite(last)).toBe(true);
  return refused.filter((r) => resetOf(r) === last);
}

/**
 * Obeys, of the refusals decided on the final state, the one that allows the
 * earliest retry (the strictest test of them): waits until its Retry-After has
 * passed, then calls once, on another process than the one that refused. That
 * call must be allowed.
 */
async function honourRetryAfter(c: Cluster, tier: TierName, refused: readonly TimedResponse[]): Promise<TimedResponse> {
  expect(refused.length).toBeGreaterThan(0);
  const first = finalRefusals(refused).reduce((a, b) => (retryDeadline(b) < retryDeadline(a) ? b : a));
  await sleepUntil(retryDeadline(first));
  const port = c.ports.find((p) => p !== first.port) as number;
  const retry = await callStatus(port, secrets[tier], 'retry');
  expect(show(retry)).toMatch(/^200 /);
  decisions(c, tier, [retry]);
  return retry;
}

/**
 * A fresh bucket emptied by a burst has its next unit one interval after the
 * first allowed decision, which was taken between the first call sent and the
 * first allowed answer. Refusals on the final state say exactly that (in whole
 * seconds, rounded up, from their own decision); earlier ones, no later.
 */
function expectBucketRetryAfter(allowed: readonly TimedResponse[], refused: readonly TimedResponse[], all: readonly TimedResponse[], intervalMs: number): void {
  const due = { earliest: earliest(all, (r) => r.sentAtMs) + intervalMs, latest: earliest(allowed, (r) => r.receivedAtMs) + intervalMs };
  for (const r of finalRefusals(refused)) expectRetryAfterFor(r, due);
  for (const r of refused) expectRetryAfterFor(r, { earliest: Number.NEGATIVE_INFINITY, latest: due.latest });
}

function expectPolicyHeader(rs: readonly TimedResponse[], policy: string): void {
  for (const r of rs) expect(r.headers['ratelimit-policy']).toBe(policy);
}

/** The burst's remaining figures: one shared state counting down, never two processes handing out the same unit. */
function expectCountdown(allowed: readonly TimedResponse[], from: number): void {
  expect(sortedRemaining(allowed)).toEqual(Array.from({ length: from }, (_, i) => i));
}

/**
 * GCRA reports what is left as seen from the caller's own clock, and a caller
 * whose clock lags the stored TAT by a few ms (its nowMs is read before the
 * store runs it; an RTDB transaction re-run keeps it) is answered more
 * strictly: one unit fewer, never one more. So the countdown is at most 0, 1, 2, ...
 */
function expectCountdownAtMost(allowed: readonly TimedResponse[], from: number): void {
  const sorted = sortedRemaining(allowed);
  expect(sorted).toHaveLength(from);
  sorted.forEach((remaining, i) => expect(remaining).toBeLessThanOrEqual(i));
  expect(sorted[0]).toBe(0);
}

function sortedRemaining(allowed: readonly TimedResponse[]): number[] {
  return allowed.map((r) => remainingOf(r) ?? Number.NaN).sort((a, b) => a - b);
}

test('fixed-window: exactly the limit in one window across three processes; Retry-After is the window end and is honoured', () =>
  onEachBackend(async (c) => {
    const { limit, windowMs } = FIXED;
    const start = await roomInWindow(windowMs, 4_000);
    const end = start + windowMs;
    const responses = await burst(c.ports, secrets.fixed, 3 * limit);
    // The claim is about one window: the burst must have been inside it.
    expect(earliest(responses, (r) => r.sentAtMs)).toBeGreaterThanOrEqual(start);
    expect(latest(responses, (r) => r.receivedAtMs)).toBeLessThan(end);

    const { allowed, refused } = decisions(c, 'fixed', responses);
    expect(allowed).toHaveLength(limit);
    expect(refused).toHaveLength(2 * limit);
    expectCountdown(allowed, limit);
    expectPolicyHeader(responses, `"fixed";q=${limit};w=${windowMs / 1000}`);
    for (const r of refused) {
      expect(r.headers['x-ratelimit-reset']).toBe(String(end / 1000));
      expect(r.body.error?.data).toMatchObject({ limit, windowSeconds: windowMs / 1000, resetAt: new Date(end).toISOString() });
      expectRetryAfterFor(r, { earliest: end, latest: end });
    }

    const retry = await honourRetryAfter(c, 'fixed', refused);
    expect(retry.sentAtMs).toBeGreaterThanOrEqual(end);
    expect(remainingOf(retry)).toBe(limit - 1); // a new window, counted from zero
  }));

test('sliding-window: exactly the limit in a clock window, then the weighted bound limit + previous × elapsed / window', () =>
  onEachBackend(async (c) => {
    const { limit, windowMs } = SLIDING;
    const start = await roomInWindow(windowMs, 4_000);
    const end = start + windowMs;
    const first = await burst(c.ports, secrets.sliding, 2 * limit);
    expect(earliest(first, (r) => r.sentAtMs)).toBeGreaterThanOrEqual(start);
    expect(latest(first, (r) => r.receivedAtMs)).toBeLessThan(end);

    // A fresh key has no previous window: the estimate is the count, so exactly `limit` pass.
    const { allowed, refused } = decisions(c, 'sliding', first);
    expect(allowed).toHaveLength(limit);
    expectCountdown(allowed, limit);
    expectPolicyHeader(first, `"sliding";q=${limit};w=${windowMs / 1000}`);
    // The next call fits once limit × (1 − x / window) + 1 ≤ limit in the next window: x = window / limit.
    const fitsAt = end + windowMs / limit;
    for (const r of refused) expectRetryAfterFor(r, { earliest: fitsAt, latest: fitsAt });

    const retry = await honourRetryAfter(c, 'sliding', refused);
    const second = await burst(c.ports, secrets.sliding, 2 * limit);
    const next = [retry, ...second];
    const lastAt = latest(next, (r) => r.receivedAtMs);
    expect(retry.sentAtMs).toBeGreaterThanOrEqual(end);
    expect(lastAt).toBeLessThan(end + windowMs); // all of it in the window after the first burst's
    const { allowed: secondAllowed, refused: secondRefused } = decisions(c, 'sliding', second);
    const inNext = 1 + secondAllowed.length;

    // docs/algorithms.md: windows n−1 and n together hold at most limit + previousCount × elapsed / windowMs
    // (here previousCount = limit), every clock window at most limit, any windowMs fewer than 2 × limit.
    const upTo = (atMs: number): number => Math.floor((limit * (atMs - end)) / windowMs);
    expect(limit + inNext).toBeLessThanOrEqual(limit + upTo(lastAt));
    expect(inNext).toBeLessThanOrEqual(limit);
    expect(limit + inNext).toBeLessThan(2 * limit);
    // And no fewer than the estimate allowed when the second burst began (a refusal means it was spent).
    if (secondRefused.length > 0) expect(inNext).toBeGreaterThanOrEqual(upTo(earliest(second, (r) => r.sentAtMs)));
  }));

test('sliding-log: exactly the limit in any window from the first call (half a window later, still nothing); Retry-After is when the oldest call leaves', () =>
  onEachBackend(async (c) => {
    const { limit, windowMs } = LOG;
    const first = await burst(c.ports, secrets.log, 2 * limit);
    const t0 = earliest(first, (r) => r.sentAtMs);
    expect(latest(first, (r) => r.receivedAtMs)).toBeLessThan(t0 + windowMs);
    const { allowed, refused } = decisions(c, 'log', first);
    expect(allowed).toHaveLength(limit);
    expectCountdown(allowed, limit);
    expectPolicyHeader(first, `"log";q=${limit};w=${windowMs / 1000}`);

    // Half a window later (wherever the clock's window edges fall): still nothing, it is the same window of the log.
    await sleepUntil(t0 + windowMs / 2);
    const second = await burst(c.ports, secrets.log, 2 * limit);
    const inside = second.filter((r) => r.receivedAtMs < t0 + windowMs);
    expect(inside.length).toBeGreaterThan(0);
    expect(inside.filter((r) => r.status !== 429).map(show)).toEqual([]);
    const { refused: secondRefused } = decisions(c, 'log', inside);

    // The oldest admitted call was decided between t0 and the first allowed answer; it leaves one window later.
    const oldestLeaves = { earliest: t0 + windowMs, latest: earliest(allowed, (r) => r.receivedAtMs) + windowMs };
    for (const r of [...refused, ...secondRefused]) {
      expectRetryAfterFor(r, oldestLeaves);
      expect(retryDeadline(r)).toBeGreaterThanOrEqual(t0 + windowMs); // never an invitation inside the window
    }
    await honourRetryAfter(c, 'log', [...refused, ...secondRefused]);
  }));

test('token-bucket (RATE_LIMIT_ALGORITHM, RATE_LIMIT_PER_MINUTE, RATE_LIMIT_BURST): exactly the burst at once, then one per refill interval', () =>
  onEachBackend(async (c) => {
    const { perMinute, burst: size } = DEFAULT_TIER;
    const refillMs = 60_000 / perMinute;
    const responses = await burst(c.ports, secrets.default, 3 * size);
    const { allowed, refused } = decisions(c, 'default', responses);
    // Promise: at most burst + limit × t / window in any t; a fresh bucket is full, so at least the burst.
    // Exact (the burst) whenever the burst took less than one refill interval, as it does unless the machine stalls.
    expect(allowed.length).toBeGreaterThanOrEqual(size);
    expect(allowed.length).toBeLessThanOrEqual(size + Math.floor(spanMs(responses) / refillMs));
    if (spanMs(responses) < refillMs) {
      expect(allowed).toHaveLength(size);
      expectCountdown(allowed, size);
    }
    // A bucket publishes its rate as the quota and its burst beside it.
    expectPolicyHeader(responses, `"default";q=${perMinute};w=60;burst=${size}`);
    // The tier's limits; rate_limit_status also lists the free-call limit beside them (scope "free").
    expect(allowed[0]?.body.result?.structuredContent?.policies.filter((p) => p.scope === 'tier')).toEqual([
      expect.objectContaining({ name: 'default', algorithm: 'token-bucket', limit: perMinute, windowSeconds: 60, burst: size }),
    ]);
    // An empty bucket has its next token one refill interval after it was first drawn on.
    if (allowed.length === size) expectBucketRetryAfter(allowed, refused, responses, refillMs);
    await honourRetryAfter(c, 'default', refused);
  }));

test('leaky-bucket (GCRA): exactly the burst tolerance at once, then one per emission interval', () =>
  onEachBackend(async (c) => {
    const { limit, windowMs, burst: size } = LEAKY;
    const intervalMs = windowMs / limit;
    const responses = await burst(c.ports, secrets.leaky, 3 * size);
    const { allowed, refused } = decisions(c, 'leaky', responses);
    expect(allowed.length).toBeGreaterThanOrEqual(size);
    expect(allowed.length).toBeLessThanOrEqual(size + Math.floor(spanMs(responses) / intervalMs));
    if (spanMs(responses) < intervalMs) {
      expect(allowed).toHaveLength(size);
      expectCountdownAtMost(allowed, size);
    }
    expectPolicyHeader(responses, `"leaky";q=${limit};w=${windowMs / 1000};burst=${size}`);
    // TAT is burst × T past the first allowed decision; the next unit fits (burst − 1) × T before it.
    if (allowed.length === size) expectBucketRetryAfter(allowed, refused, responses, intervalMs);
    await honourRetryAfter(c, 'leaky', refused);
  }));

// Concurrent: jest starts it once beforeAll is done, beside the cases above (its own token and tier, so
// nothing is shared but the processes); it mostly waits for refills and its window's end, ~10 s of the file.
test.concurrent('two limits in one tier (token-bucket burst 3 + fixed-window 5 per 15 s) are all or nothing across three processes', () =>
  onEachBackend(async (c) => {
    const bucketName = `combo-${COMBO_BUCKET.windowMs / 1000}s`;
    const windowName = `combo-${COMBO_WINDOW.windowMs / 1000}s`;
    const policies = `"${bucketName}";q=${COMBO_BUCKET.limit};w=${COMBO_BUCKET.windowMs / 1000};burst=${COMBO_BUCKET.burst}, "${windowName}";q=${COMBO_WINDOW.limit};w=${COMBO_WINDOW.windowMs / 1000}`;
    const refillMs = COMBO_BUCKET.windowMs / COMBO_BUCKET.limit;
    // Room for: the burst, two refills, the bucket filling up again, and a refusal well before the window ends.
    const start = await roomInWindow(COMBO_WINDOW.windowMs, 11_000);
    const end = start + COMBO_WINDOW.windowMs;

    // 1. The bucket refuses most of a burst; the refusals must not be charged to the window.
    const first = await burst(c.ports, secrets.combo, 2 * COMBO_BUCKET.burst);
    expect(earliest(first, (r) => r.sentAtMs)).toBeGreaterThanOrEqual(start);
    const { allowed, refused } = decisions(c, 'combo', first);
    expect(allowed.length).toBeGreaterThanOrEqual(COMBO_BUCKET.burst);
    expect(allowed.length).toBeLessThanOrEqual(COMBO_BUCKET.burst + Math.floor(spanMs(first) / refillMs));
    expectPolicyHeader(first, policies);
    for (const r of refused) {
      // The bucket binds: its figures in x-ratelimit-* and data, its refill in Retry-After.
      expect(r.headers['x-ratelimit-limit']).toBe(String(COMBO_BUCKET.burst));
      expect(r.body.error?.data).toMatchObject({ limit: COMBO_BUCKET.limit, burst: COMBO_BUCKET.burst, windowSeconds: COMBO_BUCKET.windowMs / 1000 });
    }
    if (allowed.length === COMBO_BUCKET.burst) expectBucketRetryAfter(allowed, refused, first, refillMs);

    // 2. Once the bucket has a token, the window has spent exactly what was allowed, not what was refused.
    let spent = allowed.length;
    let last = await honourRetryAfter(c, 'combo', refused);
    spent++;
    expectPolicyHeader([last], policies);
    expect(policyOf(last, windowName).remaining).toBe(COMBO_WINDOW.limit - spent);
    // 3. Spend the rest of the window, one refill at a time, each on the next process.
    while (spent < COMBO_WINDOW.limit) {
      await sleepUntil(last.receivedAtMs + refillMs);
      last = await callStatus(c.ports[spent % c.ports.length] as number, secrets.combo, spent);
      expect(show(last)).toMatch(/^200 /);
      spent++;
      expect(policyOf(last, windowName).remaining).toBe(COMBO_WINDOW.limit - spent);
    }

    // 4. With the bucket full again, the window refuses a call on every process; those must not spend the bucket.
    const bucketFullAt = Date.parse(policyOf(last, bucketName).resetAt);
    const refuseAt = Math.max(bucketFullAt + 50, end - 1_500);
    expect(refuseAt).toBeLessThanOrEqual(end - 1_000); // else the machine was too slow for the check below to mean anything
    await sleepUntil(refuseAt);
    const second = await burst(c.ports, secrets.combo, c.ports.length);
    expect(latest(second, (r) => r.receivedAtMs)).toBeLessThan(end);
    const { allowed: none, refused: windowRefused } = decisions(c, 'combo', second);
    expect(none.map(show)).toEqual([]);
    expectPolicyHeader(second, policies);
    for (const r of windowRefused) {
      expect(r.headers['x-ratelimit-limit']).toBe(String(COMBO_WINDOW.limit));
      expect(r.body.error?.data).toMatchObject({ limit: COMBO_WINDOW.limit, windowSeconds: COMBO_WINDOW.windowMs / 1000 });
      expectRetryAfterFor(r, { earliest: end, latest: end });
    }

    // 5. After Retry-After: a new window, and a full bucket. Had the refusals in 4 taken its tokens, it would
    //    have refilled (now − refuseAt) / 1.5 s < 3 of them (checked), leaving at most 1 after this call.
    const after = await honourRetryAfter(c, 'combo', windowRefused);
    expect(after.receivedAtMs - refuseAt).toBeLessThan(3 * refillMs);
    expect(policyOf(after, windowName).remaining).toBe(COMBO_WINDOW.limit - 1);
    expect(policyOf(after, bucketName).remaining).toBe(COMBO_BUCKET.burst - 1);
  }));
