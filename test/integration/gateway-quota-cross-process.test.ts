import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { postMcp, sleep, warmToken, type TimedResponse } from '../support/mcp-calls';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';
import { startReadyServer, type ServerProcess } from '../support/server-process';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * THREE real server processes (src/server.ts, configured only by
 * environment) on one RTDB, then on one Redis, in front of one stub upstream MCP server that
 * records when each tools/call arrives. Callers on six tokens spread their
 * calls over the three processes and do what /developers tells them: on
 * "reserved" come back at slotAtMs, on "rejected" after retryAfterMs, with
 * the same arguments. The upstream must never see more than UPSTREAM_RATE
 * in any window, every reserved caller must run at or after its slot,
 * every call must run exactly once, and the upstream credential must not
 * appear in any process's output.
 *
 * Each reservation keeps UPSTREAM_GRACE_MS of the quota unused (the cursor
 * skips it so a late claim still keeps T, docs/adr/0032), so the share used
 * under a queue is about T / (T + grace); the grace here is 250 ms.
 *
 * The rate is 5/s with headroom 0.8, one slot every 250 ms: five slots span
 * 1000 ms, so the sixth arrives 250 ms after a window that held five, and a
 * loaded machine's forwarding jitter below that cannot break the bound.
 *
 * Half the tokens call `echo`, which also has a quota of its own in the
 * limits file (2/s at full headroom: one slot every 500 ms, docs/adr/0037);
 * the other half call `slow` (with no wait), held only to the shared quota.
 */

const RATE = { limit: 5, windowMs: 1000 };
const HEADROOM = 0.8;
const INTERVAL_MS = RATE.windowMs / (RATE.limit * HEADROOM);
const TOKENS = 6;
const CALLS_PER_TOKEN = 4;
const CREDENTIAL_SECRET = 'upq_secret_4b7e1a90c3';
const ECHO_RATE = { limit: 2, windowMs: 1000 };

