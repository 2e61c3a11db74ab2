import { loadConfig } from '../../src/config/config';
import { parseRedisSeeds, scrubRedisSecrets } from '../../src/library/backends/redis/redis-url';

const SEEDS = 'redis://:s3cret@10.0.0.1:6379,redis://:s3cret@10.0.0.2:6379';
const redis = (env: Record<string, string>) => loadConfig({ RATE_LIMIT_BACKEND: 'redis', ...env }, { readFile: () => 'PEM' });

describe('REDIS_MODE=cluster reads REDIS_URL as seed nodes', () => {
  it('accepts several comma-separated seed nodes and keeps the mode', () => {
    const config = redis({ REDIS_MODE: 'cluster', REDIS_URL: SEEDS });
    expect(config.redis).toMatchObject({ mode: 'cluster', url: SEEDS });
    expect(parseRedisSeeds(SEEDS, 'cluster').map((seed) => `${seed.host}:${seed.port}`)).toEqual(['10.0.0.1:6379', '10.0.0.2:6379']);
  });

  it('defaults to standalone', () => {
    expect(redis({ REDIS_URL: 'redis://127.0.0.1:6379' }).redis.mode).toBe('standalone');
  });

  test.each([
    ['a /db in a cluster URL', { REDIS_MODE: 'cluster', REDIS_URL: 'redis://10.0.0.1:6379/2' }, /REDIS_URL: the URL names a database \(\/db\), which Redis Cluster does not have \(only 0\); remove the \/db/],
    ['a list without cluster mode', { REDIS_URL: SEEDS }, /REDIS_URL: the URL lists several URLs, which only REDIS_MODE=cluster reads; set REDIS_MODE=cluster/],
    ['an empty seed', { REDIS_MODE: 'cluster', REDIS_URL: 'redis://10.0.0.1:6379,,redis://10.0.0.2:6379' }, /REDIS_URL: the URL has an empty entry/],
    ['seeds with different credentials', { REDIS_MODE: 'cluster', REDIS_URL: 'redis://:a@10.0.0.1:6379,redis://:b@10.0.0.2:6379' }, /seed nodes differ in scheme or credentials/],
    ['an unknown mode', { REDIS_MODE: 'sentinel', REDIS_URL: 'redis://10.0.0.1:6379' }, /REDIS_MODE: expected standalone or cluster/],
    ['a CA file with redis://', { REDIS_URL: 'redis://10.0.0.1:6379', REDIS_TLS_CA_FILE: 'ca.pem' }, /REDIS_TLS_CA_FILE: a CA file is set but the Redis URL is redis:\/\/ \(no TLS\)/],
  ])('refuses %s at boot with the remedy', (_, env, message) => {
    expect(() => redis(env)).toThrow(message);
  });

  it('never repeats a seed URL or its password in the boot error', () => {
    let message = '';
    try {
      redis({ REDIS_MODE: 'cluster', REDIS_URL: 'redis://:hunter2@10.0.0.1:6379/3,redis://:hunter2@10.0.0.2:6379' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/REDIS_URL/);
    expect(message).not.toMatch(/hunter2|10\.0\.0\.1/);
  });

  it('scrubs every seed and every seed password from a message', () => {
    const url = 'redis://:p%40ss@a:1,redis://:other@b:2';
    expect(scrubRedisSecrets('x redis://:other@b:2 y other p@ss', url)).toBe('x *** y *** ***');
  });
});

describe('REDIS_TLS_CA_FILE', () => {
  it('resolves the CA file beside a rediss:// URL, standalone and cluster', () => {
    expect(redis({ REDIS_URL: 'rediss://redis.example:6380', REDIS_TLS_CA_FILE: '/etc/ca.pem' }).redis.tlsCaFile).toBe('/etc/ca.pem');
    expect(redis({ REDIS_MODE: 'cluster', REDIS_URL: 'rediss://a.example:6380,rediss://b.example:6380', REDIS_TLS_CA_FILE: '/etc/ca.pem' }).redis.tlsCaFile).toBe('/etc/ca.pem');
  });

  it('refuses an unreadable CA file, naming the knob', () => {
    const load = () => loadConfig({ RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'rediss://redis.example:6380', REDIS_TLS_CA_FILE: '/nope.pem' }, { readFile: () => { throw new Error('ENOENT'); } });
    expect(load).toThrow(/REDIS_TLS_CA_FILE: the file cannot be read\n {4}fix: point REDIS_TLS_CA_FILE at a readable PEM file/);
  });
});

describe('REDIS_KEY_PREFIX and hash tags', () => {
  it('refuses a hash tag in the prefix, saying the tag comes from the key', () => {
    expect(() => redis({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: '{fl}:' })).toThrow(/REDIS_KEY_PREFIX: a hash tag \(\{\.\.\.\}\) may not be part of the prefix: firelimit tags each limited key itself/);
  });

  it('still accepts a plain prefix', () => {
    expect(redis({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: 'fl:' }).redis.keyPrefix).toBe('fl:');
  });
});
