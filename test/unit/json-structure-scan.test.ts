import fc from 'fast-check';
import { MAX_JSON_DEPTH, scanJsonStructure, UNBOUNDED } from '../../src/http/json-structure-scan';

const bytes = (text: string) => Buffer.from(text, 'utf8');

/** Depth as the scanner defines it, computed from the parsed value: 0 for a scalar, 1 for [] or {}. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
  return 1 + children.reduce<number>((deepest, child) => Math.max(deepest, depthOf(child)), 0);
}

describe('scanJsonStructure figures', () => {
  test.each([
    ['a scalar', '42', 0, undefined],
    ['a string holding brackets and commas', '"[[,{]"', 0, undefined],
    ['an escaped quote inside a string', '"a\\"[,"', 0, undefined],
    ['an escaped backslash before the closing quote', '["\\\\", [1]]', 2, 2],
    ['an empty array', '[ ]', 1, 0],
    ['an empty object', '{}', 1, undefined],
    ['a one-message batch', '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 2, 1],
    ['commas inside nested values do not count', '[[1,2,3],{"a":1,"b":[4,5]}]', 3, 2],
    ['whitespace around entries', ' \n[ 1 ,\t2 ]\r\n', 1, 2],
    ['multi-byte UTF-8 in strings', '["é,[", "🙂]"]', 1, 2],
  ])('%s', (_label, text, depth, batchLength) => {
    expect(scanJsonStructure(bytes(text), UNBOUNDED)).toEqual({ ok: true, depth, batchLength });
  });
});

describe('scanJsonStructure bounds', () => {
  const limits = { maxDepth: 3, maxBatchMessages: 2 };

  test.each([
    ['nesting at the bound passes', '[[[1]]]', { ok: true, depth: 3, batchLength: 1 }],
    ['one level deeper is refused', '[[[[1]]]]', { ok: false, problem: 'too_deep', maxDepth: 3 }],
    ['objects count as levels too', '{"a":{"b":{"c":{}}}}', { ok: false, problem: 'too_deep', maxDepth: 3 }],
    ['a batch at the bound passes', '[1,2]', { ok: true, depth: 1, batchLength: 2 }],
    ['one message more is refused', '[1,2,3]', { ok: false, problem: 'batch_too_large', maxBatchMessages: 2 }],
    ['brackets inside strings are not nesting', '["[[[[[["]', { ok: true, depth: 1, batchLength: 1 }],
  ])('%s', (_label, text, expected) => {
    expect(scanJsonStructure(bytes(text), limits)).toEqual(expected);
  });

  test('a 1 MB nested-array body is refused after reading only the bound, without JSON.parse', () => {
    const attack = bytes('['.repeat(500_000) + ']'.repeat(500_000));
    const parse = jest.spyOn(JSON, 'parse');
    const startedMs = performance.now();
    expect(scanJsonStructure(attack, { maxDepth: MAX_JSON_DEPTH, maxBatchMessages: 100 })).toEqual({ ok: false, problem: 'too_deep', maxDepth: MAX_JSON_DEPTH });
    expect(performance.now() - startedMs).toBeLessThan(50);
    expect(parse).not.toHaveBeenCalled();
    parse.mockRestore();
  });

  test('a 23,000-message batch is refused at message 101', () => {
    const batch = bytes(JSON.stringify(Array.from({ length: 23_000 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }))));
    expect(scanJsonStructure(batch, { maxDepth: MAX_JSON_DEPTH, maxBatchMessages: 100 })).toEqual({ ok: false, problem: 'batch_too_large', maxBatchMessages: 100 });
  });
});

describe('scanJsonStructure properties', () => {
  test('on any JSON value, depth and batch length equal those computed from JSON.parse', () => {
    fc.assert(
      // Any code point in strings: quotes, backslashes, brackets and multi-byte UTF-8 all occur.
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), fc.boolean(), (value, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        const parsed: unknown = JSON.parse(text);
        expect(scanJsonStructure(bytes(text), UNBOUNDED)).toEqual({
          ok: true,
          depth: depthOf(parsed),
          batchLength: Array.isArray(parsed) ? parsed.length : undefined,
        });
      }),
      { numRuns: 500 },
    );
  });

  test('on any value, a bound is refused exactly when the parsed figures pass it', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 5 }), (value, maxDepth, maxBatchMessages) => {
        const text = JSON.stringify(value);
        const parsed: unknown = JSON.parse(text);
        const scan = scanJsonStructure(bytes(text), { maxDepth, maxBatchMessages });
        const tooDeep = depthOf(parsed) > maxDepth;
        const tooMany = Array.isArray(parsed) && parsed.length > maxBatchMessages;
        expect(scan.ok).toBe(!tooDeep && !tooMany);
      }),
      { numRuns: 500 },
    );
  });

  test('never throws on arbitrary bytes, and its figures stay non-negative', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (raw) => {
        const scan = scanJsonStructure(raw, UNBOUNDED);
        if (scan.ok) {
          expect(scan.depth).toBeGreaterThanOrEqual(0);
          expect(scan.batchLength === undefined || scan.batchLength >= 0).toBe(true);
        }
      }),
      { numRuns: 1000 },
    );
  });

  test('arbitrary bytes built from JSON punctuation never throw either', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('[', ']', '{', '}', '"', '\\', ',', ' ', '1'), { maxLength: 200 }), (parts) => {
        expect(() => scanJsonStructure(bytes(parts.join('')), { maxDepth: 8, maxBatchMessages: 4 })).not.toThrow();
      }),
    );
  });
});
