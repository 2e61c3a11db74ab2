import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { Express, NextFunction, Request, Response } from 'express';
import { z } from 'zod';
import { interleavedRounds, loadWithCpu, type LoadResult } from './autocannon-rounds';
import { median, type BenchTable } from './bench-table';
import { serveAsBenchChild, serveOrRun, startBenchChild } from './bench-child';

/**
 * End to end, one MCP `tools/call` of `whoami`: firelimit as `npm start`
 * runs it (real bearer auth against the file token store, the per-token
 * limiter on memory, the request log, every check on) against a bare SDK 2.x
 * server exposing the same tool with the same output schema and nothing else,
 * and against that bare server with a bearer check and express-rate-limit in
 * front. Each server runs in its own child process, autocannon in this one;
 * rounds are interleaved and each ratio is taken within a round, so drift on
 * the shared machine hits every variant alike.
 *
 * Two bare SDK servers, since the SDK has two ways to serve HTTP: its entry
 * `createMcpHandler` (both eras; the 2025 era answered over SSE, as it does
 * by default) and a `McpServer` + stateless transport per request with JSON
 * answers (the 1.x idiom, 2025 era only). The target is against the faster.
 *
 * `npx tsx bench/mcp-call-bench.ts` runs it alone; MCP_BENCH_CPU_PROF=DIR
 * writes a CPU profile per server child into DIR/<variant>/, and
 * MCP_BENCH_ONLY=firelimit (a comma-separated list of variants) and
 * MCP_BENCH_ERAS=2025-11-25 run only those. MCP_BENCH_BASELINE_SRC=DIR (the
 * src/ of another checkout, e.g. `git archive <commit> src` unpacked beside a
 * node_modules link) adds that build as `firelimit-baseline`, so a change is
 * measured against the code before it in the same rounds.
 *
 * The floors: node:http parsing the body and writing a fixed answer, and
 * Express 5 with express.json() doing the same; firelimit's CPU per call is
 * set against the Express one (target 2.0x, issue 22).
 *
 * Every server child loads its TypeScript through tsc's own emit
 * (./typescript-emit.cjs), the code the image runs; `firelimit-tsx` serves
 * the same build under tsx, the loader `npm start` uses in development, so
 * what that loader adds stays visible beside it.
 */

const ROUNDS = 5;
const ROUND_SECONDS = 5;
const WARMUP_SECONDS = 2;
const CONNECTIONS = 10;
/** High enough that every call is allowed: the bench times the common path, not refusals. */
const LIMIT = 1_000_000_000;
const TARGET_RATIO = 1.0;
const AIM_RATIO = 1.5;

type VariantName = 'floor-http' | 'floor-express' | 'floor-express-preset' | 'firelimit' | 'firelimit-tsx' | 'firelimit-baseline' | 'firelimit+jwt' | 'sdk-handler' | 'sdk-transport-json' | 'sdk-handler+bearer+erl';
type FloorName = 'floor-http' | 'floor-express' | 'floor-express-preset';
type EraName = '2025-11-25' | '2026-07-28';

interface Variant {
  readonly name: VariantName;
  readonly label: string;
  readonly eras: readonly EraName[];
  /** How the child loads TypeScript; default 'typescript' (tsc's emit, what the image runs). */
  readonly loader?: 'tsx' | 'typescript';
}

