import type { ConfigProblem } from '../../src/config/config-error';
import type { KnobValues } from '../../src/config/knobs';
import { tiersOf } from '../../src/config/tiers-from-env';
import type { Tier } from '../../src/config/tier';

type TierKnobs = Pick<KnobValues, 'RATE_LIMIT_ALGORITHM' | 'RATE_LIMIT_PER_MINUTE' | 'RATE_LIMIT_BURST' | 'RATE_LIMIT_TIERS' | 'LIMITS_FILE'>;

const defaults: TierKnobs = { RATE_LIMIT_ALGORITHM: 'fixed-window', RATE_LIMIT_PER_MINUTE: 120, RATE_LIMIT_BURST: undefined, RATE_LIMIT_TIERS: [], LIMITS_FILE: undefined };

/** tiersOf over parsed knob values (the knobs' own parsing is config.test.ts's), with the file's text given. */
function tiers(knobs: Partial<TierKnobs>, options: { env?: NodeJS.ProcessEnv; file?: string } = {}): { tiers: Tier[]; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const v = { ...defaults, ...knobs } as KnobValues;
  const result = tiersOf(options.env ?? {}, v, '/srv/limits.json', () => options.file ?? '', problems);
  return { tiers: result.tiers, problems };
}

const fileWith = (tierMap: unknown): string => JSON.stringify({ tiers: tierMap });
const defaultInFile = fileWith({ default: { limits: [{ limit: 10, window: '1s' }] } });

describe('tiersOf: the tiers from the environment', () => {
  test('without RATE_LIMIT_BURST the default policy has no burst at all', () => {
    expect(tiers({}).tiers).toStrictEqual([{ name: 'default', policies: [{ name: 'default', algorithm: 'fixed-window', limit: 120, windowMs: 60_000 }] }]);
  });

  test('RATE_LIMIT_BURST goes on the default policy only; RATE_LIMIT_TIERS tiers share the algorithm', () => {
    const result = tiers({ RATE_LIMIT_ALGORITHM: 'token-bucket', RATE_LIMIT_BURST: 10, RATE_LIMIT_TIERS: [{ name: 'pro', perMinute: 600 }] });
    expect(result.problems).toEqual([]);
    expect(result.tiers).toStrictEqual([
      { name: 'default', policies: [{ name: 'default', algorithm: 'token-bucket', limit: 120, windowMs: 60_000, burst: 10 }] },
      { name: 'pro', policies: [{ name: 'pro', algorithm: 'token-bucket', limit: 600, windowMs: 60_000 }] },
    ]);
  });

  test('a RATE_LIMIT_TIERS figure the algorithm cannot hold is blamed on RATE_LIMIT_TIERS, with the fix', () => {
    const result = tiers({ RATE_LIMIT_ALGORITHM: 'sliding-log', RATE_LIMIT_PER_MINUTE: 100, RATE_LIMIT_TIERS: [{ name: 'pro', perMinute: 5000 }] });
    expect(result.problems).toEqual([
      {
        knob: 'RATE_LIMIT_TIERS',
        problem: expect.stringMatching(/^tier pro under RATE_LIMIT_ALGORITHM=sliding-log: policy "pro": a sliding-log keeps one entry per call, so its limit must be at most 1000, got 5000/),
        fix: 'choose a figure or an algorithm that fits (docs/algorithms.md), or define the tier in LIMITS_FILE',
      },
    ]);
  });

  test('a default figure the algorithm cannot hold is blamed on RATE_LIMIT_PER_MINUTE', () => {
    expect(tiers({ RATE_LIMIT_ALGORITHM: 'sliding-log', RATE_LIMIT_PER_MINUTE: 5000 }).problems.map((p) => p.knob)).toEqual(['RATE_LIMIT_PER_MINUTE']);
  });
});

describe('tiersOf: LIMITS_FILE', () => {
  test('a file’s "default" takes the default tier’s place, first, and the other tiers keep their order', () => {
    const file = fileWith({ default: { limits: [{ limit: 10, window: '1s' }] }, gold: { limits: [{ limit: 30, window: '1m' }] } });
    const result = tiers({ LIMITS_FILE: 'limits.json', RATE_LIMIT_TIERS: [{ name: 'pro', perMinute: 600 }] }, { file });
    expect(result.problems).toEqual([]);
    expect(result.tiers.map((t) => t.name)).toEqual(['default', 'pro', 'gold']);
    expect(result.tiers[0]?.policies).toStrictEqual([{ name: 'default', algorithm: 'fixed-window', limit: 10, windowMs: 1000 }]);
  });

  test('a default-tier knob set to blanks counts as unset', () => {
    const result = tiers({ LIMITS_FILE: 'limits.json' }, { env: { RATE_LIMIT_PER_MINUTE: '  ', RATE_LIMIT_BURST: '' }, file: defaultInFile });
    expect(result.problems).toEqual([]);
    expect(result.tiers.map((t) => t.policies[0].limit)).toEqual([10]);
  });

  test('"default" in the file and in default-tier knobs: every knob named, and the fix', () => {
    const env = { RATE_LIMIT_PER_MINUTE: '50', RATE_LIMIT_ALGORITHM: 'fixed-window', RATE_LIMIT_BURST: '3' };
    expect(tiers({ LIMITS_FILE: 'limits.json' }, { env, file: defaultInFile }).problems).toEqual([
      {
        knob: 'LIMITS_FILE',
        problem: 'tiers.default is defined in the file and by RATE_LIMIT_PER_MINUTE, RATE_LIMIT_ALGORITHM, RATE_LIMIT_BURST',
        fix: 'keep one: remove tiers.default from LIMITS_FILE, or unset RATE_LIMIT_PER_MINUTE, RATE_LIMIT_ALGORITHM, RATE_LIMIT_BURST',
      },
    ]);
  });

  test('a tier in the file and in RATE_LIMIT_TIERS: refused with the fix, and the environment’s stays', () => {
    const result = tiers({ LIMITS_FILE: 'limits.json', RATE_LIMIT_TIERS: [{ name: 'pro', perMinute: 600 }] }, { file: fileWith({ pro: { limits: [{ limit: 5, window: '1m' }] } }) });
    expect(result.problems).toEqual([
      { knob: 'LIMITS_FILE', problem: 'tiers.pro is defined in the file and in RATE_LIMIT_TIERS', fix: 'keep one: remove pro from RATE_LIMIT_TIERS or from LIMITS_FILE' },
    ]);
    expect(result.tiers.map((t) => [t.name, t.policies[0].limit])).toEqual([
      ['default', 120],
      ['pro', 600],
    ]);
  });

  test('a file with problems adds its problems and no tiers', () => {
    const result = tiers({ LIMITS_FILE: 'limits.json' }, { file: '{' });
    expect(result.problems.map((p) => p.knob)).toEqual(['LIMITS_FILE']);
    expect(result.tiers.map((t) => t.name)).toEqual(['default']);
  });
});
