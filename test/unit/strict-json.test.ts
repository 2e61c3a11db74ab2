import fc from 'fast-check';
import { parseStrictJson } from '../../src/shared/strict-json';

// The operator's files are read with parseStrictJson: JSON.parse's values, but
// a repeated key, a too-deep or too-large text refused with line, column and field.

function problemOf(text: string, options = {}): string {
  const result = parseStrictJson(text, options);
  if (result.ok) throw new Error(`expected ${JSON.stringify(text)} to be refused`);
  return result.problem;
}

describe('parseStrictJson refuses what JSON.parse silently accepts or reports without a place', () => {
  test.each<[string, string, string]>([
    ['a key given twice (JSON.parse keeps the last)', '{"tiers":{"pro":{"limit":10},\n "pro":{"limit":99999}}}', 'line 2, column 2 (tiers): "pro" is given twice in one object; JSON would keep only the last, so keep one'],
    ['a key given twice in an array element', '[{"a":1},{"b":1,"b":2}]', 'line 1, column 17 ([1]): "b" is given twice in one object'],
    ['a text cut short', '{"tiers":{"pro":', 'line 1, column 17 (tiers.pro): the text ends before the JSON does (is the file cut short?)'],
    ['a trailing comma', '{"a":1,}', 'line 1, column 8: expected a key in double quotes, found "}"'],
    ['junk after the value', '{"a":1} x', 'line 1, column 9: unexpected "x" after the end of the JSON value'],
    ['a single-quoted string', "{'a':1}", `line 1, column 2: expected a key in double quotes, found "'"`],
    ['a missing colon', '{"a" 1}', 'line 1, column 6: expected ":" after the key "a", found "1"'],
    ['a missing comma', '[1 2]', 'line 1, column 4 ([0]): expected "," or "]" after a value, found "2"'],
    ['a raw line break in a string', '{"a":"x\ny"}', 'line 1, column 8 (a): a raw control character (a line break?) inside a string; write it as an escape such as \\n'],
    ['a bad escape', '{"a":"x\\qy"}', 'line 1, column 6 (a): a string with a bad escape'],
    ['an escaped quote does not end a string', '{"a":"x\\"}', 'line 1, column 6 (a): the text ends before the JSON does'],
    ['a hex number', '{"limit":0x10}', 'line 1, column 11 (limit): expected "," or "}" after a value, found "x"'],
    ['a leading plus', '{"limit":+1}', 'line 1, column 10 (limit): unexpected "+" where a value was expected'],
    ['NaN', '[NaN]', 'line 1, column 2 ([0]): unexpected "N" where a value was expected'],
    ['an empty text', '', 'line 1, column 1: the text ends before the JSON does'],
  ])('%s', (_name, text, problem) => {
    expect(problemOf(text)).toContain(problem);
  });

  test('nesting past maxDepth is refused with the depth and the field, not a stack overflow', () => {
    const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    expect(() => JSON.parse(deep)).not.toThrow(); // JSON.parse copes; the schema walking it afterwards did not
    expect(problemOf(deep, { maxDepth: 16 })).toBe(`line 1, column 81 (${Array(16).fill('a').join('.')}): nested more than 16 levels deep; the most accepted is 16`);
    expect(problemOf('[[[1]]]', { maxDepth: 2 })).toContain('nested more than 2 levels deep');
    expect(parseStrictJson('[[1]]', { maxDepth: 2 })).toEqual({ ok: true, value: [[1]] });
  });

  test('a text larger than maxBytes is refused before it is parsed, in UTF-8 bytes', () => {
    expect(problemOf('"ééé"', { maxBytes: 7 })).toBe('8 bytes, more than the 7 bytes accepted');
    expect(parseStrictJson('"ééé"', { maxBytes: 8 })).toEqual({ ok: true, value: 'ééé' });
  });

  test('plainNumbers refuses an exponent, naming the number and the field; without it, JSON.parse\'s reading', () => {
    expect(problemOf('{"limit":1e3}', { plainNumbers: true })).toBe('line 1, column 10 (limit): 1e3 is written with an exponent; write the number in decimal digits');
    expect(parseStrictJson('{"limit":1e3}')).toEqual({ ok: true, value: { limit: 1000 } });
    expect(parseStrictJson('{"limit":-0.5}', { plainNumbers: true })).toEqual({ ok: true, value: { limit: -0.5 } });
  });

  test('a leading byte order mark is accepted, as editors write one', () => {
    expect(() => JSON.parse('\uFEFF{"a":1}')).toThrow();
    expect(parseStrictJson('\uFEFF{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
  });

  test('"__proto__" is an own key, as JSON.parse makes it, so a schema sees it', () => {
    const result = parseStrictJson('{"__proto__":{"limit":5}}');
    expect(result.ok).toBe(true);
    const value = (result as { value: object }).value;
    expect(Object.prototype.hasOwnProperty.call(value, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });
});

describe('parseStrictJson: properties', () => {
  test('any JSON text without repeated keys reads as JSON.parse reads it', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.boolean(), (value, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        const result = parseStrictJson(text);
        expect(result).toEqual({ ok: true, value: JSON.parse(text) });
      }),
      { numRuns: 300 },
    );
  });

  test('a key given twice anywhere, at any depth, is refused and named', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 5 }),
        fc.nat(),
        fc.integer({ min: 0, max: 3 }),
        (object, pick, depth) => {
          const keys = Object.keys(object);
          const key = keys[pick % keys.length] as string;
          const repeated = `{${JSON.stringify(key)}:1,${JSON.stringify(object).slice(1)}`;
          const text = '{"a":'.repeat(depth) + repeated + '}'.repeat(depth);
          const result = parseStrictJson(text);
          expect(result.ok).toBe(false);
          expect((result as { problem: string }).problem).toContain(`${JSON.stringify(key)} is given twice in one object`);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('any text JSON.parse refuses is refused, never thrown', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (text) => {
        let valid = true;
        try {
          JSON.parse(text);
        } catch {
          valid = false;
        }
        const result = parseStrictJson(text);
        if (!valid && !text.startsWith('\uFEFF')) expect(result.ok).toBe(false);
        if (valid) expect(result).toEqual({ ok: true, value: JSON.parse(text) });
      }),
      { numRuns: 1000 },
    );
  });
});
