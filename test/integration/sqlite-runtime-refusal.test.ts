import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../../src/config/config-error';
import { loadConfig } from '../../src/config/config';
import { findNodeSqlite, loadNodeSqlite, SqliteUnavailableError } from '../../src/library/backends/sqlite/node-sqlite';
import { freePort } from '../support/server-process';

// RATE_LIMIT_BACKEND=sqlite on a runtime without node:sqlite (Node 20; Node 22 before 22.13 without a
// flag) refuses to boot with the remedy, and importing the store file there does not crash. The lookup is
// injected for the pure checks; a real Node 20 process, where the machine has one, checks the boot itself.

const REPO_ROOT = path.resolve(__dirname, '../..');
const REMEDY = /^RATE_LIMIT_BACKEND=sqlite needs Node 22\.13\+ \(node:sqlite\); this is Node v20\.20\.2; run on Node 24 or choose memory\/redis\/rtdb$/;

test.each([
  ['has no such builtin (Node 20)', () => undefined],
  ['knows the id but throws without --experimental-sqlite (Node 22.5-22.12)', () => {
    throw Object.assign(new Error('No such built-in module: node:sqlite'), { code: 'ERR_UNKNOWN_BUILTIN_MODULE' });
  }],
  ['answers something that is not the module', () => ({})],
])('a runtime that %s is refused with the remedy naming its version', (_, lookup) => {
  expect(findNodeSqlite(lookup)).toBeUndefined();
  expect(() => loadNodeSqlite(lookup, 'v20.20.2')).toThrow(SqliteUnavailableError);
  expect(() => loadNodeSqlite(lookup, 'v20.20.2')).toThrow(REMEDY);
});

test('loadConfig refuses RATE_LIMIT_BACKEND=sqlite without node:sqlite, naming the knob, the version and the fix', () => {
  let error: unknown;
  try {
    loadConfig({ RATE_LIMIT_BACKEND: 'sqlite' }, { cwd: '/srv', hasNodeSqlite: () => false, nodeVersion: 'v20.20.2' });
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).problems).toEqual([
    { knob: 'RATE_LIMIT_BACKEND', problem: expect.stringMatching(REMEDY), fix: 'run on Node 24 (or 22.13+), or set RATE_LIMIT_BACKEND to memory, redis or rtdb' },
  ]);
});

test('with node:sqlite, RATE_LIMIT_BACKEND=sqlite boots on SQLITE_PATH resolved against the working directory, default .firelimit/limits.sqlite', () => {
  const config = loadConfig({ RATE_LIMIT_BACKEND: 'sqlite' }, { cwd: '/srv', hasNodeSqlite: () => true });
  expect(config.rateLimit.backend).toBe('sqlite');
  expect(config.sqlite.path).toBe('/srv/.firelimit/limits.sqlite');
  expect(config.rateLimit.timeoutMs).toBe(500);
  expect(loadConfig({ RATE_LIMIT_BACKEND: 'sqlite', SQLITE_PATH: 'data/l.db' }, { cwd: '/srv', hasNodeSqlite: () => true }).sqlite.path).toBe('/srv/data/l.db');
});

test('another backend never asks whether the runtime has node:sqlite', () => {
  expect(() => loadConfig({ RATE_LIMIT_BACKEND: 'memory' }, { hasNodeSqlite: () => { throw new Error('asked'); } })).not.toThrow();
});

/** A node binary on this machine without node:sqlite: this one when it is Node 20, else the system's node if that is. */
function nodeWithoutSqlite(): string | undefined {
  for (const candidate of [process.execPath, '/usr/bin/node', '/usr/local/bin/node']) {
    const probe = spawnSync(candidate, ['-e', "process.stdout.write(process.getBuiltinModule?.('node:sqlite') ? 'yes' : 'no')"], { encoding: 'utf8' });
    if (probe.status === 0 && probe.stdout === 'no') return candidate;
  }
  return undefined;
}

const oldNode = nodeWithoutSqlite();
const describeOld = oldNode === undefined ? describe.skip : describe;
const oldVersion = oldNode === undefined ? 'none' : execFileSync(oldNode, ['-p', 'process.version'], { encoding: 'utf8' }).trim();

describeOld(`a real process on a node without node:sqlite (${oldNode ?? 'skipped: no such node binary on this machine'}, ${oldVersion})`, () => {
  const tsx = pathToFileURL(require.resolve('tsx')).href;
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-sqlite-refusal-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('the service refuses to boot with exit 78 and the remedy, and creates no file', async () => {
    // A free port: were the refusal gone, the service would serve there until the timeout ends it, and fail the test.
    const port = await freePort();
    const result = spawnSync(oldNode as string, ['--import', tsx, 'src/server.ts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 45_000,
      env: { ...process.env, RATE_LIMIT_BACKEND: 'sqlite', SQLITE_PATH: path.join(dir, 'limits.sqlite'), TOKENS_FILE: path.join(dir, 'tokens.json'), PORT: String(port) },
    });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain(`RATE_LIMIT_BACKEND: RATE_LIMIT_BACKEND=sqlite needs Node 22.13+ (node:sqlite); this is Node ${oldVersion}; run on Node 24 or choose memory/redis/rtdb`);
    expect(readdirSync(dir)).toEqual([]);
  });

  test('the store file imports there without crashing; only constructing a store refuses', () => {
    const script = "const m = require('./src/library/backends/sqlite/sqlite-store'); try { new m.SqliteWindowStore({ path: process.argv[1] }); console.log('constructed'); } catch (e) { console.log(e.name + ': ' + e.message); }";
    const result = spawnSync(oldNode as string, ['--import', tsx, '-e', script, path.join(dir, 'x.sqlite')], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 45_000 });
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe(`SqliteUnavailableError: RATE_LIMIT_BACKEND=sqlite needs Node 22.13+ (node:sqlite); this is Node ${oldVersion}; run on Node 24 or choose memory/redis/rtdb`);
  });
});
