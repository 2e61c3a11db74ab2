import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { interleavedRounds, loadWithCpu, type LoadResult } from './autocannon-rounds';
import { median, type BenchTable } from './bench-table';
import { serveAsBenchChild, serveOrRun, startBenchChild } from './bench-child';

/**
 * Throughput of one small route behind each limiter, as a share of the same
 * route with no limiter at all. Each server runs in its own child process so
 * the load generator (autocannon, in this process) never competes with it for
 * an event loop; variants run in interleaved rounds so drift on a shared
 * machine hits every variant alike.
 *
 * `npx tsx bench/http-bench.ts` runs it alone. HTTP_BENCH_CPU_PROF=DIR starts
 * every server child with --cpu-prof into DIR/<variant>/ (one profile per
 * thread: the largest is the server's main thread; tsx's loader hooks add an idle one).
 * HTTP_BENCH_DIAGNOSE=1 adds rows that split our middleware's cost into parts.
 */

// Many short rounds rather than a few long ones: drift on a shared machine cancels better.
const ROUNDS = 10;
const ROUND_SECONDS = 1.5;
const WARMUP_SECONDS = 1;
const CONNECTIONS = 10;
const WINDOW_MS = 60_000;
/** High enough that every request is allowed: we time the common path, not refusals. */
const LIMIT = 1_000_000_000;
/** The issue's figure for our middleware, all headers set. */
const TARGET_RATIO = 0.9;

type VariantName =
  | 'bare'
  | 'firelimit'
  | 'express-rate-limit'
  | 'rate-limiter-flexible'
  | 'diag-headers-only'
  | 'diag-consume-only'
  | 'diag-consume-then-headers';

interface Variant {
  readonly name: VariantName;
  readonly label: string;
  /** The issue's measured figure, shown beside ours for comparison. */
  readonly issueRatio?: number;
}

const VARIANTS: readonly Variant[] = [
  { name: 'bare', label: 'bare express' },
  { name: 'firelimit', label: 'firelimit createRateLimitMiddleware (memory, 5 headers)' },
  { name: 'express-rate-limit', label: "express-rate-limit 8 (standardHeaders 'draft-8', legacyHeaders)", issueRatio: 0.67 },
  { name: 'rate-limiter-flexible', label: 'rate-limiter-flexible RateLimiterMemory (3 X-RateLimit headers)', issueRatio: 0.78 },
];

/**
 * With HTTP_BENCH_DIAGNOSE=1: rows that split our middleware's cost into its
 * parts (headers alone, the limiter call alone, both without an async
 * function), to show where the time goes. Not candidates.
 */
const DIAGNOSTIC_VARIANTS: readonly Variant[] = [
  { name: 'diag-headers-only', label: '(setRateLimitHeaders with a fixed decision, no limiter)' },
  { name: 'diag-consume-only', label: '(limiter.consume().then(next), no headers)' },
  { name: 'diag-consume-then-headers', label: '(limiter.consume().then(headers + next), no async function)' },
];

// ---------------------------------------------------------------- server side

/** The limiter in front of GET /hello for one variant; undefined for the bare route. */
async function limiterFor(name: VariantName): Promise<RequestHandler | undefined> {
  switch (name) {
    case 'bare':
      return undefined;
    case 'firelimit': {
      const { createRateLimiter } = await import('../src/library/limiter/create-rate-limiter');
      const { createRateLimitMiddleware } = await import('../src/library/express/rate-limit-middleware');
      const limiter = await createRateLimiter({ policy: { name: 'default', limit: LIMIT, windowMs: WINDOW_MS } });
      // One constant key, as the service's token id would be for one caller: the bench measures the middleware, not key spread.
      return createRateLimitMiddleware({ limiter, key: () => 'bench' });
    }
    case 'diag-headers-only': {
      const { setRateLimitHeaders } = await import('../src/library/express/rate-limit-headers');
      const windowStart = Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS;
      const { toDecision } = await import('../src/library/limiter/rate-limiter');
      const decisions = [{ allowed: true, limit: LIMIT, remaining: LIMIT - 1, resetAtMs: windowStart + WINDOW_MS, retryAfterMs: 0 }];
      const decision = toDecision({ allowed: true, decisions }, [{ name: 'default', limit: LIMIT, windowMs: WINDOW_MS }], false);
      return (_req: Request, res: Response, next: NextFunction) => {
        setRateLimitHeaders(res, decision, Date.now());
        next();
      };
    }
    case 'diag-consume-only':
    case 'diag-consume-then-headers': {
      const { createRateLimiter } = await import('../src/library/limiter/create-rate-limiter');
      const { setRateLimitHeaders } = await import('../src/library/express/rate-limit-headers');
      const limiter = await createRateLimiter({ policy: { name: 'default', limit: LIMIT, windowMs: WINDOW_MS } });
      const headers = name === 'diag-consume-then-headers';
      return (_req: Request, res: Response, next: NextFunction) => {
        limiter.consume('bench').then((decision) => {
          if (headers) setRateLimitHeaders(res, decision, Date.now());
          next();
        }, next);
      };
    }
    case 'express-rate-limit': {
      const { rateLimit } = await import('express-rate-limit');
      // Its default is legacy X-RateLimit-* only; draft-8 adds RateLimit-Policy and RateLimit, the same set as ours.
      // Its default key generator (req.ip) stays: that is how it is deployed, and how the issue measured it.
      return rateLimit({ windowMs: WINDOW_MS, limit: LIMIT, standardHeaders: 'draft-8', legacyHeaders: true });
    }
    case 'rate-limiter-flexible': {
      const { RateLimiterMemory } = await import('rate-limiter-flexible');
      const limiter = new RateLimiterMemory({ points: LIMIT, duration: WINDOW_MS / 1000 });
      return (_req: Request, res: Response, next: NextFunction) => {
        limiter.consume('bench').then(
          (r) => {
            res.setHeader('X-RateLimit-Limit', String(LIMIT));
            res.setHeader('X-RateLimit-Remaining', String(r.remainingPoints));
            res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + r.msBeforeNext) / 1000)));
            next();
          },
          () => res.status(429).json({ error: 'rate_limited' }),
        );
      };
    }
  }
}

