import { loadConfig } from '../../src/config/config';
import { ConfigError } from '../../src/config/config-error';
import { parseDuration, parseLimitsFile } from '../../src/config/limits-file';

/** Every problem of a config that must not boot, as "KNOB: problem". */
function problems(env: NodeJS.ProcessEnv, file?: string): string[] {
  try {
    loadConfig(env, { readFile: () => file ?? '' });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.knob}: ${p.problem}`);
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

const withFile = (tiers: unknown): string => JSON.stringify({ tiers });

describe('RATE_LIMIT_ALGORITHM and RATE_LIMIT_BURST', () => {
  test.each([
    ['fixed-window', undefined, { name: 'default', algorithm: 'fixed-window', limit: 120, windowMs: 60_000 }],
    ['sliding-log', undefined, { name: 'default', algorithm: 'sliding-log', limit: 120, windowMs: 60_000 }],
    ['token-bucket', '10', { name: 'default', algorithm: 'token-bucket', limit: 120, windowMs: 60_000, burst: 10 }],
    ['leaky-bucket', undefined, { name: 'default', algorithm: 'leaky-bucket', limit: 120, windowMs: 60_000 }],
  ])('%s with burst %p shapes the default tier', (algorithm, burst, policy) => {
    const config = loadConfig({ RATE_LIMIT_ALGORITHM: algorithm, ...(burst === undefined ? {} : { RATE_LIMIT_BURST: burst }) });
    expect(config.rateLimit.defaultTier.policies).toEqual([policy]);
  });

  test('extra tiers from RATE_LIMIT_TIERS use the same algorithm', () => {
    const config = loadConfig({ RATE_LIMIT_ALGORITHM: 'sliding-window', RATE_LIMIT_TIERS: 'pro=600' });
    expect(config.rateLimit.tiers[1]?.policies).toEqual([{ name: 'pro', algorithm: 'sliding-window', limit: 600, windowMs: 60_000 }]);
  });

  test.each([
    [{ RATE_LIMIT_ALGORITHM: 'gcra' }, /^RATE_LIMIT_ALGORITHM: .*expected one of fixed-window, sliding-window, sliding-log, token-bucket, leaky-bucket/],
    [{ RATE_LIMIT_BURST: '10' }, /^RATE_LIMIT_BURST: only token-bucket and leaky-bucket have a burst; RATE_LIMIT_ALGORITHM is fixed-window/],
    [{ RATE_LIMIT_ALGORITHM: 'token-bucket', RATE_LIMIT_BURST: '0' }, /^RATE_LIMIT_BURST: /],
    [{ RATE_LIMIT_ALGORITHM: 'sliding-log', RATE_LIMIT_PER_MINUTE: '5000' }, /^RATE_LIMIT_PER_MINUTE: tier default .*at most 1000, got 5000; use sliding-window/],
  ])('%p refuses to boot, naming the knob', (env, expected) => {
    expect(problems(env)).toEqual([expect.stringMatching(expected)]);
  });
});

describe('LIMITS_FILE', () => {
  test('a tier holds several limits, each with its own algorithm; unnamed ones are named by their window', () => {
    const file = withFile({
      pro: {
        limits: [
          { algorithm: 'token-bucket', limit: 60, window: '1m', burst: 10 },
          { limit: 10_000, window: '1d' },
        ],
      },
    });
    const config = loadConfig({ LIMITS_FILE: 'limits.json' }, { readFile: () => file });
    expect(config.rateLimit.tiers.map((t) => t.name)).toEqual(['default', 'pro']);
    expect(config.rateLimit.tiers[1]?.policies).toEqual([
      { name: 'pro-1m', algorithm: 'token-bucket', limit: 60, windowMs: 60_000, burst: 10 },
      { name: 'pro-1d', algorithm: 'fixed-window', limit: 10_000, windowMs: 86_400_000 },
    ]);
  });

  test('a limit without an algorithm takes RATE_LIMIT_ALGORITHM; a one-limit tier is named after the tier', () => {
    const config = loadConfig({ LIMITS_FILE: 'l.json', RATE_LIMIT_ALGORITHM: 'sliding-log' }, { readFile: () => withFile({ gold: { limits: [{ limit: 30, window: '30s' }] } }) });
    expect(config.rateLimit.tiers[1]?.policies).toEqual([{ name: 'gold', algorithm: 'sliding-log', limit: 30, windowMs: 30_000 }]);
  });

  test('the file may define the default tier when no default-tier knob is set', () => {
    const config = loadConfig({ LIMITS_FILE: 'l.json' }, { readFile: () => withFile({ default: { limits: [{ limit: 10, window: '1s' }, { limit: 100, window: '1m' }] } }) });
    expect(config.rateLimit.defaultTier.policies.map((p) => p.name)).toEqual(['default-1s', 'default-1m']);
  });

  test.each([
    ['not JSON', '{ tiers: ', /^LIMITS_FILE: the file is not valid JSON: line 1, column 3: expected a key in double quotes/],
    ['an unknown top-level field', JSON.stringify({ tiers: {}, rulez: [] }), /^LIMITS_FILE: \(the whole file\): unknown field "rulez"/],
    ['a typo in a limit', withFile({ pro: { limits: [{ limit: 1, window: '1m', algoritm: 'x' }] } }), /^LIMITS_FILE: tiers\.pro\.limits\[0\]: unknown field "algoritm"/],
    ['a window without a unit', withFile({ pro: { limits: [{ limit: 1, window: '60' }] } }), /^LIMITS_FILE: tiers\.pro\.limits\[0\]\.window: expected a duration such as "1s"/],
    ['a negative limit', withFile({ pro: { limits: [{ limit: -5, window: '1m' }] } }), /^LIMITS_FILE: tiers\.pro\.limits\[0\]\.limit: expected at least 1/],
    ['an unknown algorithm', withFile({ pro: { limits: [{ limit: 5, window: '1m', algorithm: 'gcra' }] } }), /^LIMITS_FILE: tiers\.pro\.limits\[0\]\.algorithm: expected one of/],
    ['a tier without limits', withFile({ pro: { limits: [] } }), /^LIMITS_FILE: tiers\.pro\.limits: a tier needs at least one limit/],
    ['a burst on a window', withFile({ pro: { limits: [{ limit: 5, window: '1m', burst: 2 }] } }), /^LIMITS_FILE: tiers\.pro\.limits\[0\]\.burst: only token-bucket and leaky-bucket have a burst/],
    ['two limits of one algorithm and window', withFile({ pro: { limits: [{ limit: 5, window: '1m' }, { limit: 6, window: '60s' }] } }), /^LIMITS_FILE: tiers\.pro: policies "pro-1m" and "pro-60s" are both fixed-window over 60000 ms/],
    ['a bad tier name', withFile({ 'has space': { limits: [{ limit: 5, window: '1m' }] } }), /^LIMITS_FILE: tiers\.has space: a tier name is 1-64 characters/],
  ])('%s refuses to boot, naming the field', (_label, file, expected) => {
    expect(problems({ LIMITS_FILE: 'limits.json' }, file)).toEqual([expect.stringMatching(expected)]);
  });

  test('a tier in both the file and RATE_LIMIT_TIERS, or a default set twice, is refused with both sources named', () => {
    const file = withFile({ pro: { limits: [{ limit: 5, window: '1m' }] }, default: { limits: [{ limit: 5, window: '1m' }] } });
    expect(problems({ LIMITS_FILE: 'l.json', RATE_LIMIT_TIERS: 'pro=600', RATE_LIMIT_PER_MINUTE: '50' }, file)).toEqual([
      'LIMITS_FILE: tiers.pro is defined in the file and in RATE_LIMIT_TIERS',
      'LIMITS_FILE: tiers.default is defined in the file and by RATE_LIMIT_PER_MINUTE',
    ]);
  });

  test('an unreadable file is refused with the path', () => {
    const refused = (() => {
      try {
        loadConfig({ LIMITS_FILE: 'missing.json' }, { cwd: '/srv', readFile: () => { throw new Error('ENOENT'); } });
      } catch (error) {
        return (error as ConfigError).problems;
      }
      return [];
    })();
    expect(refused).toEqual([{ knob: 'LIMITS_FILE', problem: 'the file /srv/missing.json cannot be read', fix: expect.stringContaining('readable JSON file') }]);
  });
});

describe('parseDuration', () => {
  test.each([
    ['1s', 1000],
    ['90s', 90_000],
    ['1m', 60_000],
    ['24h', 86_400_000],
    ['1d', 86_400_000],
  ])('%s is %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));
  test.each(['', '0s', '1', '1.5m', '1w', ' 1m', '01m', '1m ', '-1s'])('%p is not a duration', (text) => expect(parseDuration(text)).toBeUndefined());
});

test('parseLimitsFile lists every problem at once, not only the first', () => {
  const result = parseLimitsFile(withFile({ a: { limits: [{ limit: 0, window: '1m' }] }, b: { limits: [{ limit: 1, window: 'x' }] } }), { algorithm: 'fixed-window' });
  expect(result.ok).toBe(false);
  if (!result.ok) expect(result.problems.map((p) => p.problem.split(':')[0])).toEqual(['tiers.a.limits[0].limit', 'tiers.b.limits[0].window']);
});
