import { LIMITS_FILE_MAX_BYTES, parseLimitsFile, type LimitsFileDefaults } from '../../src/config/limits-file';

// parseLimitsFile on its own: every message of the file's schema, exactly, and the tiers it builds.
// limits-config.test.ts covers the file through loadConfig.

const FIX = 'correct that field in LIMITS_FILE (docs/limits-file.md shows every field), or unset LIMITS_FILE';
const fixedWindow: LimitsFileDefaults = { algorithm: 'fixed-window' };

const withTiers = (tiers: unknown): string => JSON.stringify({ tiers });
const oneLimit = (limit: Record<string, unknown>): string => withTiers({ pro: { limits: [limit] } });

/** The problems of a file that must be refused, as "problem" strings; the fix is checked to be FIX. */
function problemsOf(text: string, defaults = fixedWindow): string[] {
  const result = parseLimitsFile(text, defaults);
  if (result.ok) throw new Error('expected the file to be refused');
  return result.problems.map((p) => {
    expect(p.knob).toBe('LIMITS_FILE');
    return p.problem;
  });
}

describe('parseLimitsFile: the schema’s messages, each naming its field', () => {
  const aDuration = 'expected a duration such as "1s", "1m", "1h" or "1d"';
  test.each<[string, string, string]>([
    ['a fractional limit', oneLimit({ limit: 1.5, window: '1m' }), 'tiers.pro.limits[0].limit: expected a whole number of calls'],
    ['a limit given as text', oneLimit({ limit: '5', window: '1m' }), 'tiers.pro.limits[0].limit: expected a whole number of calls'],
    ['a missing limit', oneLimit({ window: '1m' }), 'tiers.pro.limits[0].limit: expected a whole number of calls'],
    ['a limit of 0', oneLimit({ limit: 0, window: '1m' }), 'tiers.pro.limits[0].limit: expected at least 1'],
    ['a window given as a number', oneLimit({ limit: 5, window: 60 }), `tiers.pro.limits[0].window: ${aDuration}`],
    ['a missing window', oneLimit({ limit: 5 }), `tiers.pro.limits[0].window: ${aDuration}`],
    ['a window without a unit', oneLimit({ limit: 5, window: '60' }), `tiers.pro.limits[0].window: ${aDuration} (a whole number and one unit)`],
    ['a fractional burst', oneLimit({ algorithm: 'token-bucket', limit: 5, window: '1m', burst: 1.5 }), 'tiers.pro.limits[0].burst: expected a whole number of calls'],
    ['a burst given as text', oneLimit({ algorithm: 'token-bucket', limit: 5, window: '1m', burst: '2' }), 'tiers.pro.limits[0].burst: expected a whole number of calls'],
    ['a burst of 0', oneLimit({ algorithm: 'token-bucket', limit: 5, window: '1m', burst: 0 }), 'tiers.pro.limits[0].burst: expected at least 1'],
    ['a name with a space', oneLimit({ name: 'a b', limit: 5, window: '1m' }), 'tiers.pro.limits[0].name: expected 1-64 characters of A-Z a-z 0-9 _ -'],
    // The name's schema has no message of its own for a wrong type: zod's says what was wrong.
    ['a name given as a number', oneLimit({ name: 7, limit: 5, window: '1m' }), 'tiers.pro.limits[0].name: Invalid input: expected string, received number'],
    [
      'an unknown algorithm',
      oneLimit({ algorithm: 'gcra', limit: 5, window: '1m' }),
      'tiers.pro.limits[0].algorithm: expected one of fixed-window, sliding-window, sliding-log, token-bucket, leaky-bucket',
    ],
    ['limits that are not a list', withTiers({ pro: { limits: 'x' } }), 'tiers.pro.limits: expected a list of limits'],
    ['a tier without limits', withTiers({ pro: { limits: [] } }), 'tiers.pro.limits: a tier needs at least one limit'],
    [
      'a tier of 9 limits',
      withTiers({ pro: { limits: ['1s', '2s', '3s', '4s', '5s', '6s', '7s', '8s', '9s'].map((window) => ({ limit: 5, window })) } }),
      'tiers.pro.limits: a tier holds at most 8 limits',
    ],
    ['tiers that are a list', JSON.stringify({ tiers: [] }), 'tiers: expected an object of tiers by name'],
    ['tiers that are not an object', JSON.stringify({ tiers: [] }), 'tiers: expected an object of tiers by name'],
    ['an unknown field on a tier', withTiers({ pro: { limits: [{ limit: 5, window: '1m' }], rules: [] } }), 'tiers.pro: unknown field "rules"'],
    ['two unknown fields on a limit', oneLimit({ limit: 5, window: '1m', max: 1, min: 2 }), 'tiers.pro.limits[0]: unknown field "max", "min"'],
  ])('%s', (_name, text, problem) => {
    const result = parseLimitsFile(text, fixedWindow);
    expect(result).toEqual({ ok: false, problems: [{ knob: 'LIMITS_FILE', problem, fix: FIX }] });
  });

  test('a file that is not an object is blamed on the whole file', () => {
    expect(problemsOf('[]')).toEqual([expect.stringMatching(/^\(the whole file\): /)]);
  });

  test('text that is not JSON: the line, the column and what was expected', () => {
    const result = parseLimitsFile('{ tiers: ', fixedWindow);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      { knob: 'LIMITS_FILE', problem: 'the file is not valid JSON: line 1, column 3: expected a key in double quotes, found "t"', fix: 'fix the file at that line and column (docs/limits-file.md shows every field)' },
    ]);
  });
});

