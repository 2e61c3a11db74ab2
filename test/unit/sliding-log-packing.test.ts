import fc from 'fast-check';
import { slidingLog, type SlidingLogState } from '../../src/library/window/algorithms';
import { formatSlidingLogValue, parseSlidingLogValue } from '../../src/library/backends/redis/lua/sliding-log';

// The sliding log's two compact forms: packed in memory (pack/unpack) and packed as a string
// (Redis and RTDB). Both must be lossless, or the log stops being exact.

const { pack, unpack } = slidingLog as Required<typeof slidingLog>;

/** Strictly ascending timestamps, units ≥ 1: every log the algorithm can hold. */
function logArb(maxGapMs: number): fc.Arbitrary<SlidingLogState> {
  return fc
    .record({
      startMs: fc.integer({ min: 0, max: 2_000_000_000_000 }),
      steps: fc.array(fc.record({ gapMs: fc.integer({ min: 1, max: maxGapMs }), units: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 2 ** 40 })) }), { maxLength: 60 }),
    })
    .map(({ startMs, steps }) => {
      let t = startMs;
      return { entries: steps.map(({ gapMs, units }, i) => [(t = i === 0 ? t : t + gapMs), units] as const) };
    });
}

describe('sliding log packed in memory', () => {
  test('unpack(pack(log)) is the log, for short gaps and for gaps past 32 bits', () => {
    fc.assert(fc.property(fc.oneof(logArb(60_000), logArb(2 ** 45)), (state) => {
      expect(unpack(pack(state))).toEqual(state);
    }));
  });

  test.each([
    ['a full log of 1,000 within a minute, units 1, packs into a Uint32Array (8 bytes an entry)', 1_000, 60, 1, Uint32Array],
    ['timestamps more than 2^32 ms after the oldest pack into a Float64Array', 3, 2 ** 33, 1, Float64Array],
    ['units past 32 bits pack into a Float64Array', 3, 1, 2 ** 33, Float64Array],
  ] as const)('%s', (_name, count, gapMs, units, kind) => {
    const state: SlidingLogState = { entries: Array.from({ length: count }, (_, i) => [1_764_000_000_000 + i * gapMs, units] as const) };
    const packed = pack(state) as { pairs: ArrayLike<number> };
    expect(packed.pairs).toBeInstanceOf(kind);
    expect(packed.pairs.length).toBe(2 * count);
    expect(unpack(packed)).toEqual(state);
  });

  test('an empty log packs and unpacks', () => {
    expect(unpack(pack({ entries: [] }))).toEqual({ entries: [] });
  });
});

describe('sliding log packed as a string', () => {
  test('parse(format(log)) is the log', () => {
    fc.assert(fc.property(fc.oneof(logArb(60_000), logArb(2 ** 45)), (state) => {
      expect(parseSlidingLogValue(formatSlidingLogValue(state))).toEqual(state);
    }));
  });

  test.each([
    ['an empty log', { entries: [] }, ''],
    ['one entry: its timestamp', { entries: [[1_764_000_000_000, 1]] }, '~1764000000000'],
    ['later entries: ms since the one before; units only when not 1', { entries: [[1_764_000_000_000, 1], [1_764_000_000_060, 1], [1_764_000_000_121, 2]] }, '~1764000000000,60,61:2'],
  ] as const)('%s', (_name, state, value) => {
    expect(formatSlidingLogValue(state as SlidingLogState)).toBe(value);
    expect(parseSlidingLogValue(value)).toEqual(state);
  });

  test('a full log of 1,000 at one call per 60 ms takes under 4 bytes an entry', () => {
    const state: SlidingLogState = { entries: Array.from({ length: 1_000 }, (_, i) => [1_764_000_000_000 + i * 60, 1] as const) };
    expect(formatSlidingLogValue(state).length / 1_000).toBeLessThan(4);
  });

  test('the unpacked form older releases wrote still reads', () => {
    expect(parseSlidingLogValue('9500:1,9800:2')).toEqual({ entries: [[9500, 1], [9800, 2]] });
  });

  test.each(['~', '~1,0', '~5,,1', '~,5', '~5,', '~5:0', '~5:', '~x', '9500', '~9007199254740991,1', '2:1,1:1'])('junk %j reads as no log', (value) => {
    expect(parseSlidingLogValue(value)).toBeNull();
  });
});
