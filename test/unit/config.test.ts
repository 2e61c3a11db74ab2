import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, findTier, describeConfig, readKnob, type Config } from '../../src/config/config';
import { knobs } from '../../src/config/knobs';
import { ConfigError } from '../../src/config/config-error';

const fixturesDir = path.join(__dirname, '..', 'fixtures', 'bad-config');

interface Fixture {
  readonly name: string;
  readonly env: NodeJS.ProcessEnv;
  readonly expected: string[];
  readonly secrets: string[];
}

/**
 * Each fixture is a small .env file; `# expect:` lines must appear in the boot
 * error, `# secret-not-echoed:` must not. LIMITS_FILE=limits/NAME names a file
 * in bad-config/limits/, read as the service reads it.
 */
function readFixture(file: string): Fixture {
  const env: NodeJS.ProcessEnv = {};
  const expected: string[] = [];
  const secrets: string[] = [];
  for (const line of fs.readFileSync(path.join(fixturesDir, file), 'utf8').split('\n')) {
    if (line.startsWith('# expect: ')) expected.push(line.slice('# expect: '.length));
    else if (line.startsWith('# secret-not-echoed: ')) secrets.push(line.slice('# secret-not-echoed: '.length));
    else if (line.includes('=') && !line.startsWith('#')) {
      const at = line.indexOf('=');
      env[line.slice(0, at)] = line.slice(at + 1);
    }
  }
  return { name: file.replace(/\.env$/, ''), env, expected, secrets };
}

function fixtureFile(filePath: string): string {
  return filePath.startsWith('/srv/limits/') ? fs.readFileSync(path.join(fixturesDir, 'limits', path.basename(filePath)), 'utf8') : 'redis://from-file';
}

const fixtures = fs.readdirSync(fixturesDir).filter((f) => f.endsWith('.env')).sort().map(readFixture);

describe('loadConfig refuses bad configuration with the knob, the problem and the fix', () => {
  it('has fixtures', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(10);
  });

  it.each(fixtures.map((f) => [f.name, f] as const))('%s', (_name, fixture) => {
    let thrown: unknown;
    try {
      loadConfig(fixture.env, { cwd: '/srv', readFile: fixtureFile });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    const message = (thrown as ConfigError).message;
    for (const part of fixture.expected) expect(message).toContain(part);
    for (const secret of fixture.secrets) expect(message).not.toContain(secret);
    expect((thrown as ConfigError).code).toBe('ERR_FIRELIMIT_CONFIG');
  });
});

