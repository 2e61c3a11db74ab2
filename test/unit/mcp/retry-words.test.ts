import fc from 'fast-check';
import { rejectedRetryWords, reservedRetryWords } from '../../../src/mcp/retry-words';

describe('reservedRetryWords: whole seconds only where they keep within the grace', () => {
  it.each([
    // retryAfterMs, graceMs, words
    [1000, 0, '1 s'],
    [800, 200, '1 s'],
    [799, 200, '799 ms'],
    [1300, 200, '1300 ms'],
    [1300, 1000, '2 s'],
    [59_001, 1000, '60 s'],
    [0, 1000, '0 ms'],
    [1, 0, '1 ms'],
  ])('%i ms with a %i ms grace: "%s"', (retryAfterMs, graceMs, words) => {
    expect(reservedRetryWords(retryAfterMs, graceMs)).toBe(words);
  });

  it('a caller that waits exactly what the words say arrives at or after its slot and within its grace', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3_600_000 }), fc.integer({ min: 0, max: 5000 }), (retryAfterMs, graceMs) => {
        const words = reservedRetryWords(retryAfterMs, graceMs);
        const [, figure, unit] = /^(\d+) (s|ms)$/.exec(words) as RegExpExecArray;
        const waitMs = Number(figure) * (unit === 's' ? 1000 : 1);
        expect(waitMs).toBeGreaterThanOrEqual(retryAfterMs);
        expect(waitMs).toBeLessThanOrEqual(retryAfterMs + graceMs);
      }),
    );
  });
});

describe('rejectedRetryWords', () => {
  it.each([
    [1, '1 s'],
    [1000, '1 s'],
    [1001, '2 s'],
    [0, '1 s'],
  ])('%i ms: "%s"', (retryAfterMs, words) => {
    expect(rejectedRetryWords(retryAfterMs)).toBe(words);
  });
});