const VARIANTS: readonly Variant[] = [
  { name: 'floor-http', label: 'floor: node:http + JSON.parse + fixed answer', eras: ['2025-11-25', '2026-07-28'] },
  { name: 'floor-express', label: 'floor: Express 5 + express.json() + fixed answer', eras: ['2025-11-25', '2026-07-28'] },
  // The same app on the server firelimit runs on (src/service/express-server: Express's prototypes preset, ADR 0069).
  { name: 'floor-express-preset', label: 'floor: the same Express app, prototypes preset as firelimit serves', eras: ['2025-11-25', '2026-07-28'] },
  { name: 'sdk-handler', label: 'bare SDK 2.x: createMcpHandler + toNodeHandler', eras: ['2025-11-25', '2026-07-28'] },
  { name: 'sdk-transport-json', label: 'bare SDK 2.x: McpServer + stateless transport per request, JSON', eras: ['2025-11-25'] },
  { name: 'sdk-handler+bearer+erl', label: 'bare SDK 2.x createMcpHandler + bearer check + express-rate-limit', eras: ['2025-11-25', '2026-07-28'] },
  { name: 'firelimit', label: 'firelimit (real auth, per-token limit, request log, all checks)', eras: ['2025-11-25', '2026-07-28'] },
  // The same code under tsx, as `npm start` runs it on a developer's machine: what the dev loader adds.
  { name: 'firelimit-tsx', label: 'firelimit under tsx (npm start in development; not what the image runs)', eras: ['2025-11-25', '2026-07-28'], loader: 'tsx' },
  // MCP_BENCH_BASELINE_SRC=<another checkout's src>: that build of firelimit beside this one, in the same rounds.
  ...(process.env.MCP_BENCH_BASELINE_SRC === undefined
    ? []
    : [{ name: 'firelimit-baseline' as const, label: `firelimit as built from ${process.env.MCP_BENCH_BASELINE_SRC}`, eras: ['2025-11-25', '2026-07-28'] as EraName[] }]),
  { name: 'firelimit+jwt', label: 'firelimit, the caller a verified JWT (Firebase preset, local JWKS) instead of flk_', eras: ['2025-11-25', '2026-07-28'] },
];
const BARE: readonly VariantName[] = ['sdk-handler', 'sdk-transport-json'];
/** The CPU target is set against this floor: what any Express app that parses a JSON body pays. */
const EXPRESS_FLOOR: VariantName = 'floor-express';
const FLOOR_CPU_TARGET = 2.0;

// ---------------------------------------------------------------- server side

const whoamiOutput = {
  tokenId: z.string().describe('The public token id; also the rate-limit key.'),
  name: z.string().describe('The name the token was created with.'),
  tier: z.string().describe('The rate-limit tier the token is counted under.'),
  scopes: z.array(z.string()).describe('What the token may do.'),
};

/** The bare servers' whoami: the same schema as ours, a fixed identity (they have no tokens). */
async function bareServer(): Promise<import('@modelcontextprotocol/server').McpServer> {
  const { McpServer } = await import('@modelcontextprotocol/server');
  const server = new McpServer({ name: 'bare', version: '1.0.0' });
  server.registerTool(
    'whoami',
    { title: 'Who am I', description: 'The token this request was authenticated with.', inputSchema: z.object({}), outputSchema: z.object(whoamiOutput) },
    () => {
      const structured = { tokenId: 'tok_bench', name: 'bench', tier: 'default', scopes: ['mcp'] };
      return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
    },
  );
  return server;
}

/** whoami's answer as a JSON-RPC response, fixed: the floors parse the call and answer it, nothing else. */
const FIXED_STRUCTURED = { tokenId: 'tok_bench', name: 'bench', tier: 'default', scopes: ['mcp'] };
const FIXED_RESULT = { content: [{ type: 'text', text: JSON.stringify(FIXED_STRUCTURED) }], structuredContent: FIXED_STRUCTURED };
function fixedAnswer(id: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result: FIXED_RESULT });
}

/**
 * The floors: what the machine and the framework cost before any MCP or limiting, the body read and parsed
 * and a fixed answer written. firelimit's CPU per call is set against the Express one (its own framework).
 */
async function floorApp(name: FloorName): Promise<{ listen(port: number, host: string, callback: () => void): import('node:http').Server }> {
  if (name === 'floor-http') {
    const { createServer } = await import('node:http');
    return createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown };
        res.writeHead(200, { 'content-type': 'application/json' }).end(fixedAnswer(body.id));
      });
    });
  }
  const { default: express } = await import('express');
  const app = express();
  app.use(express.json());
  app.post('/mcp', (req: Request, res: Response) => {
    res.type('application/json').send(fixedAnswer((req.body as { id?: unknown }).id));
  });
  return name === 'floor-express-preset' ? await onServiceServer(app) : app;
}

/** Served as the service serves its app (src/service/express-server), not by app.listen's plain server. */
async function onServiceServer(app: Express): Promise<Listenable> {
  return servedAsTheServiceServes(app, '../src');
}