describe('loadConfig defaults', () => {
  it('serves the embedded default with no environment at all', () => {
    const config = loadConfig({}, { cwd: '/srv', stdoutIsTty: false });
    expect(config.port).toBe(8080);
    expect(config.rateLimit.backend).toBe('memory');
    expect(config.rateLimit.defaultTier).toEqual({ name: 'default', policies: [{ name: 'default', algorithm: 'fixed-window', limit: 120, windowMs: 60_000 }] });
    expect(config.rateLimit.timeoutMs).toBe(1500);
    expect(config.rateLimit.failurePolicy).toBe('fail-open');
    expect(config.rateLimit.outageShare).toBe('fleet');
    expect(config.rateLimit.hotKeys).toEqual({ hotRatePerSecond: 200, maxLeaseUnits: 100 });
    expect(config.tokens.store).toBe('file');
    expect(config.tokens.file).toBe('/srv/.firelimit/tokens.json');
    expect(config.http.trustProxyHops).toBe(0);
    expect(config.http.allowedHosts).toEqual([]);
    expect(config.http.allowAnyHost).toBe(false);
    expect(config.http.headersTimeoutMs).toBe(10_000);
    expect(config.http.requestTimeoutMs).toBe(30_000);
    expect(config.http.keepAliveTimeoutMs).toBe(5000);
    expect(config.http.maxConnections).toBe(0);
    expect(config.http.maxBatchMessages).toBe(100);
    expect(config.rateLimit.unauthenticated).toEqual({ name: 'unauthenticated', limit: 60, windowMs: 60_000 });
    expect(config.log.format).toBe('json');
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '' }).rateLimit.defaultTier.policies[0].limit).toBe(120);
  });

  it('builds every tier from RATE_LIMIT_TIERS beside the default', () => {
    const config = loadConfig({ RATE_LIMIT_PER_MINUTE: '30', RATE_LIMIT_TIERS: 'pro=600, partner=1200' });
    expect(config.rateLimit.tiers.map((t) => [t.name, t.policies[0].limit])).toEqual([
      ['default', 30],
      ['pro', 600],
      ['partner', 1200],
    ]);
    expect(findTier(config, 'pro')?.policies[0].limit).toBe(600);
    expect(findTier(config, 'gold')).toBeUndefined();
  });

  it.each([
    { name: 'no proxy is trusted off Cloud Run', env: {}, want: 0 },
    { name: 'one proxy (Google\'s front end) is trusted when K_SERVICE says Cloud Run', env: { K_SERVICE: 'firelimit' }, want: 1 },
    { name: 'an explicit 0 wins over K_SERVICE', env: { K_SERVICE: 'firelimit', TRUST_PROXY_HOPS: '0' }, want: 0 },
    { name: 'an explicit 2 wins over K_SERVICE', env: { K_SERVICE: 'firelimit', TRUST_PROXY_HOPS: '2' }, want: 2 },
    { name: 'an explicit 1 applies off Cloud Run', env: { TRUST_PROXY_HOPS: '1' }, want: 1 },
    { name: 'an empty K_SERVICE is unset', env: { K_SERVICE: '' }, want: 0 },
  ])('TRUST_PROXY_HOPS: $name', ({ env, want }) => {
    expect(loadConfig(env).http.trustProxyHops).toBe(want);
  });

  it.each([
    { name: 'rtdb waits 1500 ms (a round trip to the database)', env: { RATE_LIMIT_BACKEND: 'rtdb', FIREBASE_DATABASE_URL: 'https://p-default-rtdb.firebaseio.com' }, want: 1500 },
    { name: 'redis waits 500 ms (longer is already an outage)', env: { RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'redis://127.0.0.1:6379' }, want: 500 },
    { name: 'memory reports 1500 ms and never waits', env: {}, want: 1500 },
    { name: 'an explicit value wins on redis', env: { RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'redis://127.0.0.1:6379', RATE_LIMIT_TIMEOUT_MS: '2000' }, want: 2000 },
    { name: 'an explicit value wins on rtdb', env: { RATE_LIMIT_BACKEND: 'rtdb', FIREBASE_DATABASE_URL: 'https://p-default-rtdb.firebaseio.com', RATE_LIMIT_TIMEOUT_MS: '900' }, want: 900 },
  ])('RATE_LIMIT_TIMEOUT_MS default: $name', ({ env, want }) => {
    expect(loadConfig(env).rateLimit.timeoutMs).toBe(want);
  });

  it.each([
    { name: 'unset: no names, not any', value: undefined, hosts: [], any: false },
    { name: 'a list of names', value: 'mcp.example.com, my-svc-abc123-ew.a.run.app', hosts: ['mcp.example.com', 'my-svc-abc123-ew.a.run.app'], any: false },
    { name: '* alone: any Host', value: '*', hosts: [], any: true },
    { name: '* with spaces and a trailing comma: any Host', value: ' * , ', hosts: [], any: true },
  ])('ALLOWED_HOSTS $name', ({ value, hosts, any }) => {
    const config = loadConfig(value === undefined ? {} : { ALLOWED_HOSTS: value });
    expect(config.http.allowedHosts).toEqual(hosts);
    expect(config.http.allowAnyHost).toBe(any);
  });

  it.each([
    ['rtdb', { FIREBASE_DATABASE_URL: 'https://demo.firebaseio.com' }, 20],
    ['redis', { REDIS_URL: 'redis://cache:6379' }, 200],
    ['memory', {}, 200],
  ] as const)('leases hot keys from %s\'s default rate when RATE_LIMIT_HOT_KEY_RATE_PER_SECOND is unset', (backend, env, rate) => {
    const config = loadConfig({ RATE_LIMIT_BACKEND: backend, ...env }, { cwd: '/srv', stdoutIsTty: false });
    expect(config.rateLimit.hotKeys?.hotRatePerSecond).toBe(rate);
    expect(loadConfig({ RATE_LIMIT_BACKEND: backend, ...env, RATE_LIMIT_HOT_KEY_RATE_PER_SECOND: '50' }, { cwd: '/srv', stdoutIsTty: false }).rateLimit.hotKeys?.hotRatePerSecond).toBe(50);
  });

  it.each(['fleet', 'instance'] as const)('reads RATE_LIMIT_OUTAGE_SHARE=%s', (share) => {
    expect(loadConfig({ RATE_LIMIT_OUTAGE_SHARE: share }, { cwd: '/srv', stdoutIsTty: false }).rateLimit.outageShare).toBe(share);
  });

  it('reads the Redis URL from a mounted secret file when REDIS_URL is unset', () => {
    const config = loadConfig(
      { RATE_LIMIT_BACKEND: 'redis', REDIS_URL_FILE: 'secrets/redis' },
      { cwd: '/srv', readFile: (p) => (p === '/srv/secrets/redis' ? 'redis://:pw@10.0.0.5:6379\n' : '') },
    );
    expect(config.redis.url).toBe('redis://:pw@10.0.0.5:6379');
  });

  it('does not read REDIS_URL unless the backend is redis', () => {
    expect(loadConfig({ REDIS_URL: 'not a url' }).redis.url).toBeUndefined();
  });
});

