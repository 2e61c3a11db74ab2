import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { startAppWorker, type AppWorker } from '../support/app-worker';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';
import { PRICED_STATUS } from '../support/mcp-test-app';

/**
 * Three firelimit processes (real app, real auth on one shared token file,
 * rtdb limiter each on its own firebase-admin connection) share one RTDB and
 * one token. The published limit holds across them: 300 tools/call requests
 * spread round-robin, 120 succeed and 180 are refused with a JSON-RPC 429.
 * The workers' clocks are fixed 10 s into one window, so it cannot roll over
 * mid-test however slow the machine is.
 */
const NOW_MS = 1_699_999_990_000;
const WINDOW_END_MS = 1_700_000_040_000;
const LIMIT = 120;
const REQUESTS = 300;
const IN_FLIGHT_PER_INSTANCE = 5;

let server: RtdbTestServer;
let dir: string;
let secret: string;
let tokenId: string;
const workers: AppWorker[] = [];

beforeAll(async () => {
  server = await rtdbForTests();
  dir = mkdtempSync(path.join(tmpdir(), 'firelimit-cross-instance-'));
  const tokensFile = path.join(dir, 'tokens.json');
  const store = new FileTokenStore({ path: tokensFile });
  const created = await new TokenService({ store }).create({ name: 'cross-instance' });
  await store.close();
  secret = created.secret;
  tokenId = created.token.id;

  const env = {
    ...PRICED_STATUS,
    RATE_LIMIT_PER_MINUTE: String(LIMIT),
    // Fail closed with a long deadline: a slow transaction must show up as a 503, never as an extra success.
    RATE_LIMIT_FAILURE_POLICY: 'fail-closed',
    RATE_LIMIT_TIMEOUT_MS: '30000',
    // Each instance's first sign-ins reserve a failed attempt on the shared store before the secret is checked,
    // all from 127.0.0.1: 15 in flight at once must not spend the default budget of 10 and answer 429s of their own.
    AUTH_FAILURES_PER_MINUTE: '1000',
  };
  const started = await Promise.allSettled(
    [0, 1, 2].map(() => startAppWorker(server.host, { databaseUrl: server.databaseUrl, tokensFile, env, nowMs: NOW_MS })),
  );
  for (const result of started) if (result.status === 'fulfilled') workers.push(result.value);
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}, 90_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  await server?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

interface Outcome {
  readonly instance: number;
  readonly status: number;
  readonly retryAfter: string | null;
  readonly remainingHeader: string | null;
  readonly body: { id?: unknown; result?: { structuredContent?: { shared?: boolean } }; error?: { code: number; message: string; data?: Record<string, unknown> } };
}

async function callTool(instance: number, id: number): Promise<Outcome> {
  const port = (workers[instance] as AppWorker).port;
  const response = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${secret}`, Accept: 'application/json, text/event-stream', 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } }),
  });
  return {
    instance,
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    remainingHeader: response.headers.get('x-ratelimit-remaining'),
    body: (await response.json()) as Outcome['body'],
  };
}

test('300 tools/call over three instances with a limit of 120: exactly 120 succeed, 180 get a JSON-RPC 429 with Retry-After', async () => {
  // Request i goes to instance i % 3; each instance keeps a few requests in flight, all three at once.
  const perInstance = await Promise.all(
    [0, 1, 2].map(async (instance) => {
      const ids = Array.from({ length: REQUESTS / 3 }, (_, k) => k * 3 + instance);
      const outcomes: Outcome[] = [];
      for (let start = 0; start < ids.length; start += IN_FLIGHT_PER_INSTANCE) {
        const batch = ids.slice(start, start + IN_FLIGHT_PER_INSTANCE);
        outcomes.push(...(await Promise.all(batch.map((id) => callTool(instance, id)))));
      }
      return outcomes;
    }),
  );
  const all = perInstance.flat();

  expect(all).toHaveLength(REQUESTS);
  const statuses = all.reduce<Record<number, number>>((acc, o) => ({ ...acc, [o.status]: (acc[o.status] ?? 0) + 1 }), {});
  expect(statuses).toEqual({ 200: LIMIT, 429: REQUESTS - LIMIT });

  const ok = all.filter((o) => o.status === 200);
  expect(ok.every((o) => o.body.result?.structuredContent?.shared === true)).toBe(true);
  // Every instance served some of the budget: it was really contended, not spent by one.
  for (let instance = 0; instance < 3; instance++) expect(ok.some((o) => o.instance === instance)).toBe(true);
  // The remaining figures handed out are each of 0..119 exactly once: one counter, no double spending.
  expect(ok.map((o) => Number(o.remainingHeader)).sort((a, b) => a - b)).toEqual(Array.from({ length: LIMIT }, (_, i) => i));

  const refused = all.filter((o) => o.status === 429);
  const retryAfterSeconds = Math.ceil((WINDOW_END_MS - NOW_MS) / 1000);
  for (const o of refused) {
    expect(o.retryAfter).toBe(String(retryAfterSeconds));
    expect(o.body).toMatchObject({
      jsonrpc: '2.0',
      error: { code: -32029, message: expect.stringContaining(`Retry after ${retryAfterSeconds} s`), data: { retryAfterSeconds, limit: LIMIT } },
    });
    expect(typeof o.body.id).toBe('number');
  }

  expect(await server.read(`rateLimits/${tokenId}`)).toEqual({ [Math.floor(NOW_MS / 60_000)]: LIMIT, e: WINDOW_END_MS });
}, 120_000);
