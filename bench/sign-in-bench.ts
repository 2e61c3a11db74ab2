import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { createAuthMiddleware } from '../src/http/auth-middleware';
import { createRateLimiter } from '../src/library/limiter/create-rate-limiter';
import type { RateLimitPolicy } from '../src/library/window/policy';
import type { RateLimiter } from '../src/library/limiter/rate-limiter';
import { RedisWindowStore } from '../src/library/backends/redis/redis-store';
import { silentLogger } from '../src/shared/logger';
import { CachedTokenVerifier } from '../src/tokens/cached-token-verifier';
import { FileTokenStore } from '../src/tokens/file-token-store';
import type { TokenStore } from '../src/tokens/token-record';
import { generateToken } from '../src/tokens/token-secret';
import { TokenService } from '../src/tokens/token-service';
import { startRedisServer } from '../test/support/redis-server';
import { median, percentile, printTable, type BenchTable } from './bench-table';

/**
 * First sign-ins in a burst (ADR 0045): 40 valid tokens from 40 addresses at
 * once beside the same 40 from one address (a NAT), where the failed sign-in
 * budget (10) makes them wait for each other, and 200 made-up secrets from
 * one address. The real auth middleware and token cache over a file token
 * store whose lookups are held LOOKUP_MS, standing in for a Firestore read;
 * the budget on memory and on a real redis-server. Rounds interleave the
 * scenarios so drift on a shared machine hits each alike.
 *
 * `npm run bench -- sign-in`, or `npx tsx bench/sign-in-bench.ts` alone. Loopback only.
 */

const ROUNDS = 5;
const TOKENS = 40;
const GUESSES = 200;
const BUDGET = 10;
/** A Firestore read on a good day, and on a slow one. */
const LOOKUP_MS = [20, 100] as const;
const FAILURES: RateLimitPolicy = { name: 'auth-failures', limit: BUDGET, windowMs: 60_000 };

interface Backend {
  readonly name: string;
  readonly limiter: RateLimiter;
}

interface Burst {
  readonly wallMs: number;
  readonly latenciesMs: number[];
  readonly statuses: Map<number, number>;
  readonly lookups: number;
  /** The burst ran across a minute boundary: its address got a second window of budget. */
  readonly acrossWindows: boolean;
}

function post(port: number, secret: string, address: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent: false, headers: { authorization: `Bearer ${secret}`, 'x-forwarded-for': address, 'content-length': 0 } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end();
  });
}

