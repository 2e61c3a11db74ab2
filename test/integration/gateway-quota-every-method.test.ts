import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { startEverythingUpstream, startRecordingProxy, type EverythingUpstream, type RecordedMessage, type RecordingProxy } from '../support/everything-upstream';
import { postMcp, warmToken } from '../support/mcp-calls';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { rtdbForTests, type RtdbTestServer } from '../support/rtdb-server';
import { startReadyServer, type ServerProcess } from '../support/server-process';

/**
 * Issue 17 item 3: UPSTREAM_RATE counts every request that reaches the
 * upstream, not only tools/call. The real server-everything sits behind a
 * recording proxy that notes every JSON-RPC message forwarded; at 2/s, in no
 * second does it see more than 2 of tools/call, resources/read and
 * prompts/get, from 10 tokens at once and from 100-message batches, on one
 * instance (memory) and on two sharing Redis or RTDB. Before the fix the
 * reads and prompts went straight through (75 reads in one second).
 */

const TOKENS = 10;
const COUNTED = new Set(['tools/call', 'resources/read', 'prompts/get']);
const READ = { method: 'resources/read', params: { uri: 'demo://resource/static/document/architecture.md' } };
const PROMPT = { method: 'prompts/get', params: { name: 'simple-prompt' } };
const CALL = { method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } };

/** The most counted messages the proxy saw in any window of `windowMs` (each window starting at a message). */
function mostInAnyWindow(messages: readonly RecordedMessage[], windowMs: number): number {
  const times = messages.filter((m) => m.method !== undefined && COUNTED.has(m.method)).map((m) => m.atMs).sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while ((times[j] as number) < (times[i] as number) - windowMs + 1) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe.each([
  ['memory', 1],
  ['redis', 2],
  ['rtdb', 2],
] as const)('UPSTREAM_RATE=2/s on %s, %i instance(s), in front of server-everything', (backend, instances) => {
  let dir: string;
  let everything: EverythingUpstream;
  let proxy: RecordingProxy;
  let rtdb: RtdbTestServer | undefined;
  let redis: RedisServer | undefined;
  let servers: ServerProcess[] = [];
  const secrets: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-every-method-'));
    const tokensFile = path.join(dir, 'tokens.json');
    const store = new FileTokenStore({ path: tokensFile });
    const service = new TokenService({ store });
    for (let i = 0; i < TOKENS; i++) secrets.push((await service.create({ name: `integrator-${i}`, tier: 'default' })).secret);
    await store.close();
    everything = await startEverythingUpstream();
    proxy = await startRecordingProxy(everything.url);
    const limitsFile = path.join(dir, 'limits.json');
    // Costs say what the defaults are, so the file is parsed the way an operator's is.
    await writeFile(limitsFile, JSON.stringify({ upstream: { costs: { methods: { 'resources/read': 1 } } } }));
    let backendEnv: Record<string, string> = {};
    if (backend === 'rtdb') {
      rtdb = await rtdbForTests();
      backendEnv = { RATE_LIMIT_BACKEND: 'rtdb', FIREBASE_DATABASE_URL: rtdb.databaseUrl, FIREBASE_DATABASE_EMULATOR_HOST: rtdb.host };
    } else if (backend === 'redis') {
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
      MAX_BATCH_MESSAGES: '100',
      UPSTREAM_MCP_URL: proxy.url,
      UPSTREAM_RATE: '2/s',
      UPSTREAM_MAX_WAIT_MS: '20000',
      UPSTREAM_HOLD_MS: '1000',
      UPSTREAM_MAX_RESERVATIONS_PER_TOKEN: '10',
      LIMITS_FILE: limitsFile,
    };
    servers = await Promise.all(Array.from({ length: instances }, () => startReadyServer(env, 90_000)));
    for (const server of servers) for (const secret of secrets) expect(await warmToken(server.port, secret)).toBe(400);
  }, 180_000);

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.kill()));
    await proxy?.close();
    await everything?.close();
    await rtdb?.close();
    await redis?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const portOf = (i: number): number => (servers[i % servers.length] as ServerProcess).port;

  // First, while the queue is empty: issue 17 item 4.
  it('10 parallel calls of one token all run, each at a slot of its own, when they come back (echoing the id or not)', async () => {
    const from = proxy.messages.length;
    const secret = secrets[0] as string;
    const call = (i: number, id: number, reservation?: string) =>
      postMcp(portOf(i + id), secret, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message: `call-${i}` }, ...(reservation === undefined ? {} : { _meta: { 'firelimit/reservation': reservation } }) } });
    type Figures = { status: string; slotAtMs: number; reservation: string };
    const figuresOf = (body: unknown): Figures | undefined => (body as { result?: { _meta?: Record<string, Figures> } }).result?._meta?.['firelimit/upstreamQuota'];
    const slots: number[] = [];
    const ran = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        let answer = await call(i, 0);
        for (let tries = 1; figuresOf(answer.body) !== undefined; tries++) {
          const figures = figuresOf(answer.body) as Figures;
          expect({ i, tries, status: figures.status }).toEqual({ i, tries, status: 'reserved' });
          slots.push(figures.slotAtMs);
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, figures.slotAtMs - Date.now() + 20)));
          // Half echo their reservation id, half come back with nothing: both claim a slot of their own.
          answer = await call(i, tries, i % 2 === 0 ? figures.reservation : undefined);
        }
        return answer;
      }),
    );
    expect(ran.map((a) => JSON.stringify(a.body).includes(`Echo: call-`))).toEqual(Array.from({ length: 10 }, () => true));
    expect(new Set(slots).size).toBe(slots.length);
    expect(slots.length).toBeGreaterThanOrEqual(5);
    expect(proxy.messages.slice(from).filter((m) => m.method === 'tools/call')).toHaveLength(10);
  }, 60_000);

  it('10 tokens sending tools/call, resources/read and prompts/get at once: at most 2 reach the upstream in any second', async () => {
    // The last claimed slot above moved the cursor one grace and one interval on (1.56 s): let it pass, so some run now.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const from = proxy.messages.length;
    const kinds = [CALL, READ, PROMPT];
    const sent = await Promise.all(
      Array.from({ length: TOKENS * 6 }, (_, i) => postMcp(portOf(i), secrets[i % TOKENS] as string, { jsonrpc: '2.0', id: i, ...kinds[i % kinds.length] })),
    );
    const seen = proxy.messages.slice(from);
    const forwarded = seen.filter((m) => m.method !== undefined && COUNTED.has(m.method));
    expect(sent.every((r) => r.status === 200)).toBe(true);
    expect(forwarded.length).toBeGreaterThanOrEqual(2);
    // Every kind was scheduled, not only tools/call: reads and prompts were refused with the quota's figures.
    const refusedKinds = new Set(sent.filter((r) => (r.body.error?.data as unknown as { status?: string } | undefined)?.status !== undefined).map((r) => (r.body.error?.data as unknown as { method: string }).method));
    expect([...refusedKinds].sort()).toEqual(['prompts/get', 'resources/read']);
    expect(mostInAnyWindow(seen, 1000)).toBeLessThanOrEqual(2);
  }, 60_000);

  it('100-message batches of reads and prompts: each message is scheduled on its own, at most 2 reach the upstream in any second', async () => {
    const from = proxy.messages.length;
    const batch = (offset: number) => Array.from({ length: 100 }, (_, i) => ({ jsonrpc: '2.0', id: offset + i, ...(i % 2 === 0 ? READ : PROMPT) }));
    const answers = await Promise.all([postMcp(portOf(0), secrets[0] as string, batch(0)), postMcp(portOf(1), secrets[1] as string, batch(100))]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    for (const answer of answers) {
      const messages = answer.body as unknown as { error?: { code: number; data?: { status: string } } }[];
      expect(messages).toHaveLength(100);
      expect(messages.filter((m) => m.error?.data?.status === 'reserved' || m.error?.data?.status === 'rejected').length).toBeGreaterThan(90);
    }
    const seen = proxy.messages.slice(from);
    expect(mostInAnyWindow(seen, 1000)).toBeLessThanOrEqual(2);
  }, 60_000);
});

