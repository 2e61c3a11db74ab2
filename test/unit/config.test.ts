import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, findTier } from '../../src/config/config';
import { ConfigError } from '../../src/config/config-error';

const fixturesDir = path.join(__dirname, '..', 'fixtures', 'bad-config');

interface Fixture {
  readonly name: string;
  readonly env: NodeJS.ProcessEnv;
  readonly expected: string[];
  readonly secrets: string[];
}

/** Each fixture is a small .env file; `# expect:` lines must appear in the boot error, `# secret-not-echoed:` must not. */
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

const fixtures = fs.readdirSync(fixturesDir).filter((f) => f.endsWith('.env')).sort().map(readFixture);

describe('loadConfig refuses bad configuration with the knob, the problem and the fix', () => {
  it('has fixtures', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(10);
  });

  it.each(fixtures.map((f) => [f.name, f] as const))('%s', (_name, fixture) => {
    let thrown: unknown;
    try {
      loadConfig(fixture.env, { cwd: '/srv', readFile: () => 'redis://from-file' });
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
    expect(config.rateLimit.defaultTier).toEqual({ name: 'default', limit: 120, windowMs: 60_000 });
    expect(config.rateLimit.timeoutMs).toBe(1500);
    expect(config.rateLimit.failurePolicy).toBe('fail-open');
    expect(config.tokens.store).toBe('file');
    expect(config.tokens.file).toBe('/srv/.firelimit/tokens.json');
    expect(config.http.trustProxyHops).toBe(1);
    expect(config.log.format).toBe('json');
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '' }).rateLimit.defaultTier.limit).toBe(120);
  });

  it('builds every tier from RATE_LIMIT_TIERS beside the default', () => {
    const config = loadConfig({ RATE_LIMIT_PER_MINUTE: '30', RATE_LIMIT_TIERS: 'pro=600, partner=1200' });
    expect(config.rateLimit.tiers.map((t) => [t.name, t.limit])).toEqual([
      ['default', 30],
      ['pro', 600],
      ['partner', 1200],
    ]);
    expect(findTier(config, 'pro')?.limit).toBe(600);
    expect(findTier(config, 'gold')).toBeUndefined();
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