/** Child mode: serve one variant on a free port and tell the parent which. */
async function serve(name: VariantName): Promise<void> {
  const app = express();
  app.disable('x-powered-by');
  const limiter = await limiterFor(name);
  if (limiter !== undefined) app.use(limiter);
  app.get('/hello', (_req, res) => {
    res.json({ hello: 'world' });
  });
  serveAsBenchChild(app, (server) => ({ port: (server.address() as AddressInfo).port }));
}

// ---------------------------------------------------------------- load side

interface ServerChild {
  readonly variant: Variant;
  readonly port: number;
  /** CPU time (user + system, µs) the server process has used so far. */
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

async function startServer(variant: Variant): Promise<ServerChild> {
  const profileDir = process.env.HTTP_BENCH_CPU_PROF;
  const child = await startBenchChild<{ port: number }>(__filename, ['--serve', variant.name], {
    name: `${variant.name} server`,
    execArgv: profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', path.join(profileDir, variant.name)],
  });
  return { variant, port: child.ready.port, cpuUs: child.cpuUs, stop: child.stop };
}

function load(server: ServerChild, seconds: number): Promise<LoadResult> {
  return loadWithCpu(server.cpuUs, { url: `http://127.0.0.1:${server.port}/hello`, connections: CONNECTIONS, duration: seconds });
}

/** Each header a variant sets, as the load generator sees it: the bench compares like with like. */
async function headersOf(port: number): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${port}/hello`);
  await res.arrayBuffer();
  return [...res.headers.keys()].filter((h) => h.includes('ratelimit'));
}

export async function runHttpBench(): Promise<BenchTable> {
  const variants = process.env.HTTP_BENCH_DIAGNOSE === '1' ? [...VARIANTS, ...DIAGNOSTIC_VARIANTS] : VARIANTS;
  const servers: ServerChild[] = [];
  try {
    for (const variant of variants) servers.push(await startServer(variant));
    const headers = new Map<VariantName, string[]>();
    for (const s of servers) {
      headers.set(s.variant.name, await headersOf(s.port));
      await load(s, WARMUP_SECONDS); // JIT and connection pools warm before anything counts.
    }
    const { rps, cpu, failures } = await interleavedRounds(servers, (s) => s.variant.name, ROUNDS, (s) => load(s, ROUND_SECONDS));
    // A shared machine's load drifts over seconds: a ratio within one round cancels most of it, a ratio of medians does not.
    const vsBare = (name: VariantName) => median((rps.get(name) ?? []).map((x, i) => x / (rps.get('bare')?.[i] ?? Number.NaN)));
    const vsBareCpu = (name: VariantName) => median((cpu.get(name) ?? []).map((x, i) => (cpu.get('bare')?.[i] ?? Number.NaN) / x));
    const ours = vsBare('firelimit');
    const oursCpu = vsBareCpu('firelimit');
    return {
      title: `HTTP throughput behind each limiter (GET /hello, ${CONNECTIONS} connections, ${ROUNDS} rounds x ${ROUND_SECONDS} s, interleaved)`,
      columns: ['variant', 'median req/s', 'min req/s', 'max req/s', 'x bare', 'issue x bare', 'server µs/req', 'x bare (CPU)', 'rl headers'],
      rows: variants.map((v) => {
        const r = rps.get(v.name) ?? [];
        return [
          v.label,
          median(r),
          Math.min(...r),
          Math.max(...r),
          vsBare(v.name),
          v.issueRatio === undefined ? '' : v.issueRatio,
          median(cpu.get(v.name) ?? []),
          vsBareCpu(v.name),
          String(headers.get(v.name)?.length ?? 0),
        ];
      }),
      notes: [
        `target: firelimit >= ${TARGET_RATIO}x bare; measured ${ours.toFixed(2)}x by req/s (${ours >= TARGET_RATIO ? 'met' : 'MISSED'}), ${oursCpu.toFixed(2)}x by server CPU per request (${oursCpu >= TARGET_RATIO ? 'met' : 'MISSED'})`,
        'each server in its own child process (node --import tsx), autocannon in the parent; x bare = median over rounds of req/s / bare req/s in the same round',
        'x bare (CPU) = the same with server CPU per request (bare µs/req / variant µs/req): the share a CPU-bound server keeps',
        `non-2xx responses or errors across all rounds: ${failures}`,
        `node ${process.version}, ${os.cpus()[0]?.model.trim() ?? 'unknown cpu'}, ${os.availableParallelism()} cores shared by server and load generator`,
      ],
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

if (require.main === module) serveOrRun(serve, runHttpBench);
