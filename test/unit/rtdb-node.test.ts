import { expiryOf, newestWindow, windowNode } from '../../src/library/backends/rtdb/rtdb-node';
import { sweepVerdict } from '../../src/library/backends/rtdb/rtdb-sweeper';

const WINDOW_MS = 60_000;
const W = 29_600_000;

describe('windowNode / newestWindow / expiryOf', () => {
  test('a node holds its one window and e, the end of that window', () => {
    expect(windowNode({ windowNumber: W, count: 3 }, WINDOW_MS)).toEqual({ [W]: 3, e: (W + 1) * WINDOW_MS });
    expect(windowNode(null, WINDOW_MS)).toBeNull();
  });

  test('e is invisible to the window reader, and a round trip keeps the state', () => {
    const stored = windowNode({ windowNumber: W, count: 3 }, WINDOW_MS);
    expect(newestWindow(stored)).toEqual({ windowNumber: W, count: 3 });
    expect(newestWindow({ e: 5 })).toBeNull();
  });

  test.each([
    [{ [W]: 1, e: 123 }, 123],
    [{ [W]: 1 }, null],
    [{ [W]: 1, e: '123' }, null],
    [{ [W]: 1, e: true }, null],
    [7, null],
    [null, null],
  ])('expiryOf(%j) is %p', (value, expected) => {
    expect(expiryOf(value)).toBe(expected);
  });
});

describe('sweepVerdict', () => {
  const end = (W + 1) * WINDOW_MS;
  test.each([
    ['nothing there', null, end, 'absent'],
    ['a window whose e is at the cutoff', { [W]: 2, e: end }, end, 'remove'],
    ['a window whose e is before the cutoff', { [W]: 2, e: end }, end + 1, 'remove'],
    ['a window whose e is after the cutoff', { [W]: 2, e: end }, end - 1, 'keep'],
    ['a window with no e (written before e existed)', { [W]: 2 }, end + 1, 'stamp'],
    ['an array-converted window with no e', [3, 4], end, 'stamp'],
    ['a non-numeric e', { [W]: 2, e: 'soon' }, end, 'stamp'],
    ['no window at all, whatever e says', { note: 'x', e: end + 10 ** 9 }, end, 'remove'],
    ['a scalar', 7, end, 'remove'],
  ])('%s: %s', (_label, value, cutoff, verdict) => {
    expect(sweepVerdict(value, cutoff)).toBe(verdict);
  });
});
