/** Stable code so callers can tell a bad key from a backend failure without reading messages. */
export const INVALID_KEY = 'ERR_FIRELIMIT_INVALID_KEY';

export class InvalidKeyError extends Error {
  readonly code = INVALID_KEY;
  override readonly name = 'InvalidKeyError';
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** RTDB's own ceiling for a path segment is 768 bytes; we stay well inside it. */
export const MAX_KEY_BYTES = 512;

// RTDB forbids . $ # [ ] / and ASCII control characters in a path segment.
// eslint-disable-next-line no-control-regex -- control characters are exactly what we reject
const FORBIDDEN = /[.$#[\]/\u0000-\u001f\u007f]/;

/**
 * Every backend accepts exactly the keys RTDB accepts, so moving between
 * backends never changes which keys work. Rejected keys are never written.
 * Callers with addresses or emails encode them first (see `encodeKeyPart`).
 */
export function assertValidKey(key: string): void {
  if (isPlainKey(key)) return;
  if (typeof key !== 'string' || key.length === 0) {
    throw new InvalidKeyError('rate-limit key must be a non-empty string');
  }
  // Stryker disable next-line StringLiteral: Buffer.byteLength reads an empty encoding as UTF-8, so "" measures the same
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
    throw new InvalidKeyError(`rate-limit key is longer than ${MAX_KEY_BYTES} bytes`);
  }
  if (LONE_SURROGATE.test(key)) {
    // A lone surrogate becomes U+FFFD in UTF-8, so two different keys would share one counter.
    throw new InvalidKeyError('rate-limit key is not well-formed Unicode (it has a lone surrogate)');
  }
  const bad = FORBIDDEN.exec(key);
  if (bad !== null) {
    throw new InvalidKeyError(
      `rate-limit key contains ${JSON.stringify(bad[0])}, which Realtime Database forbids in a key (. $ # [ ] / and control characters)`,
    );
  }
}

/**
 * The common key, checked in one pass instead of three (a byte count and two
 * regular expressions, on every decision): printable ASCII without RTDB's
 * forbidden characters, so one byte per character and no surrogates. False
 * sends the key through the full checks, which name what is wrong.
 */
function isPlainKey(key: string): boolean {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_BYTES) return false;
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    // 0x23 #, 0x24 $, 0x2e ., 0x2f /, 0x5b [, 0x5d ]; below 0x20 and from 0x7f: control or non-ASCII.
    if (code < 0x20 || code >= 0x7f || code === 0x23 || code === 0x24 || code === 0x2e || code === 0x2f || code === 0x5b || code === 0x5d) return false;
  }
  return true;
}

/**
 * Makes any string safe as (part of) a key, reversibly: percent-encodes the
 * forbidden characters and '%' as %XX, and lone surrogates as %uXXXX.
 */
export function encodeKeyPart(value: string): string {
  return value.replace(ENCODED, (ch) =>
    ch.length === 1 && ch.charCodeAt(0) >= 0xd800 && ch.charCodeAt(0) <= 0xdfff
      ? `%u${ch.charCodeAt(0).toString(16).toUpperCase()}`
      : `%${ch.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`,
  );
}

// eslint-disable-next-line no-control-regex -- control characters are exactly what we encode
const ENCODED = /[%.$#[\]/\u0000-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