export async function runSignInBench(): Promise<BenchTable> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-sign-in-bench-'));
  const redis = await startRedisServer();
  const store = new FileTokenStore({ path: path.join(dir, 'tokens.json') });
  let lookups = 0;
  let lookupMs: number = LOOKUP_MS[0];
  const slow: TokenStore = Object.assign(Object.create(store) as TokenStore, {
    findByHash: async (hash: string) => {
      lookups++;
      await new Promise((resolve) => setTimeout(resolve, lookupMs));
      return store.findByHash(hash);
    },
  });
  const tokens = new TokenService({ store, tiers: ['default'] });
  const backends: Backend[] = [
    { name: 'memory', limiter: await createRateLimiter({ policy: FAILURES }) },
    { name: 'redis', limiter: await createRateLimiter({ store: new RedisWindowStore({ url: redis.url, keyPrefix: `bench-sign-in-${Date.now()}:` }), policy: FAILURES }) },
  ];
  const servers: http.Server[] = [];
  const ports = new Map<string, number>();
  const unauthenticated = await createRateLimiter({ policy: { name: 'unauthenticated', limit: 1_000_000, windowMs: 60_000 } });
  for (const backend of backends) {
    await backend.limiter.whenReady(5_000);
    const app = express();
    app.post(
      '/mcp',
      createAuthMiddleware({ verifier: new CachedTokenVerifier({ store: slow }), authFailureLimiter: backend.limiter, unauthenticatedLimiter: unauthenticated, trustProxyHops: 1, requiredScope: 'mcp', logger: silentLogger }),
      (_req, res) => res.json({ ok: true }),
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    servers.push(server);
    ports.set(backend.name, (server.address() as AddressInfo).port);
  }

  const scenarios = [
    { name: `${TOKENS} valid, ${TOKENS} addresses`, secrets: 'valid', oneAddress: false },
    { name: `${TOKENS} valid, one address`, secrets: 'valid', oneAddress: true },
    { name: `${GUESSES} made-up, one address`, secrets: 'guesses', oneAddress: true },
  ] as const;
  const results = new Map<string, Burst[]>();
  try {
    let addressSeq = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const held of LOOKUP_MS) {
        lookupMs = held;
        for (const backend of backends) {
          for (const scenario of scenarios) {
            const secrets: string[] = [];
            if (scenario.secrets === 'valid') for (let i = 0; i < TOKENS; i++) secrets.push((await tokens.create({ name: `bench-${round}-${i}` })).secret);
            else for (let i = 0; i < GUESSES; i++) secrets.push(generateToken().secret);
            // A fresh address (or set) per burst, so each starts on a whole budget.
            const base = ++addressSeq;
            const addressOf = (i: number): string => (scenario.oneAddress ? `10.${base >> 8}.${base & 255}.1` : `10.${base >> 8}.${base & 255}.${(i % 250) + 2}`);
            const lookupsBefore = lookups;
            const startedAtMs = Date.now();
            const started = performance.now();
            const answers = await Promise.all(secrets.map((secret, i) => post(ports.get(backend.name) as number, secret, addressOf(i))));
            const wallMs = performance.now() - started;
            const statuses = new Map<number, number>();
            for (const { status } of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1);
            const key = `${held}|${backend.name}|${scenario.name}`;
            results.set(key, [...(results.get(key) ?? []), { wallMs, latenciesMs: answers.map((a) => a.ms), statuses, lookups: lookups - lookupsBefore, acrossWindows: Math.floor(startedAtMs / 60_000) !== Math.floor(Date.now() / 60_000) }]);
          }
        }
      }
    }
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    await Promise.all([...backends.map((b) => b.limiter.close()), unauthenticated.close(), store.close()]);
    await redis.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const rows: (string | number)[][] = [];
  for (const held of LOOKUP_MS) {
    for (const backend of backends) {
      const baseline = median((results.get(`${held}|${backend.name}|${scenarios[0].name}`) ?? []).map((b) => b.wallMs));
      for (const scenario of scenarios) {
        const bursts = results.get(`${held}|${backend.name}|${scenario.name}`) ?? [];
        const all = bursts.flatMap((b) => b.latenciesMs);
        const statusText = [...new Set(bursts.flatMap((b) => [...b.statuses.keys()]))]
          .sort()
          .map((status) => `${status}×${median(bursts.map((b) => b.statuses.get(status) ?? 0))}`)
          .join(' ');
        const wall = median(bursts.map((b) => b.wallMs));
        rows.push([held, backend.name, scenario.name, statusText, Math.max(...bursts.filter((b) => !b.acrossWindows).map((b) => b.lookups)), wall, percentile(all, 50), percentile(all, 99), scenario.secrets === 'valid' ? wall / baseline : '']);
      }
    }
  }
  return {
    title: `First sign-ins in a burst (auth middleware, budget ${BUDGET} failures/min, token lookups held ${LOOKUP_MS.join(' or ')} ms; median of ${ROUNDS} rounds)`,
    columns: ['lookup ms', 'budget on', 'burst', 'answers (median)', 'lookups (max)', 'burst ms', 'p50 ms', 'p99 ms', 'burst vs 40 addresses'],
    rows,
    notes: [
      'One address: at most 10 sign-ins verify at once, each freed unit lets the next one in: about ceil(40 / 10) lookups, not one.',
      'Made-up secrets: lookups (max) is the guessing bound of ADR 0045 (10 per address and window); bursts that ran across a minute boundary (a second window) are left out of that column.',
    ],
  };
}

if (require.main === module) {
  runSignInBench()
    .then((table) => printTable(table))
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