describe.each(['rtdb', 'redis'] as const)('on %s', (backend) => {
  let dir: string;
  let rtdb: RtdbTestServer | undefined;
  let redis: RedisServer | undefined;
  let upstream: UpstreamStub | undefined;
  let servers: ServerProcess[] = [];
  const secrets: string[] = [];
  const answers = new Map<string, number>();

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-gateway-'));
    const tokensFile = path.join(dir, 'tokens.json');
    const store = new FileTokenStore({ path: tokensFile });
    const service = new TokenService({ store });
    for (let i = 0; i < TOKENS; i++) secrets.push((await service.create({ name: `caller-${i}`, tier: 'default' })).secret);
    await store.close();
    upstream = await startUpstreamStub();
    const limitsFile = path.join(dir, 'limits.json');
    await writeFile(limitsFile, JSON.stringify({ upstream: { tools: { echo: { rate: `${ECHO_RATE.limit}/s`, headroom: 1 } } } }));
    let backendEnv: Record<string, string>;
    if (backend === 'rtdb') {
      rtdb = await rtdbForTests();
      backendEnv = { RATE_LIMIT_BACKEND: 'rtdb', FIREBASE_DATABASE_URL: rtdb.databaseUrl, FIREBASE_DATABASE_EMULATOR_HOST: rtdb.host };
    } else {
      redis = await startRedisServer();
      backendEnv = { RATE_LIMIT_BACKEND: 'redis', REDIS_URL: redis.url };
    }
    const env = {
      TOKENS_FILE: tokensFile,
      ...backendEnv,
      RATE_LIMIT_PER_MINUTE: '10000',
      RATE_LIMIT_TIMEOUT_MS: '10000',
      AUTH_FAILURES_PER_MINUTE: '1000',
      TOKEN_CACHE_TTL_MS: '60000',
      LOG_FORMAT: 'json',
      UPSTREAM_MCP_URL: upstream.url,
      UPSTREAM_MCP_AUTHORIZATION: `Bearer ${CREDENTIAL_SECRET}`,
      UPSTREAM_RATE: `${RATE.limit}/s`,
      UPSTREAM_HEADROOM: String(HEADROOM),
      UPSTREAM_MAX_WAIT_MS: '3000',
      UPSTREAM_HOLD_MS: '300',
      UPSTREAM_GRACE_MS: process.env.GATEWAY_TEST_GRACE_MS ?? '250',
      LIMITS_FILE: limitsFile,
    };
    const started = await Promise.allSettled([0, 1, 2].map(() => startReadyServer(env, 90_000)));
    servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    expect(new Set(servers.map((s) => s.port)).size).toBe(3);
    for (const server of servers) for (const secret of secrets) expect(await warmToken(server.port, secret)).toBe(400);
  }, 180_000);

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.kill()));
    await upstream?.close();
    await rtdb?.close();
    await redis?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  interface Structured {
    readonly status?: string;
    readonly quota?: string;
    readonly slotAtMs?: number;
    readonly retryAfterMs?: number;
  }

  /** One logical call: `echo` with a distinct text, or `slow` with a distinct wait of a few ms. */
  interface Call {
    readonly tool: 'echo' | 'slow';
    readonly id: string;
    readonly args: Record<string, unknown>;
  }

  interface Ran {
    readonly call: Call;
    /** The slots this caller was given before it ran. */
    readonly slotsAtMs: number[];
    readonly tries: number;
  }

  const idOfArgs = (tool: string | undefined, args: unknown): string => (tool === 'echo' ? (args as { text: string }).text : `slow-${(args as { waitMs: number }).waitMs}`);

  /** One logical call, repeated as /developers says until it runs; each try on the next process. */
  async function callUntilRun(secret: string, call: Call, firstPort: number): Promise<Ran> {
    const slotsAtMs: number[] = [];
    for (let tries = 1; tries <= 40; tries++) {
      const port = (servers[(firstPort + tries) % servers.length] as ServerProcess).port;
      const response: TimedResponse = await postMcp(port, secret, { jsonrpc: '2.0', id: tries, method: 'tools/call', params: { name: call.tool, arguments: call.args } });
      const result = (response.body as { result?: { isError?: boolean; _meta?: Record<string, Structured> } }).result;
      const structured = result?._meta?.['firelimit/upstreamQuota'];
      const kind = structured?.status === undefined ? 'ran' : `${structured.status} ${structured.quota}${(structured as { reason?: string }).reason === undefined ? '' : ` ${(structured as { reason?: string }).reason}`}`;
      answers.set(kind, (answers.get(kind) ?? 0) + 1);
      if (result !== undefined && result.isError !== true) return { call, slotsAtMs, tries };
      if (structured?.status === 'reserved' && structured.slotAtMs !== undefined) {
        slotsAtMs.push(structured.slotAtMs);
        await sleep(structured.slotAtMs - Date.now());
      } else if (structured?.status === 'rejected' && structured.retryAfterMs !== undefined) {
        await sleep(structured.retryAfterMs);
      } else {
        throw new Error(`unexpected answer ${response.status}: ${JSON.stringify(response.body).slice(0, 300)}`);
      }
    }
    throw new Error(`${call.id} never ran`);
  }

  function worstWindowOf(arrivals: readonly number[], windowMs: number): number {
    let worst = 0;
    for (const start of arrivals) worst = Math.max(worst, arrivals.filter((at) => at >= start && at < start + windowMs).length);
    return worst;
  }

  it("never lets the upstream see more than UPSTREAM_RATE, nor echo more than its own quota, in any window; runs each reserved caller at or after its slot, and every call exactly once", async () => {
    const stub = upstream as UpstreamStub;
    const startedAtMs = Date.now();
    const ran = (
      await Promise.all(
        secrets.map(async (secret, t) => {
          const done: Ran[] = [];
          for (let n = 0; n < CALLS_PER_TOKEN; n++) {
            const call: Call = t % 2 === 0
              ? { tool: 'echo', id: `t${t}-c${n}`, args: { text: `t${t}-c${n}` } }
              : { tool: 'slow', id: `slow-${t * CALLS_PER_TOKEN + n}`, args: { waitMs: t * CALLS_PER_TOKEN + n } };
            done.push(await callUntilRun(secret, call, t + n));
          }
          return done;
        }),
      )
    ).flat();
    const finishedAtMs = Date.now();

    const calls = stub.calls();
    const ids = calls.map((call) => idOfArgs(call.tool, call.args)).sort();
    // Nothing lost, nothing run twice.
    expect(ids).toEqual(ran.map((r) => r.call.id).sort());
    expect(new Set(ids).size).toBe(TOKENS * CALLS_PER_TOKEN);

    // No window of windowMs holds more than the limit: the shared one over every call, echo's own over echo's.
    const arrivals = calls.map((call) => call.atMs).sort((a, b) => a - b);
    const echoArrivals = calls.filter((call) => call.tool === 'echo').map((call) => call.atMs).sort((a, b) => a - b);
    const worstWindow = worstWindowOf(arrivals, RATE.windowMs);
    const worstEchoWindow = worstWindowOf(echoArrivals, ECHO_RATE.windowMs);
    expect(worstWindow).toBeLessThanOrEqual(RATE.limit);
    expect(worstEchoWindow).toBeLessThanOrEqual(ECHO_RATE.limit);

    // A caller given a slot reached the upstream at or after it.
    const arrivalOf = new Map(calls.map((call) => [idOfArgs(call.tool, call.args), call.atMs]));
    for (const r of ran) for (const slotAtMs of r.slotsAtMs) expect(arrivalOf.get(r.call.id)).toBeGreaterThanOrEqual(slotAtMs);

    // The credential reached the upstream, and no process printed it.
    for (const call of calls) expect(call.headers.authorization).toBe(`Bearer ${CREDENTIAL_SECRET}`);
    for (const server of servers) expect(server.stdout() + server.stderr()).not.toContain(CREDENTIAL_SECRET);

    const gapsOf = (list: readonly number[]) => list.slice(1).map((at, i) => at - (list[i] as number));
    const closestGapMs = Math.min(...gapsOf(arrivals));
    const closestEchoGapMs = Math.min(...gapsOf(echoArrivals));
    const spanMs = (arrivals.at(-1) as number) - (arrivals[0] as number);
    const echoSpanMs = (echoArrivals.at(-1) as number) - (echoArrivals[0] as number);
    // Share of a rate used over the span the calls took: calls made / calls the rate allows in that span.
    const share = (arrivals.length - 1) / (spanMs / (RATE.windowMs / RATE.limit));
    const echoShare = (echoArrivals.length - 1) / (echoSpanMs / (ECHO_RATE.windowMs / ECHO_RATE.limit));
    const reserved = ran.reduce((n, r) => n + r.slotsAtMs.length, 0);
    process.stdout.write(
      `gateway quota, 3 processes on ${backend}: ${arrivals.length} calls in ${spanMs} ms (test ${finishedAtMs - startedAtMs} ms); ` +
        `closest two upstream calls ${closestGapMs} ms apart (interval ${INTERVAL_MS} ms); worst ${RATE.windowMs} ms window ${worstWindow}/${RATE.limit}; ` +
        `share of UPSTREAM_RATE used ${(share * 100).toFixed(1)}% (headroom ${HEADROOM * 100}%); ` +
        `echo's own quota: closest two ${closestEchoGapMs} ms apart (interval 500 ms), worst window ${worstEchoWindow}/${ECHO_RATE.limit}, share used ${(echoShare * 100).toFixed(1)}%; ` +
        `reserved answers ${reserved}, tries ${ran.reduce((n, r) => n + r.tries, 0)} (${[...answers].map(([k, n]) => `${k} ${n}`).join(', ')})\n`,
    );
  }, 120_000);
});