describe('upstream.costs in the limits file, in front of server-everything', () => {
  let everything: EverythingUpstream;
  let proxy: RecordingProxy;
  let dir: string;

  beforeAll(async () => {
    everything = await startEverythingUpstream();
    proxy = await startRecordingProxy(everything.url);
    dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-costs-'));
    await writeFile(path.join(dir, 'limits.json'), JSON.stringify({ upstream: { costs: { methods: { 'resources/read': 0 } } } }));
  }, 30_000);

  afterAll(async () => {
    await proxy?.close();
    await everything?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('a read priced 0 is never scheduled: a batch of 20 reaches the upstream whole, while prompts/get is still held to 2/s', async () => {
    const { startFirelimit } = await import('../support/gateway-harness');
    const { GOOD_SECRET } = await import('../support/mcp-test-app');
    const firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_RATE: '2/s', UPSTREAM_HOLD_MS: '0', LIMITS_FILE: 'limits.json' }, { cwd: dir });
    try {
      const post = async (batch: unknown[]) => (await fetch(firelimit.url, { method: 'POST', headers: { Authorization: `Bearer ${GOOD_SECRET}`, Accept: 'application/json, text/event-stream', 'Content-Type': 'application/json', 'MCP-Protocol-Version': '2025-03-26' }, body: JSON.stringify(batch) })).json() as Promise<{ result?: unknown; error?: { data?: { status?: string } } }[]>;
      const from = proxy.messages.length;
      const reads = await post(Array.from({ length: 20 }, (_, i) => ({ jsonrpc: '2.0', id: i, ...READ })));
      expect(reads.filter((m) => m.result !== undefined)).toHaveLength(20);
      const prompts = await post(Array.from({ length: 5 }, (_, i) => ({ jsonrpc: '2.0', id: i, ...PROMPT })));
      expect(prompts.filter((m) => m.result !== undefined)).toHaveLength(1);
      expect(prompts.filter((m) => m.error?.data?.status === 'reserved' || m.error?.data?.status === 'rejected')).toHaveLength(4);
      expect(proxy.messages.slice(from).filter((m) => m.method === 'resources/read')).toHaveLength(20);
    } finally {
      await firelimit.stop();
    }
  }, 30_000);
});