describe('REDIS_URL_FILE beside REDIS_URL', () => {
  const both = { RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'redis://variable:6379', REDIS_URL_FILE: 'secrets/redis' };

  it('uses the mounted secret file, not the variable', () => {
    expect(loadConfig(both, { cwd: '/srv', readFile: () => 'redis://:pw@secret-file:6379\n' }).redis.url).toBe('redis://:pw@secret-file:6379');
  });

  it('refuses to boot when the file cannot be read, rather than falling back to the variable', () => {
    const load = () =>
      loadConfig(both, {
        readFile: () => {
          throw new Error('ENOENT');
        },
      });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/REDIS_URL_FILE: the file cannot be read\n {4}fix: point REDIS_URL_FILE at a readable file/);
  });

  it('names REDIS_URL_FILE when the file holds a bad URL and the variable a good one', () => {
    expect(() => loadConfig(both, { readFile: () => 'http://:hunter2@x:6379' })).toThrow(/REDIS_URL_FILE: the URL must start with redis:\/\/ or rediss:\/\//);
  });
});

describe('loadConfig loads every valid explicit value', () => {
  it.each([
    { knob: 'PORT', value: '9090', read: (c: Config) => c.port, want: 9090 },
    { knob: 'K_SERVICE', value: 'firelimit', read: (c: Config) => c.http.trustProxyHops, want: 1 },
    { knob: 'TRUST_PROXY_HOPS', value: '3', read: (c: Config) => c.http.trustProxyHops, want: 3 },
    { knob: 'HTTP_HEADERS_TIMEOUT_MS', value: '20000', read: (c: Config) => c.http.headersTimeoutMs, want: 20_000 },
    { knob: 'HTTP_REQUEST_TIMEOUT_MS', value: '60000', read: (c: Config) => c.http.requestTimeoutMs, want: 60_000 },
    { knob: 'HTTP_REQUEST_TIMEOUT_MS', value: '10000', read: (c: Config) => c.http.requestTimeoutMs, want: 10_000 }, // equal to the headers default
    { knob: 'HTTP_KEEP_ALIVE_TIMEOUT_MS', value: '65000', read: (c: Config) => c.http.keepAliveTimeoutMs, want: 65_000 },
    { knob: 'MAX_CONNECTIONS', value: '500', read: (c: Config) => c.http.maxConnections, want: 500 },
    { knob: 'MAX_BATCH_MESSAGES', value: '1', read: (c: Config) => c.http.maxBatchMessages, want: 1 },
    { knob: 'MAX_BATCH_MESSAGES', value: '1000', read: (c: Config) => c.http.maxBatchMessages, want: 1000 },
    { knob: 'UNAUTHENTICATED_PER_MINUTE', value: '15', read: (c: Config) => c.rateLimit.unauthenticated.limit, want: 15 },
    { knob: 'REFUSED_REQUESTS_PER_MINUTE', value: '25', read: (c: Config) => c.rateLimit.refusedRequests.limit, want: 25 },
    { knob: 'RATE_LIMIT_TIMEOUT_MS', value: '250', read: (c: Config) => c.rateLimit.timeoutMs, want: 250 },
    { knob: 'RATE_LIMIT_HOT_KEYS', value: 'off', read: (c: Config) => c.rateLimit.hotKeys, want: undefined },
    { knob: 'RATE_LIMIT_HOT_KEYS', value: 'on', read: (c: Config) => c.rateLimit.hotKeys?.hotRatePerSecond, want: 200 },
    { knob: 'RATE_LIMIT_HOT_KEY_RATE_PER_SECOND', value: '1', read: (c: Config) => c.rateLimit.hotKeys?.hotRatePerSecond, want: 1 },
    { knob: 'RATE_LIMIT_HOT_KEY_RATE_PER_SECOND', value: '1000000', read: (c: Config) => c.rateLimit.hotKeys?.hotRatePerSecond, want: 1_000_000 },
    { knob: 'RATE_LIMIT_HOT_KEY_MAX_LEASE_UNITS', value: '1', read: (c: Config) => c.rateLimit.hotKeys?.maxLeaseUnits, want: 1 },
    { knob: 'RATE_LIMIT_HOT_KEY_MAX_LEASE_UNITS', value: '1000000', read: (c: Config) => c.rateLimit.hotKeys?.maxLeaseUnits, want: 1_000_000 },
  ])('$knob=$value', ({ knob, value, read, want }) => {
    expect(read(loadConfig({ [knob]: value }))).toBe(want);
  });
});

