import {
  assertValidUpstreamPolicy,
  intervalOf,
  resolveUpstreamPolicy,
  type UpstreamPolicy,
  type UpstreamPolicyOptions,
} from '../../../src/library/schedule/upstream-policy';
import { holderIdOf } from '../../../src/library/schedule/upstream-holder';
import { formatUpstreamState, parseUpstreamState } from '../../../src/library/schedule/upstream-state';
import fc from 'fast-check';

describe('resolveUpstreamPolicy', () => {
  test('defaults: headroom 0.9, 60 s of wait, no daily budget, 1 s of grace, 100 reservations, a quarter of the queue per token', () => {
    // 15/min at 0.9: T = 4444.4 ms; with the grace a reservation takes 5444.4 ms, so 12 fit in 60 s, 3 per token.
    expect(resolveUpstreamPolicy({ limit: 15, windowMs: 60_000 })).toEqual({
      limit: 15, windowMs: 60_000, headroomBp: 9000, maxWaitMs: 60_000, dailyBudget: 0, graceMs: 1000, maxReservations: 100, maxReservationsPerHolder: 3,
    });
  });
  test.each<[string, UpstreamPolicyOptions, number]>([
    ['2/s at 0.9, 1 s grace, 60 s: 39 fit, 10 each', { limit: 2, windowMs: 1000 }, 10],
    ['15/min at 0.9: 12 fit, 3 each', { limit: 15, windowMs: 60_000 }, 3],
    ['no wait at all: 1 fits, 1 each', { limit: 2, windowMs: 1000, maxWaitMs: 0 }, 1],
    ['never more than maxReservations', { limit: 1000, windowMs: 1000, graceMs: 0, maxReservations: 7 }, 7],
    ['as given', { limit: 2, windowMs: 1000, maxReservationsPerHolder: 4 }, 4],
  ])('maxReservationsPerHolder: %s', (_name, options, perHolder) => {
    expect(resolveUpstreamPolicy(options).maxReservationsPerHolder).toBe(perHolder);
  });
  test('headroom is kept exactly in basis points', () => {
    expect(resolveUpstreamPolicy({ limit: 2, windowMs: 1000, headroom: 0.9375 }).headroomBp).toBe(9375);
    expect(resolveUpstreamPolicy({ limit: 2, windowMs: 1000, headroom: 1 }).headroomBp).toBe(10_000);
  });
  test.each<[string, UpstreamPolicyOptions, RegExp]>([
    ['a headroom of 0', { limit: 1, windowMs: 1000, headroom: 0 }, /headroom must be a fraction in \(0, 1\]/],
    ['a headroom above 1', { limit: 1, windowMs: 1000, headroom: 1.1 }, /headroom must be a fraction/],
    ['a headroom with 5 decimals', { limit: 1, windowMs: 1000, headroom: 0.12345 }, /at most 4 decimals/],
    ['a fractional limit', { limit: 1.5, windowMs: 1000 }, /limit must be an integer in \[1, 1000000\]/],
    ['a window over a day', { limit: 1, windowMs: 86_400_001 }, /windowMs must be an integer in \[1, 86400000\]/],
    ['a negative wait', { limit: 1, windowMs: 1000, maxWaitMs: -1 }, /maxWaitMs must be an integer/],
    ['a daily budget of 0 (leave it out for none)', { limit: 1, windowMs: 1000, dailyBudget: 0 }, /dailyBudget must be an integer in \[1,/],
    ['more than 1000 reservations', { limit: 1, windowMs: 1000, maxReservations: 1001 }, /maxReservations must be an integer in \[1, 1000\]/],
    ['more per token than in all', { limit: 1, windowMs: 1000, maxReservations: 5, maxReservationsPerHolder: 6 }, /maxReservationsPerHolder must be an integer in \[1, 5\], got 6/],
    ['0 per token', { limit: 1, windowMs: 1000, maxReservationsPerHolder: 0 }, /maxReservationsPerHolder must be an integer in \[1, 100\], got 0/],
  ])('refuses %s, naming the field', (_name, options, message) => {
    expect(() => resolveUpstreamPolicy(options)).toThrow(message);
  });
});

/**
 * Each whole-number field at its bounds: [field, lowest, highest]. Written out,
 * not imported, so a changed bound fails here.
 */
const OPTION_BOUNDS: readonly [keyof UpstreamPolicyOptions & keyof UpstreamPolicy, number, number][] = [
  ['limit', 1, 1_000_000],
  ['windowMs', 1, 86_400_000],
  ['maxWaitMs', 0, 604_800_000],
  ['dailyBudget', 1, Number.MAX_SAFE_INTEGER],
  ['graceMs', 0, 86_400_000],
  ['maxReservations', 1, 1000],
];
const rangeOf = (low: number, high: number) => `[${low}, ${high}]`;

describe('resolveUpstreamPolicy: bounds', () => {
  const base: UpstreamPolicyOptions = { limit: 15, windowMs: 60_000 };
  test.each(OPTION_BOUNDS.flatMap(([field, low, high]) => [[field, low], [field, high]] as const))('accepts %s = %d and keeps it', (field, value) => {
    expect(resolveUpstreamPolicy({ ...base, [field]: value })[field]).toBe(value);
  });
  test.each(
    OPTION_BOUNDS.flatMap(([field, low, high]) =>
      [low - 1, high + 1, low + 0.5, Number.NaN].map((value) => [field, value, `upstream quota: ${field} must be an integer in ${rangeOf(low, high)}, got ${value}`] as const),
    ),
  )('refuses %s = %d with the exact range', (field, value, message) => {
    expect(() => resolveUpstreamPolicy({ ...base, [field]: value })).toThrow(new RangeError(message));
  });
  test.each([
    [1, 10_000],
    [0.0001, 1],
    [0.5, 5000],
  ])('accepts a headroom of %d as %d basis points', (headroom, headroomBp) => {
    expect(resolveUpstreamPolicy({ ...base, headroom }).headroomBp).toBe(headroomBp);
  });
  test.each([1.0001, 1.00001, Number.POSITIVE_INFINITY, 0, -0.5, 0.00001, 1e-11, 0.12345, Number.NaN])('refuses a headroom of %d with the exact remedy', (headroom) => {
    expect(() => resolveUpstreamPolicy({ ...base, headroom })).toThrow(
      new RangeError(`upstream quota: headroom must be a fraction in (0, 1] with at most 4 decimals, e.g. 0.9, got ${headroom}`),
    );
  });
});

describe('assertValidUpstreamPolicy', () => {
  const valid: UpstreamPolicy = { limit: 15, windowMs: 60_000, headroomBp: 9000, maxWaitMs: 60_000, dailyBudget: 0, graceMs: 1000, maxReservations: 100, maxReservationsPerHolder: 1 };
  const POLICY_BOUNDS: readonly [keyof UpstreamPolicy, number, number][] = [
    ...OPTION_BOUNDS.filter(([field]) => field !== 'dailyBudget'),
    ['headroomBp', 1, 10_000],
    ['dailyBudget', 0, Number.MAX_SAFE_INTEGER],
  ];
  test.each(POLICY_BOUNDS.flatMap(([field, low, high]) => [[field, low], [field, high]] as const))('accepts %s = %d', (field, value) => {
    expect(() => assertValidUpstreamPolicy({ ...valid, [field]: value })).not.toThrow();
  });
  test.each(
    POLICY_BOUNDS.flatMap(([field, low, high]) =>
      [low - 1, high + 1, low + 0.5].map((value) => [field, value, `upstream quota: ${field} must be an integer in ${rangeOf(low, high)}, got ${value}`] as const),
    ),
  )('refuses %s = %d with the exact range', (field, value, message) => {
    expect(() => assertValidUpstreamPolicy({ ...valid, [field]: value })).toThrow(new RangeError(message));
  });
  test('intervalOf is T as the fraction windowMs × 10 000 / (limit × headroomBp)', () => {
    expect(intervalOf(valid)).toEqual({ numerator: 600_000_000, denominator: 135_000 });
  });
});

describe('holderIdOf', () => {
  test('16 base64url characters, the same for the same token', () => {
    const id = holderIdOf({ tokenId: 'tok_3kq9x2m1c0vd7z4a', tool: 'search' });
    expect(id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(holderIdOf({ tokenId: 'tok_3kq9x2m1c0vd7z4a', tool: 'search' })).toBe(id);
  });
  test('one holder per token whatever it calls, so its fair share holds across tools (issue 17); another token is another holder', () => {
    const base = holderIdOf({ tokenId: 'tok_a', tool: 'search' });
    expect(holderIdOf({ tokenId: 'tok_a', tool: 'fetch' })).toBe(base);
    expect(holderIdOf({ tokenId: 'tok_a' })).toBe(base);
    expect(holderIdOf({ tokenId: 'tok_b', tool: 'search' })).not.toBe(base);
  });
});

describe('the compact state', () => {
  const stateArb = fc.record({
    cursorMs: fc.maxSafeNat(),
    cursorRem: fc.nat(),
    day: fc.nat(1_000_000),
    count: fc.nat(),
    reservations: fc.array(fc.record({ holder: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/), slotAtMs: fc.maxSafeNat() }), { maxLength: 5 }),
  });
  test('reads back exactly what it wrote', () => {
    fc.assert(fc.property(stateArb, (state) => expect(parseUpstreamState(formatUpstreamState(state))).toEqual(state)));
  });
  test('no value is no state', () => {
    expect(parseUpstreamState(null)).toBeNull();
  });
  test.each(['', 'junk', '1:2:3:4,x:9999999999999999', '1:2:3', '1:2:3:4,', '1:2:3:4,,x:1', '1:2:3:4,x', '1:2:3:4,x:-1', '-1:2:3:4', '99999999999999999:0:0:0', '1:2:3:4,a.b:1', '1:2:3:9007199254740993'])(
    '%j is junk: no state',
    (value) => {
      expect(parseUpstreamState(value)).toBeNull();
    },
  );
});
