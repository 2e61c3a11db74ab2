import { createHash } from 'node:crypto';

/** Public ids of signed-in callers start with this; `tok_` ids are the operator's tokens. */
export const SUBJECT_ID_PREFIX = 'sub_';

// Crockford's base32 in lower case, as token ids: no RTDB-forbidden key character, no `~` (scope keys use it).
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** 26 characters = 130 bits of SHA-256: two subjects never share a counter in practice. */
const ID_CHARACTERS = 26;

export const SUBJECT_ID_PATTERN = /^sub_[0-9a-hjkmnp-tv-z]{26}$/;

/**
 * The public id of the caller (iss, sub): the key of its limits, overrides and
 * metrics, the id in logs and in whoami. Derived, never stored, so every
 * instance and the limits CLI compute the same id; the issuer is part of it,
 * so two identity providers' "user 42" are two callers. One-way: the id does
 * not reveal the subject (an email address in `sub` stays out of the logs).
 */
export function subjectCallerId(issuer: string, subject: string): string {
  // Length-prefixed, so ("a|b", "c") and ("a", "b|c") cannot meet.
  const digest = createHash('sha256').update(`${issuer.length}:${issuer}\n${subject}`, 'utf8').digest();
  let bits = 0;
  let value = 0;
  let out = SUBJECT_ID_PREFIX;
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < SUBJECT_ID_PREFIX.length + ID_CHARACTERS) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return out;
}