describe('parseLimitsFile: the checks beyond the schema', () => {
  test('a burst on a window algorithm, even one that comes from the default, names the algorithm and the fix', () => {
    expect(parseLimitsFile(oneLimit({ limit: 5, window: '1m', burst: 2 }), { algorithm: 'sliding-window' })).toEqual({
      ok: false,
      problems: [
        {
          knob: 'LIMITS_FILE',
          problem: 'tiers.pro.limits[0].burst: only token-bucket and leaky-bucket have a burst, this limit is sliding-window',
          fix: 'remove "burst", or set "algorithm" to token-bucket or leaky-bucket',
        },
      ],
    });
  });

  test('a burst is accepted on either bucket, named in the limit or by the default', () => {
    expect(parseLimitsFile(oneLimit({ algorithm: 'leaky-bucket', limit: 5, window: '1m', burst: 2 }), fixedWindow).ok).toBe(true);
    expect(parseLimitsFile(oneLimit({ algorithm: 'token-bucket', limit: 5, window: '1m', burst: 2 }), fixedWindow).ok).toBe(true);
    expect(parseLimitsFile(oneLimit({ limit: 5, window: '1m', burst: 2 }), { algorithm: 'token-bucket' }).ok).toBe(true);
    expect(parseLimitsFile(oneLimit({ limit: 5, window: '1m', burst: 2 }), { algorithm: 'leaky-bucket' }).ok).toBe(true);
  });

  test('a bad tier name is refused with its own fix, and the other tiers are still checked', () => {
    const text = withTiers({ 'has space': { limits: [{ limit: 5, window: '1m' }] }, [`${'x'.repeat(65)}`]: { limits: [{ limit: 5, window: '1m' }] }, ok: { limits: [{ limit: 5, window: '1m', burst: 1 }] } });
    expect(parseLimitsFile(text, fixedWindow)).toEqual({
      ok: false,
      problems: [
        { knob: 'LIMITS_FILE', problem: 'tiers.has space: a tier name is 1-64 characters of A-Z a-z 0-9 _ -', fix: 'rename the tier (tokens name it with --tier)' },
        { knob: 'LIMITS_FILE', problem: `tiers.${'x'.repeat(65)}: a tier name is 1-64 characters of A-Z a-z 0-9 _ -`, fix: 'rename the tier (tokens name it with --tier)' },
        {
          knob: 'LIMITS_FILE',
          problem: 'tiers.ok.limits[0].burst: only token-bucket and leaky-bucket have a burst, this limit is fixed-window',
          fix: 'remove "burst", or set "algorithm" to token-bucket or leaky-bucket',
        },
      ],
    });
  });

  test('a set the limiter would refuse is reported under the tier, with the fix', () => {
    expect(parseLimitsFile(withTiers({ pro: { limits: [{ algorithm: 'sliding-log', limit: 5000, window: '1m' }] } }), fixedWindow)).toEqual({
      ok: false,
      problems: [{ knob: 'LIMITS_FILE', problem: expect.stringMatching(/^tiers\.pro: policy "pro": a sliding-log keeps one entry per call/), fix: FIX }],
    });
  });
});

