import { createHash } from 'node:crypto';

/**
 * Which of several databases holds a key: rendezvous (highest random weight)
 * hashing. Every database gets a score for the key, the first 48 bits of
 * SHA-256 over `databaseId + "\n" + key` read as an unsigned big-endian
 * integer, and the highest score wins (ties, which need a 48-bit collision, go
 * to the database listed first). Any implementation in any language computes
 * the same choice from the same ids.
 *
 * Why rendezvous: adding a database moves only the keys whose new score beats
 * their old winner's, about 1 in (n + 1), all onto the new database; removing
 * one moves only its own keys. A `hash % n` would move most keys on either.
 * The ids are the database URLs, so a URL spelled differently is a different
 * database to this function: keep the spelling when adding one.
 */
export function rendezvousIndex(key: string, databaseIds: readonly string[]): number {
  if (databaseIds.length === 0) throw new RangeError('rendezvousIndex: at least one database is needed');
  let best = 0;
  let bestScore = -1;
  databaseIds.forEach((id, i) => {
    const score = createHash('sha256').update(`${id}\n${key}`).digest().readUIntBE(0, 6);
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  });
  return best;
}
