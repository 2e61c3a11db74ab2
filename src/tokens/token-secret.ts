import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Every public token id starts with this; ids appear in logs and are rate-limit keys. */
export const TOKEN_ID_PREFIX = 'tok_';

/**
 * Every secret starts with this, so secret scanners (and people) recognise a
 * leaked firelimit token and tell it from the public id at a glance.
 */
export const TOKEN_SECRET_PREFIX = 'flk_';

/** Random bytes behind a secret: 256 bits, far beyond guessing at any request rate. */
export const SECRET_RANDOM_BYTES = 32;

/** Random bytes behind an id: 80 bits, so ids never collide in practice (a collision is refused by create anyway). */
const ID_RANDOM_BYTES = 10;

// Crockford's base32 alphabet in lower case: no i, l, o, u, so ids read aloud and copy well,
// and none of RTDB's forbidden key characters (. $ # [ ] /) can appear.
const BASE32_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** base64url of 32 bytes is exactly 43 characters (no padding). */
const SECRET_PATTERN = /^flk_[A-Za-z0-9_-]{43}$/;
const ID_PATTERN = /^tok_[0-9a-hjkmnp-tv-z]{16}$/;
const HASH_PATTERN = /^[0-9a-f]{64}$/;

export interface GeneratedToken {
  /** Public id, e.g. "tok_3kq9x2m1c0vd7z4a". */
  readonly id: string;
  /** The bearer secret, e.g. "flk_…"; shown to its owner once and never stored. */
  readonly secret: string;
  /** Lowercase hex SHA-256 of the secret: the only form that is stored. */
  readonly secretHash: string;
}

/**
 * A fresh token. The secret does not embed the id: verification looks the
 * record up by the secret's hash, so the secret alone identifies the token and
 * a leaked id gives nothing towards the secret.
 */
export function generateToken(random: (size: number) => Buffer = randomBytes): GeneratedToken {
  const secret = TOKEN_SECRET_PREFIX + random(SECRET_RANDOM_BYTES).toString('base64url');
  return { id: generateTokenId(random), secret, secretHash: hashSecret(secret) };
}

export function generateTokenId(random: (size: number) => Buffer = randomBytes): string {
  return TOKEN_ID_PREFIX + toBase32(random(ID_RANDOM_BYTES));
}

/** Lowercase hex SHA-256. The secret has 256 bits of entropy, so a plain (unsalted) hash is safe and lets us look it up. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * Cheap shape check before any hashing or lookup, so garbage (a password, a
 * JWT, a megabyte of text) never reaches the store.
 */
export function isWellFormedSecret(value: string): boolean {
  return SECRET_PATTERN.test(value);
}

export function isWellFormedTokenId(value: string): boolean {
  return ID_PATTERN.test(value);
}

export function isWellFormedHash(value: string): boolean {
  return HASH_PATTERN.test(value);
}

/**
 * Constant-time equality of two hex hashes. Unequal lengths or non-hex input
 * answer false without comparing, which leaks only what the format already says.
 */
export function hashesEqual(a: string, b: string): boolean {
  if (!isWellFormedHash(a) || !isWellFormedHash(b)) return false;
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}

/** 5 bits per character, most significant first; 10 bytes → exactly 16 characters. */
function toBase32(bytes: Buffer): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32_ALPHABET[(buffer >> bits) & 31];
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32_ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}