describe('loadConfig: hot-key leases', () => {
  it('leases nothing when RATE_LIMIT_HOT_KEYS is off, whatever the tuning knobs say', () => {
    expect(loadConfig({ RATE_LIMIT_HOT_KEYS: 'off', RATE_LIMIT_HOT_KEY_RATE_PER_SECOND: '50' }).rateLimit.hotKeys).toBeUndefined();
  });

  it.each([
    { name: 'the thresholds on a shared backend', env: { RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'redis://127.0.0.1:6379', RATE_LIMIT_HOT_KEY_RATE_PER_SECOND: '300', RATE_LIMIT_HOT_KEY_MAX_LEASE_UNITS: '40' }, want: /^leased from 300\/s per instance, up to 40 units/ },
    { name: 'off when turned off', env: { RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'redis://127.0.0.1:6379', RATE_LIMIT_HOT_KEYS: 'off' }, want: /^off$/ },
    { name: 'off on the memory backend, which shares nothing', env: {}, want: /^off \(memory backend\)$/ },
  ])('the boot line says whether hot keys lease: $name', ({ env, want }) => {
    expect(describeConfig(loadConfig(env)).hotKeys).toMatch(want);
  });
});

describe('loadConfig: tiers', () => {
  it('has only the default tier when RATE_LIMIT_TIERS is unset', () => {
    expect(loadConfig({}).rateLimit.tiers).toEqual([{ name: 'default', policies: [{ name: 'default', algorithm: 'fixed-window', limit: 120, windowMs: 60_000 }] }]);
  });

  it('accepts a limit of 1, spaces and an empty entry from a trailing comma', () => {
    expect(loadConfig({ RATE_LIMIT_TIERS: ' trial=1 , pro=600,' }).rateLimit.tiers.map((t) => [t.name, t.policies[0].limit])).toEqual([
      ['default', 120],
      ['trial', 1],
      ['pro', 600],
    ]);
  });
});

