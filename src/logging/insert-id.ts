import { randomBytes } from 'node:crypto';

/**
 * Cloud Logging orders entries with equal timestamps by insertId, and drops
 * an entry whose insertId and timestamp repeat another's. These sort in the
 * order they were made (a counter in fixed-width base 36 after a prefix
 * random per process, so two instances never collide), as the library's
 * EventId did, without its per-entry byte arithmetic.
 */
export function insertIdSource(): () => string {
  const prefix = randomBytes(9).toString('base64url');
  let counter = 0;
  return () => `${prefix}${(++counter).toString(36).padStart(11, '0')}`;
}