async function bareApp(name: Exclude<VariantName, 'firelimit' | 'firelimit-tsx' | 'firelimit-baseline' | 'firelimit+jwt' | FloorName>, secret: string): Promise<Express> {
  const { createMcpHandler } = await import('@modelcontextprotocol/server');
  const { createMcpExpressApp } = await import('@modelcontextprotocol/express');
  const { toNodeHandler, NodeStreamableHTTPServerTransport } = await import('@modelcontextprotocol/node');
  // The SDK's Express app: express.json() and localhost Host validation, as its README sets one up.
  const app = createMcpExpressApp({ host: '127.0.0.1' });
  if (name === 'sdk-handler+bearer+erl') {
    app.use((req: Request, res: Response, next: NextFunction) => {
      if (req.headers.authorization !== `Bearer ${secret}`) {
        res.status(401).json({ error: 'unauthorized' });
        return;
      }
      next();
    });
    const { rateLimit } = await import('express-rate-limit');
    app.use(rateLimit({ windowMs: 60_000, limit: LIMIT, standardHeaders: 'draft-8', legacyHeaders: true, keyGenerator: (req) => String(req.headers.authorization) }));
  }
  if (name === 'sdk-transport-json') {
    app.post('/mcp', async (req: Request, res: Response) => {
      const server = await bareServer();
      const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    });
    return app;
  }
  const node = toNodeHandler(createMcpHandler(() => bareServer()));
  app.post('/mcp', (req: Request, res: Response) => node(req, res, req.body));
  return app;
}

/**
 * A key set served in this child and a Firebase-shaped ID token signed by it, valid for the whole run: the
 * caller the JWT variant sends. Every call after the first is answered from the verifier's cache (until exp,
 * at most TOKEN_CACHE_TTL_MS), as a busy signed-in caller's are.
 */
async function signedInCaller(dir: string): Promise<{ issuersFile: string; token: string }> {
  const { createServer } = await import('node:http');
  const { writeFileSync } = await import('node:fs');
  const { exportJWK, generateKeyPair, SignJWT } = await import('jose');
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' }] });
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const issuersFile = path.join(dir, 'issuers.json');
  writeFileSync(issuersFile, JSON.stringify({ issuers: [{ preset: 'firebase', projectId: 'bench-project', jwksUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks` }] }));
  const nowSec = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ auth_time: nowSec - 60 })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench', typ: 'JWT' })
    .setIssuer('https://securetoken.google.com/bench-project')
    .setAudience('bench-project')
    .setSubject('bench-user')
    .setIssuedAt(nowSec - 10)
    .setExpirationTime(nowSec + 7200)
    .sign(privateKey);
  return { issuersFile, token };
}

async function firelimitApp(dir: string, jwt = false, src = '../src'): Promise<{ app: Listenable; secret: string }> {
  const { loadConfig } = (await import(`${src}/config/config`)) as typeof import('../src/config/config');
  const { buildService } = (await import(`${src}/service/build-service`)) as typeof import('../src/service/build-service');
  const { createServiceLogger } = (await import(`${src}/logging/create-service-logger`)) as typeof import('../src/logging/create-service-logger');
  const { TokenService } = (await import(`${src}/tokens/token-service`)) as typeof import('../src/tokens/token-service');
  const caller = jwt ? await signedInCaller(dir) : undefined;
  const config = loadConfig({ RATE_LIMIT_PER_MINUTE: String(LIMIT), TOKENS_FILE: path.join(dir, 'tokens.json'), LOG_FORMAT: 'json', ...(caller === undefined ? {} : { AUTH_ISSUERS_FILE: caller.issuersFile }) });
  // The real JSON log lines, each built and written in batches as on stdout; only the bytes are thrown away.
  const output = new Writable({ write: (_chunk, _encoding, done) => done() });
  const service = await buildService(config, { logger: createServiceLogger(config, { output, batch: true }) });
  const tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
  const created = await tokens.create({ name: 'bench', scopes: ['mcp'] });
  return { app: await servedAsTheServiceServes(service.app, src), secret: caller?.token ?? created.secret };
}

type Listenable = { listen(port: number, host: string, callback: () => void): import('node:http').Server };

/** On the server `npm start` and the image put the app on (src/service/express-server); a build from before it had none. */
async function servedAsTheServiceServes(app: Express, src: string): Promise<Listenable> {
  const found = ['.ts', '.js'].some((ext) => existsSync(path.resolve(__dirname, src, 'service', `express-server${ext}`)));
  if (!found) return app;
  const { createServiceServer } = (await import(`${src}/service/express-server`)) as typeof import('../src/service/express-server');
  return { listen: (port, host, callback) => createServiceServer(app).listen(port, host, callback) };
}

const BARE_SECRET = 'flk_bench_bare_secret';

/** Child mode: serve one variant on a free port and tell the parent which, and the secret to call it with. */
async function serve(name: VariantName): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-mcp-bench-'));
  const { app, secret } =
    name === 'firelimit' || name === 'firelimit-tsx' || name === 'firelimit+jwt' || name === 'firelimit-baseline'
      ? await firelimitApp(dir, name === 'firelimit+jwt', name === 'firelimit-baseline' ? (process.env.MCP_BENCH_BASELINE_SRC as string) : '../src')
      : name === 'floor-http' || name === 'floor-express' || name === 'floor-express-preset'
        ? { app: await floorApp(name), secret: BARE_SECRET }
        : { app: await bareApp(name, BARE_SECRET), secret: BARE_SECRET };
  serveAsBenchChild(app, (server) => ({ port: (server.address() as AddressInfo).port, secret }), () => rmSync(dir, { recursive: true, force: true }));
}

// ---------------------------------------------------------------- load side

interface ServerChild {
  readonly variant: Variant;
  readonly port: number;
  readonly secret: string;
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

async function startServer(variant: Variant): Promise<ServerChild> {
  const profileDir = process.env.MCP_BENCH_CPU_PROF;
  const child = await startBenchChild<{ port: number; secret: string }>(__filename, ['--serve', variant.name], {
    name: `${variant.name} server`,
    // TypeScript's own emit by default, as `npm run build` writes it and the image runs it (`node dist/src/server.js`):
    // under tsx every imported binding is read through a getter and every named closure defines its name,
    // a cost of the dev loader that production never pays (ADR 0021).
    loader: variant.loader ?? 'typescript',
    execArgv: profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', path.join(profileDir, variant.name)],
  });
  return { variant, port: child.ready.port, secret: child.ready.secret, cpuUs: child.cpuUs, stop: child.stop };
}

/** One tools/call as a client of each era sends it. */
function callFor(era: EraName, secret: string): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = {
    authorization: `Bearer ${secret}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': era,
  };
  if (era === '2025-11-25') {
    return { headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }) };
  }
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': era,
    'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  return {
    headers: { ...headers, 'mcp-method': 'tools/call', 'mcp-name': 'whoami' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta } }),
  };
}

