import fc from 'fast-check';
import { assertValidKey, encodeKeyPart, INVALID_KEY, InvalidKeyError, MAX_KEY_BYTES } from '../../src/library/window/key';

/** The inverse of encodeKeyPart, written here so the test does not trust the code under test. */
function decodeKeyPart(encoded: string): string {
  return encoded.replace(/%u([0-9A-F]{4})|%([0-9A-F]{2})/g, (_, wide: string | undefined, hex: string | undefined) =>
    String.fromCharCode(Number.parseInt((wide ?? hex) as string, 16)),
  );
}

function rejection(key: unknown): InvalidKeyError | undefined {
  try {
    assertValidKey(key as string);
    return undefined;
  } catch (error) {
    if (error instanceof InvalidKeyError) return error;
    throw error;
  }
}

describe('assertValidKey', () => {
  it.each([
    { name: 'a token id', key: 'tok_01HZX3K9Q2' },
    { name: 'a single character', key: 'a' },
    { name: 'colons, dashes, @ and spaces', key: 'signin:user@example com-1' },
    { name: 'an already percent-encoded part', key: 'ip%2E10%2E0%2E0%2E1' },
    { name: 'non-ASCII letters', key: 'jörg-日本' },
    { name: 'an emoji (surrogate pair)', key: 'k🔑' },
    { name: `exactly ${MAX_KEY_BYTES} bytes`, key: 'x'.repeat(MAX_KEY_BYTES) },
    { name: `${MAX_KEY_BYTES} bytes of two-byte characters`, key: 'é'.repeat(MAX_KEY_BYTES / 2) },
  ])('accepts $name', ({ key }) => {
    expect(rejection(key)).toBeUndefined();
  });

  it.each([
    { name: 'the empty string', key: '' },
    { name: 'a non-string (number)', key: 42 },
    { name: 'undefined', key: undefined },
    { name: 'a dot (an IP address)', key: '10.0.0.1' },
    { name: 'a dollar sign', key: 'a$b' },
    { name: 'a hash', key: 'a#b' },
    { name: 'an opening bracket', key: 'a[b' },
    { name: 'a closing bracket', key: 'a]b' },
    { name: 'a slash (would address a child path)', key: 'tok/../other' },
    { name: 'a NUL byte', key: 'a\u0000b' },
    { name: 'a newline', key: 'a\nb' },
    { name: 'unit separator U+001F', key: 'a\u001fb' },
    { name: 'DEL U+007F', key: 'a\u007fb' },
    { name: `one byte more than ${MAX_KEY_BYTES}`, key: 'x'.repeat(MAX_KEY_BYTES + 1) },
    { name: `${MAX_KEY_BYTES / 2 + 1} two-byte characters (short in UTF-16, long in bytes)`, key: 'é'.repeat(MAX_KEY_BYTES / 2 + 1) },
  ])('rejects $name with InvalidKeyError carrying code ERR_FIRELIMIT_INVALID_KEY', ({ key }) => {
    const error = rejection(key);
    expect(error).toBeInstanceOf(InvalidKeyError);
    expect(error?.code).toBe(INVALID_KEY);
    expect(error?.name).toBe('InvalidKeyError');
  });

  it('uses the stable code ERR_FIRELIMIT_INVALID_KEY, which callers match on', () => {
    expect(INVALID_KEY).toBe('ERR_FIRELIMIT_INVALID_KEY');
    expect(rejection('a/b')?.code).toBe('ERR_FIRELIMIT_INVALID_KEY');
  });

  it('names the offending character in the message', () => {
    expect(() => assertValidKey('a.b')).toThrow(/"\."/);
  });

  // A lone surrogate becomes U+FFFD in UTF-8, so two different keys would share one counter.
  it.each([
    { name: 'a lone high surrogate at the end', key: 'tok\ud800' },
    { name: 'a lone high surrogate at the start', key: '\udbffabc' },
    { name: 'a lone high surrogate in the middle', key: 'a\ud83db' },
    { name: 'a lone low surrogate at the start', key: '\udc00tok' },
    { name: 'a lone low surrogate at the end', key: 'tok\udfff' },
    { name: 'a lone low surrogate in the middle', key: 'a\udd11b' },
    { name: 'a lone surrogate alone', key: '\ud800' },
    { name: 'a low surrogate before a high one (a reversed pair)', key: 'a\udd11\ud83db' },
    { name: 'two high surrogates in a row', key: '\ud83d\ud83d' },
    { name: 'a valid pair followed by a lone low surrogate', key: '\ud83d\udd11\udd11' },
    { name: 'a valid pair preceded by a lone high surrogate', key: '\ud83d\ud83d\udd11' },
  ])('rejects $name as not well-formed Unicode', ({ key }) => {
    const error = rejection(key);
    expect(error).toBeInstanceOf(InvalidKeyError);
    expect(error?.message).toBe('rate-limit key is not well-formed Unicode (it has a lone surrogate)');
  });

  it.each([
    { name: 'the lowest pair', key: '\ud800\udc00' },
    { name: 'the highest pair', key: '\udbff\udfff' },
    { name: 'two pairs in a row', key: '\ud83d\udd11\ud83d\udd11' },
    { name: 'a pair between ASCII', key: 'a\ud83d\udd11b' },
    { name: 'the code units just outside the surrogate range', key: '\ud7ff\ue000' },
  ])('accepts $name of well-formed Unicode', ({ key }) => {
    expect(rejection(key)).toBeUndefined();
  });

  it('rejects exactly the strings that are not well-formed Unicode, among strings of surrogates and letters', () => {
    const unit = fc.constantFrom('a', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d', '\udd11');
    fc.assert(
      fc.property(fc.string({ unit, minLength: 1, maxLength: 12 }), (key) => {
        // Well-formed exactly when it survives a round trip through UTF-8 (a lone surrogate turns into U+FFFD).
        const wellFormed = Buffer.from(key, 'utf8').toString('utf8') === key;
        expect(rejection(key) === undefined).toBe(wellFormed);
      }),
    );
  });

  it.each([
    { name: 'empty', key: '', message: 'rate-limit key must be a non-empty string' },
    { name: 'not a string', key: 7, message: 'rate-limit key must be a non-empty string' },
    { name: 'too long', key: 'x'.repeat(MAX_KEY_BYTES + 1), message: `rate-limit key is longer than ${MAX_KEY_BYTES} bytes` },
    { name: 'a slash', key: 'a/b', message: 'rate-limit key contains "/", which Realtime Database forbids in a key (. $ # [ ] / and control characters)' },
    { name: 'a newline', key: 'a\nb', message: 'rate-limit key contains "\\n", which Realtime Database forbids in a key (. $ # [ ] / and control characters)' },
  ])('says why a key is $name', ({ key, message }) => {
    expect(rejection(key)?.message).toBe(message);
  });

  it('checks the length before anything else, so a long key is refused as long', () => {
    expect(rejection('.'.repeat(MAX_KEY_BYTES + 1))?.message).toBe(`rate-limit key is longer than ${MAX_KEY_BYTES} bytes`);
  });

  // assertValidKey passes plain ASCII keys in one loop and sends the rest through the full checks;
  // this holds the two to the rule as the checks above state it, written here independently.
  it('accepts exactly the keys of at most 512 UTF-8 bytes, well-formed, without . $ # [ ] / or control characters', () => {
    const unit = fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) },
      { weight: 1, arbitrary: fc.constantFrom('.', '$', '#', '[', ']', '/', '\u0000', '\u001f', '\u007f', '\u0080', 'é', '日', '\ud800', '\udc00', '🔑') },
    );
    const key = fc.oneof(fc.string({ unit, maxLength: 40 }), fc.string({ unit, minLength: 500, maxLength: 520 }));
    fc.assert(
      fc.property(key, (candidate) => {
        const wellFormed = !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(candidate);
        // eslint-disable-next-line no-control-regex -- control characters are what the rule forbids
        const forbidden = /[.$#[\]/\u0000-\u001f\u007f]/.test(candidate);
        const valid = candidate.length > 0 && Buffer.byteLength(candidate, 'utf8') <= MAX_KEY_BYTES && wellFormed && !forbidden;
        expect(rejection(candidate) === undefined).toBe(valid);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('encodeKeyPart', () => {
  it.each([
    { name: 'an IPv4 address', input: '10.0.0.1', encoded: '10%2E0%2E0%2E1' },
    { name: 'an email', input: 'a.b@example.com', encoded: 'a%2Eb@example%2Ecom' },
    { name: 'a percent sign (so decoding is unambiguous)', input: '100%', encoded: '100%25' },
    { name: 'every forbidden character', input: '.$#[]/', encoded: '%2E%24%23%5B%5D%2F' },
    { name: 'control characters', input: '\u0000\n\u007f', encoded: '%00%0A%7F' },
    { name: 'a safe string, unchanged', input: 'tok_abc-123:x', encoded: 'tok_abc-123:x' },
    { name: 'a lone surrogate (it would collide with U+FFFD in UTF-8)', input: 'a\ud800b', encoded: 'a%uD800b' },
    { name: 'a lone low surrogate at the top of the range', input: '\udfffz', encoded: '%uDFFFz' },
    { name: 'a lone high surrogate at the end', input: 'z\udbff', encoded: 'z%uDBFF' },
    { name: 'a reversed pair, unit by unit', input: '\udd11\ud83d', encoded: '%uDD11%uD83D' },
    { name: 'a valid pair, unchanged', input: 'k\ud83d\udd11', encoded: 'k\ud83d\udd11' },
    { name: 'the code units just outside the surrogate range, unchanged', input: '\ud7ff\ue000', encoded: '\ud7ff\ue000' },
    { name: 'a one-digit control character, padded to two hex digits', input: '\u0001', encoded: '%01' },
    { name: 'a lower-case letter next to escapes, unchanged', input: 'a.f', encoded: 'a%2Ef' },
  ])('encodes $name', ({ input, encoded }) => {
    expect(encodeKeyPart(input)).toBe(encoded);
  });

  // Any UTF-16 code unit, so forbidden characters, '%', and things that look like escapes all occur.
  const anyText = fc.string({
    unit: fc.oneof(
      fc.constantFrom('.', '$', '#', '[', ']', '/', '%', '%2E', '%25', '\u0000', '\u001f', '\u007f', 'A'),
      fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    ),
    maxLength: 60,
  });

  it('round-trips: decoding the encoding gives back the input', () => {
    fc.assert(
      fc.property(anyText, (input) => {
        expect(decodeKeyPart(encodeKeyPart(input))).toBe(input);
      }),
    );
  });

  it('is injective: different inputs never encode to the same key', () => {
    fc.assert(
      fc.property(anyText, anyText, (a, b) => {
        fc.pre(a !== b);
        expect(encodeKeyPart(a)).not.toBe(encodeKeyPart(b));
      }),
    );
  });

  it('output of a non-empty input always passes assertValidKey (when within the byte limit)', () => {
    fc.assert(
      fc.property(anyText, (input) => {
        fc.pre(input.length > 0);
        const encoded = encodeKeyPart(input);
        fc.pre(Buffer.byteLength(encoded, 'utf8') <= MAX_KEY_BYTES);
        expect(() => assertValidKey(encoded)).not.toThrow();
      }),
    );
  });

  it('output passes assertValidKey when used as part of a prefixed key', () => {
    fc.assert(
      fc.property(anyText, (input) => {
        expect(() => assertValidKey(`signin:${encodeKeyPart(input)}`)).not.toThrow();
      }),
    );
  });
});
