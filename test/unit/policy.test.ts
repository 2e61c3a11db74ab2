import { assertValidCost, assertValidPolicy } from '../../src/library/window/policy';

describe('assertValidPolicy', () => {
  test.each([
    ['the smallest limit and window', { name: 'a', limit: 1, windowMs: 1000 }],
    ['a 64-character name of every allowed character class', { name: `${'A'.repeat(20)}${'z'.repeat(20)}${'0'.repeat(20)}_-_-`, limit: 120, windowMs: 60_000 }],
    ['the largest safe limit', { name: 'max', limit: Number.MAX_SAFE_INTEGER, windowMs: 86_400_000 }],
  ])('accepts %s', (_name, policy) => {
    expect(() => assertValidPolicy(policy)).not.toThrow();
  });

  test.each([
    ['an empty name', { name: '', limit: 1, windowMs: 1000 }, 'policy name must be 1-64 characters of [A-Za-z0-9_-], got ""'],
    ['a 65-character name', { name: 'x'.repeat(65), limit: 1, windowMs: 1000 }, `policy name must be 1-64 characters of [A-Za-z0-9_-], got "${'x'.repeat(65)}"`],
    ['a name with a space', { name: 'a b', limit: 1, windowMs: 1000 }, 'policy name must be 1-64 characters of [A-Za-z0-9_-], got "a b"'],
    ['a name with a quote (it goes into a header)', { name: 'a"b', limit: 1, windowMs: 1000 }, 'policy name must be 1-64 characters of [A-Za-z0-9_-], got "a\\"b"'],
    ['a limit of 0', { name: 'p', limit: 0, windowMs: 1000 }, 'policy "p": limit must be a positive integer, got 0'],
    ['a fractional limit', { name: 'p', limit: 1.5, windowMs: 1000 }, 'policy "p": limit must be a positive integer, got 1.5'],
    ['an unsafe limit', { name: 'p', limit: 2 ** 53, windowMs: 1000 }, `policy "p": limit must be a positive integer, got ${2 ** 53}`],
    ['a window under one second', { name: 'p', limit: 1, windowMs: 999 }, 'policy "p": windowMs must be an integer >= 1000, got 999'],
    ['a fractional window', { name: 'p', limit: 1, windowMs: 1000.5 }, 'policy "p": windowMs must be an integer >= 1000, got 1000.5'],
    ['a NaN window', { name: 'p', limit: 1, windowMs: Number.NaN }, 'policy "p": windowMs must be an integer >= 1000, got NaN'],
  ])('refuses %s with a RangeError naming the field', (_name, policy, message) => {
    expect(() => assertValidPolicy(policy)).toThrow(new RangeError(message));
  });
});

describe('assertValidCost', () => {
  test.each([0, 1, 100, Number.MAX_SAFE_INTEGER])('accepts %p', (cost) => {
    expect(() => assertValidCost(cost)).not.toThrow();
  });
  test.each([-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53])('refuses %p', (cost) => {
    expect(() => assertValidCost(cost)).toThrow(new RangeError(`cost must be a non-negative integer, got ${cost}`));
  });
});