/** Before any load: the call is answered with whoami's structured result, or the bench would time errors. */
async function checkAnswer(server: ServerChild, era: EraName): Promise<void> {
  const { headers, body } = callFor(era, server.secret);
  const res = await fetch(`http://127.0.0.1:${server.port}/mcp`, { method: 'POST', headers, body });
  const text = await res.text();
  const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '');
  const parsed = JSON.parse(json || '{}') as { result?: { structuredContent?: { tokenId?: unknown } } };
  if (res.status !== 200 || typeof parsed.result?.structuredContent?.tokenId !== 'string') {
    throw new Error(`${server.variant.name} (${era}) did not answer whoami: ${res.status} ${text.slice(0, 300)}`);
  }
}

function load(server: ServerChild, era: EraName, seconds: number): Promise<LoadResult> {
  const { headers, body } = callFor(era, server.secret);
  return loadWithCpu(server.cpuUs, { url: `http://127.0.0.1:${server.port}/mcp`, method: 'POST', headers, body, connections: CONNECTIONS, duration: seconds });
}

interface Cell {
  readonly server: ServerChild;
  readonly era: EraName;
  readonly key: string;
}

export async function runMcpCallBench(): Promise<BenchTable> {
  const servers: ServerChild[] = [];
  try {
    const only = process.env.MCP_BENCH_ONLY?.split(',');
    for (const variant of VARIANTS) if (only === undefined || only.includes(variant.name)) servers.push(await startServer(variant));
    const eras = process.env.MCP_BENCH_ERAS?.split(',');
    const cells: Cell[] = servers.flatMap((server) =>
      server.variant.eras.filter((era) => eras === undefined || eras.includes(era)).map((era) => ({ server, era, key: `${server.variant.name}@${era}` })),
    );
    for (const cell of cells) {
      await checkAnswer(cell.server, cell.era);
      await load(cell.server, cell.era, WARMUP_SECONDS);
    }
    const { rps, cpu, failures } = await interleavedRounds(cells, (c) => c.key, ROUNDS, (c) => load(c.server, c.era, ROUND_SECONDS));
    /** Per round, this cell's req/s over the faster bare SDK server's in the same era and round; the median of those. */
    const vsBare = (key: string, era: EraName): number => {
      const bare = BARE.map((name) => rps.get(`${name}@${era}`)).filter((r): r is number[] => r !== undefined);
      return median((rps.get(key) ?? []).map((x, i) => x / Math.max(...bare.map((r) => r[i] ?? Number.NaN))));
    };
    const vsBareCpu = (key: string, era: EraName): number => {
      const bare = BARE.map((name) => cpu.get(`${name}@${era}`)).filter((r): r is number[] => r !== undefined);
      return median((cpu.get(key) ?? []).map((x, i) => Math.min(...bare.map((r) => r[i] ?? Number.NaN)) / x));
    };
    /** Per round, this cell's CPU per call over the Express floor's in the same era and round; the median. */
    const vsFloorCpu = (key: string, era: EraName): number => {
      const floor = cpu.get(`${EXPRESS_FLOOR}@${era}`) ?? [];
      return median((cpu.get(key) ?? []).map((x, i) => x / (floor[i] ?? Number.NaN)));
    };
    const ours = cells
      .filter((c) => c.server.variant.name === 'firelimit')
      .map(({ era }) => ({ era, rps: vsBare(`firelimit@${era}`, era), cpu: vsBareCpu(`firelimit@${era}`, era), floor: vsFloorCpu(`firelimit@${era}`, era) }));
    return {
      title: `MCP tools/call whoami end to end (${CONNECTIONS} connections, ${ROUNDS} interleaved rounds x ${ROUND_SECONDS} s after a ${WARMUP_SECONDS} s warm-up)`,
      columns: ['variant', 'era', 'median req/s', 'min req/s', 'max req/s', 'x bare SDK', 'server µs/call', 'x bare SDK (CPU)', 'CPU x Express floor'],
      rows: cells.map((c) => {
        const r = rps.get(c.key) ?? [];
        return [c.server.variant.label, c.era, median(r), Math.min(...r), Math.max(...r), vsBare(c.key, c.era), median(cpu.get(c.key) ?? []), vsBareCpu(c.key, c.era), vsFloorCpu(c.key, c.era)];
      }),
      notes: [
        ...cells
          .filter((c) => c.server.variant.name === 'firelimit-baseline')
          .map(({ era }) => {
            const cpuRound = (cpu.get(`firelimit@${era}`) ?? []).map((x, i) => x / ((cpu.get(`firelimit-baseline@${era}`) ?? [])[i] ?? Number.NaN));
            return `${era}: this build's server CPU per call ${median(cpuRound).toFixed(2)}x the baseline build's (median of per-round ratios)`;
          }),
        ...cells
          .filter((c) => c.server.variant.name === 'firelimit+jwt')
          .map(({ era }) => {
            const perRound = (rps.get(`firelimit+jwt@${era}`) ?? []).map((x, i) => x / ((rps.get(`firelimit@${era}`) ?? [])[i] ?? Number.NaN));
            const cpuRound = (cpu.get(`firelimit+jwt@${era}`) ?? []).map((x, i) => x / ((cpu.get(`firelimit@${era}`) ?? [])[i] ?? Number.NaN));
            return `${era}: a verified-JWT caller ${median(perRound).toFixed(2)}x a flk_ caller's req/s, ${median(cpuRound).toFixed(2)}x its server CPU per call (medians of per-round ratios)`;
          }),
        ...ours.map(
          (o) =>
            `${o.era}: firelimit ${o.rps.toFixed(2)}x the faster bare SDK server by req/s, ${o.cpu.toFixed(2)}x by server CPU per call (target >= ${TARGET_RATIO}x: ${o.rps >= TARGET_RATIO ? 'met' : 'MISSED'}; aim ${AIM_RATIO}x: ${o.rps >= AIM_RATIO ? 'met' : 'not met'})`,
        ),
        ...ours.map(
          (o) =>
            `${o.era}: firelimit ${o.floor.toFixed(2)}x the Express 5 floor's server CPU per call (target <= ${FLOOR_CPU_TARGET}x: ${o.floor <= FLOOR_CPU_TARGET ? 'met' : 'MISSED'})`,
        ),
        'CPU x Express floor = median over rounds of the variant µs/call / the Express 5 + express.json() floor µs/call in the same era and round',
        'x bare SDK = median over rounds of req/s / the faster bare SDK server (createMcpHandler or per-request transport) in the same era and round; the 2026-07-28 era has only createMcpHandler',
        'x bare SDK (CPU) = the same with server CPU per call (bare µs/call / variant µs/call)',
        `non-2xx responses or errors across all rounds: ${failures}`,
        `node ${process.version}, ${os.cpus()[0]?.model.trim() ?? 'unknown cpu'}, ${os.availableParallelism()} cores shared by the servers, autocannon and whatever else runs`,
      ],
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

if (require.main === module) serveOrRun(serve, runMcpCallBench);