describe('parseLimitsFile: the tiers it builds', () => {
  test('names: a given name wins; a one-limit tier is named after the tier; several are named by their window; a burst only where given', () => {
    const text = withTiers({
      solo: { limits: [{ limit: 5, window: '30s' }] },
      named: { limits: [{ name: 'my-limit', limit: 5, window: '30s' }] },
      multi: {
        limits: [
          { algorithm: 'token-bucket', limit: 60, window: '1m', burst: 10 },
          { name: 'daily', limit: 10_000, window: '1d' },
          { algorithm: 'leaky-bucket', limit: 3, window: '1h' },
        ],
      },
      'tier_64-chars': { limits: [{ limit: 1, window: '1s' }] },
    });
    expect(parseLimitsFile(text, { algorithm: 'sliding-window' })).toStrictEqual({
      ok: true,
      costs: new Map(),
      rules: [],
      upstreamTools: new Map(),
      upstreamCosts: { methods: new Map(), tools: new Map() },
      tiers: [
        { name: 'solo', policies: [{ name: 'solo', algorithm: 'sliding-window', limit: 5, windowMs: 30_000 }] },
        { name: 'named', policies: [{ name: 'my-limit', algorithm: 'sliding-window', limit: 5, windowMs: 30_000 }] },
        {
          name: 'multi',
          policies: [
            { name: 'multi-1m', algorithm: 'token-bucket', limit: 60, windowMs: 60_000, burst: 10 },
            { name: 'daily', algorithm: 'sliding-window', limit: 10_000, windowMs: 86_400_000 },
            { name: 'multi-1h', algorithm: 'leaky-bucket', limit: 3, windowMs: 3_600_000 },
          ],
        },
        { name: 'tier_64-chars', policies: [{ name: 'tier_64-chars', algorithm: 'sliding-window', limit: 1, windowMs: 1000 }] },
      ],
    });
  });

  test('an empty object of tiers is a valid file with no tiers', () => {
    expect(parseLimitsFile(withTiers({}), fixedWindow)).toEqual({ ok: true, tiers: [], costs: new Map(), rules: [], upstreamTools: new Map(), upstreamCosts: { methods: new Map(), tools: new Map() } });
  });

  test('a file without tiers is valid (rules or costs alone): no tiers', () => {
    expect(parseLimitsFile(JSON.stringify({}), fixedWindow)).toEqual({ ok: true, tiers: [], costs: new Map(), rules: [], upstreamTools: new Map(), upstreamCosts: { methods: new Map(), tools: new Map() } });
  });

  test('a 64-character tier name and limit name are accepted', () => {
    const name = `${'A'.repeat(30)}${'z'.repeat(30)}0_-9`;
    const result = parseLimitsFile(withTiers({ [name]: { limits: [{ name, limit: 1, window: '1s' }] } }), fixedWindow);
    expect(result.ok && result.tiers.map((t) => [t.name, t.policies[0].name])).toEqual([[name, name]]);
  });
});

describe('parseLimitsFile: what JSON.parse let through', () => {
  const pro = (limit: string) => `{ "limits": [{ "limit": ${limit}, "window": "1m" }] }`;

  test('a byte order mark before the JSON is accepted (it was an invisible "Unexpected token")', () => {
    const result = parseLimitsFile(`\uFEFF{ "tiers": { "pro": ${pro('10')} } }`, fixedWindow);
    expect(result.ok && result.tiers.map((t) => [t.name, t.policies[0].limit])).toEqual([['pro', 10]]);
  });

  test('a tier given twice is refused, naming both the key and the place (JSON.parse booted on the second figure)', () => {
    expect(problemsOf(`{ "tiers": { "pro": ${pro('10')},\n  "pro": ${pro('99999')} } }`)).toEqual([
      'the file is not valid JSON: line 2, column 3 (tiers): "pro" is given twice in one object; JSON would keep only the last, so keep one',
    ]);
  });

  test('a file over 1 MiB is refused before it is read as JSON, with its size and the bound', () => {
    const text = `{ "tiers": { "pro": ${pro('10')} } }`;
    const padded = text + ' '.repeat(LIMITS_FILE_MAX_BYTES - text.length + 1);
    expect(problemsOf(padded)).toEqual([`the file is ${LIMITS_FILE_MAX_BYTES + 1} bytes, more than the ${LIMITS_FILE_MAX_BYTES} bytes accepted`]);
    expect(parseLimitsFile(padded.slice(0, -1), fixedWindow).ok).toBe(true);
  });

  test.each<[string, string, string]>([
    ['a limit of 2^53-1', pro('9007199254740991'), 'tiers.pro.limits[0].limit: expected at most 1000000000 (the largest accepted)'],
    ['a limit one past the largest', pro('1000000001'), 'tiers.pro.limits[0].limit: expected at most 1000000000 (the largest accepted)'],
    ['a window of 10^8 days', '{ "limits": [{ "limit": 5, "window": "100000000d" }] }', 'tiers.pro.limits[0].window: expected at most 366d (the longest window accepted)'],
    ['a window one second past 366 days', '{ "limits": [{ "limit": 5, "window": "31622401s" }] }', 'tiers.pro.limits[0].window: expected at most 366d (the longest window accepted)'],
  ])('%s is refused with the largest accepted', (_name, tier, problem) => {
    expect(problemsOf(`{ "tiers": { "pro": ${tier} } }`)).toEqual([problem]);
  });

  test('the largest limit and the longest window are accepted', () => {
    const result = parseLimitsFile(`{ "tiers": { "pro": { "limits": [{ "limit": 1000000000, "window": "366d" }] } } }`, fixedWindow);
    expect(result.ok && result.tiers[0]?.policies[0]).toEqual({ name: 'pro', algorithm: 'fixed-window', limit: 1_000_000_000, windowMs: 366 * 86_400_000 });
  });
});
