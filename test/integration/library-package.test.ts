import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startRedisServer, type RedisServer } from '../support/redis-server';
import { copyExample, packLibrary, removeDir, scratchProject, startApp, typecheckScratch, type AppProcess } from '../support/packed-library';

const run = promisify(execFile);
jest.setTimeout(300_000);

/**
 * The package as a user gets it (issue 20): `npm pack ./packages/firelimit`,
 * installed from the tarball into a scratch project with express and redis
 * only, and examples/express-route run there on plain node from CommonJS, ESM
 * and compiled TypeScript; then examples/mcp-server, an SDK 2.x Express MCP
 * server, in a second scratch project that adds the SDK.
 */
let packDir: string | undefined;
let tarball: string;
let plain: string;
let redis: RedisServer;
const apps: AppProcess[] = [];

beforeAll(async () => {
  ({ tarball, dir: packDir } = await packLibrary());
  plain = await scratchProject(tarball, ['express', 'redis', '@types/express', '@types/node']);
  copyExample('express-route', plain, ['app.cjs', 'app.mjs', 'app.ts']);
  redis = await startRedisServer();
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.stop()));
  await redis?.close();
  removeDir(plain);
  removeDir(packDir);
});

async function started(dir: string, file: string, env: Record<string, string>): Promise<AppProcess> {
  const app = await startApp(dir, file, env);
  apps.push(app);
  return app;
}

async function hello(port: number, caller: string): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/hello`, { headers: { 'x-caller': caller } });
}

describe('the packed package', () => {
  test('ships built JavaScript and declarations, and none of the service or its tests', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.split('\n').filter(Boolean);
    expect(files).toEqual(expect.arrayContaining(['package/package.json', 'package/LICENSE', 'package/README.md', 'package/dist/library/index.js', 'package/dist/library/index.d.ts', 'package/dist/library/express/index.js']));
    expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    // Only the library and the shared files it imports: nothing of the service's folders, no tests.
    expect(files.filter((file) => file.startsWith('package/dist/') && !/^package\/dist\/(library|shared)\//.test(file))).toEqual([]);
    expect(files.filter((file) => /(^|\/)test\//.test(file))).toEqual([]);
    expect(files.filter((file) => file.startsWith('package/dist/shared/')).sort()).toEqual(['package/dist/shared/describe-error.d.ts', 'package/dist/shared/describe-error.js', 'package/dist/shared/logger.d.ts', 'package/dist/shared/logger.js']);
  });

  test('installs with express and redis alone: no service-only dependency comes with it', () => {
    for (const serviceOnly of ['@google-cloud/logging', '@modelcontextprotocol/server', 'prom-client', 'zod', 'jose', 'firebase-admin']) {
      expect([serviceOnly, existsSync(path.join(plain, 'node_modules', serviceOnly))]).toEqual([serviceOnly, false]);
    }
  });

  test('require("firelimit") on plain node loads neither redis nor firebase-admin until a store asks', async () => {
    const probe = `
      const firelimit = require('firelimit');
      const express = require('firelimit/express');
      const quota = require('firelimit/quota');
      const mcp = require('firelimit/mcp');
      const loaded = Object.keys(require.cache).filter((file) => /node_modules[\\\\/](redis|@redis|firebase-admin|express)[\\\\/]/.test(file));
      console.log(JSON.stringify({ loaded, names: [typeof firelimit.createRateLimiter, typeof firelimit.createMemoryStore, typeof firelimit.createRedisStore, typeof firelimit.createRtdbStore, typeof express.createRateLimitMiddleware, typeof express.createMcpRefusalWriter, typeof quota.createUpstreamQuota, typeof mcp.createJsonRpcPricing] }));`;
    const { stdout } = await run(process.execPath, ['-e', probe], { cwd: plain });
    expect(JSON.parse(stdout)).toEqual({ loaded: [], names: Array(8).fill('function') });
  });

  test('an RTDB store given something that is not a Database says what it needs', async () => {
    const probe = `require('firelimit').createRtdbStore({ database: {}, rootPath: 'x' }).then(() => console.log('created'), (error) => console.log(error.message));`;
    const { stdout } = await run(process.execPath, ['-e', probe], { cwd: plain });
    expect(stdout.trim()).toBe('createRtdbStore: `database` must be a firebase-admin Database, e.g. getDatabase(app) from firebase-admin/database');
  });

  test.each([['CommonJS', 'app.cjs'], ['ESM', 'app.mjs']])('from %s, a route limited to 3 a minute answers 200, 200, 200, then 429 with Retry-After', async (_kind, file) => {
    const app = await started(plain, file, { LIMIT: '3' });
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await hello(app.port, 'caller-a');
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(last?.headers.get('ratelimit-policy') ?? last?.headers.get('ratelimit')).toBeTruthy();
    // Another caller has a figure of its own.
    expect((await hello(app.port, 'caller-b')).status).toBe(200);
    await app.stop();
  });

  test('the TypeScript twin passes tsc --strict with module nodenext, skipLibCheck off, and runs compiled', async () => {
    await typecheckScratch(plain, ['app.ts'], 'build');
    const app = await started(plain, 'build/app.js', { LIMIT: '3' });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await hello(app.port, 'caller-ts')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    await app.stop();
  });

  test('three processes of the app on one redis-server admit exactly the limit for one key', async () => {
    const limit = 20;
    const instances = await Promise.all([0, 1, 2].map(() => started(plain, 'app.cjs', { LIMIT: String(limit), REDIS_URL: redis.url })));
    // 60 calls for one key, all at once, spread over the three processes.
    const answers = await Promise.all(Array.from({ length: 3 * limit }, (_, i) => hello((instances[i % 3] as AppProcess).port, 'shared-key')));
    const admitted = answers.filter((answer) => answer.status === 200).length;
    const refused = answers.filter((answer) => answer.status === 429).length;
    // Three local windows would admit 3 × the limit.
    expect({ admitted, refused }).toEqual({ admitted: limit, refused: 2 * limit });
    await Promise.all(instances.map((instance) => instance.stop()));
  });
});

describe('examples/mcp-server: an SDK 2.x Express MCP server limited per caller', () => {
  let withSdk: string | undefined;
  afterAll(() => removeDir(withSdk));

  test('type-checks from the tarball and refuses the third call of a caller limited to 2 with a JSON-RPC 429', async () => {
    withSdk = await scratchProject(tarball, ['express', 'redis', '@types/express', '@types/node', '@modelcontextprotocol/server', '@modelcontextprotocol/express', '@modelcontextprotocol/node', 'zod']);
    copyExample('mcp-server', withSdk, ['server.ts']);
    await typecheckScratch(withSdk, ['server.ts'], 'build');
    const app = await started(withSdk, 'build/server.js', { LIMIT: '2', REDIS_URL: redis.url });
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '1.0.0' } } });
    const call = (): Promise<Response> =>
      fetch(`http://127.0.0.1:${app.port}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-caller': 'mcp-caller' }, body: initialize });
    const answers = [await call(), await call(), await call()];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 429]);
    const refusal = (await (answers[2] as Response).json()) as { id: unknown; error: { code: number; message: string } };
    expect(refusal.id).toBe(1);
    expect(refusal.error.code).toBe(-32029);
    expect(Number((answers[2] as Response).headers.get('retry-after'))).toBeGreaterThan(0);
    await app.stop();
  });
});