describe('loadConfig: the upstream credential', () => {
  const url = { UPSTREAM_MCP_URL: 'http://127.0.0.1:3000/mcp' };
  it('reads UPSTREAM_MCP_AUTHORIZATION_FILE, trimmed, and prefers it to the variable', () => {
    const config = loadConfig({ ...url, UPSTREAM_MCP_AUTHORIZATION: 'Bearer from-env', UPSTREAM_MCP_AUTHORIZATION_FILE: 'secret/upstream' }, { cwd: '/srv', readFile: (p) => (p === '/srv/secret/upstream' ? 'Bearer from-file\n' : '') });
    expect(config.upstream?.authorization).toBe('Bearer from-file');
  });

  it('refuses an unreadable file, naming the knob and not the value', () => {
    expect(() => loadConfig({ ...url, UPSTREAM_MCP_AUTHORIZATION_FILE: '/nope' }, { readFile: () => { throw new Error('ENOENT'); } })).toThrow(/UPSTREAM_MCP_AUTHORIZATION_FILE[\s\S]*cannot be read/);
  });

  it('describes the upstream at boot without its credential', () => {
    const config = loadConfig({ ...url, UPSTREAM_MCP_AUTHORIZATION: 'Bearer sk-very-secret', UPSTREAM_RATE: '15/min' });
    expect(JSON.stringify(describeConfig(config))).not.toContain('sk-very-secret');
    expect(config.upstream?.quota).toEqual({ limit: 15, windowMs: 60_000, headroom: 0.9, maxWaitMs: 60_000, dailyBudget: undefined, graceMs: 1000, holdMs: 2000 });
  });

  it('shows the upstream URL at boot without its query string, which may hold a key', () => {
    const config = loadConfig({ UPSTREAM_MCP_URL: 'https://mcp.example/mcp?api_key=k-abcdef123' });
    expect(JSON.stringify(describeConfig(config))).toContain('https://mcp.example/mcp?[not shown]');
    expect(JSON.stringify(describeConfig(config))).not.toContain('k-abcdef123');
  });

  it('has no upstream without UPSTREAM_MCP_URL', () => {
    expect(loadConfig({}).upstream).toBeUndefined();
  });
});

describe('number knobs read decimal digits only', () => {
  // Number() (z.coerce.number) reads all of these; RATE_LIMIT_PER_MINUTE=0b11 meant 3.
  const notDecimal = ['0b11', '0x1f', '0o7', '1e3', '5E-1', 'Infinity', '+5', ' 0x10 '];
  const names = Object.keys(knobs) as (keyof typeof knobs)[];

  test.each(names)('%s never reads a binary, hex, octal or exponent form as a number', (name) => {
    const readAsNumbers = notDecimal.filter((raw) => {
      const read = readKnob(name, raw);
      return read.ok && typeof read.value === 'number';
    });
    expect(readAsNumbers).toEqual([]);
  });

  test.each<[keyof typeof knobs, string, unknown]>([
    ['RATE_LIMIT_PER_MINUTE', '0120', 120],
    ['PORT', ' 8081 ', 8081],
    ['UPSTREAM_HEADROOM', '0.85', 0.85],
    ['UPSTREAM_HEADROOM', '.5', 0.5],
    ['MAX_CONNECTIONS', '0', 0],
  ])('%s=%j is read as %j', (name, raw, value) => {
    expect(readKnob(name, raw)).toEqual({ ok: true, value });
  });
});
