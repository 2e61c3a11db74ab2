import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { rendezvousIndex } from '../../src/library/support/rendezvous';

const DBS = ['https://a-rtdb.firebaseio.com', 'https://b-rtdb.firebaseio.com', 'https://c-rtdb.firebaseio.com'];

/** The documented score, written out again from its definition. */
function score(id: string, key: string): bigint {
  return BigInt(`0x${createHash('sha256').update(`${id}\n${key}`).digest('hex').slice(0, 12)}`);
}

describe('rendezvousIndex', () => {
  test.each(['tok_a', 'tok_b', '1.2.3.4', 'tok_0000000000000001', 'x'])('picks the database with the highest documented score for %s', (key) => {
    const scores = DBS.map((id) => score(id, key));
    const best = scores.reduce((bestAt, s, i) => (s > (scores[bestAt] as bigint) ? i : bestAt), 0);
    expect(rendezvousIndex(key, DBS)).toBe(best);
  });

  test('spreads 3,000 keys over three databases within 20 % of even', () => {
    const counts = [0, 0, 0];
    for (let i = 0; i < 3000; i++) counts[rendezvousIndex(`tok_${i}`, DBS)]! += 1;
    for (const count of counts) expect(Math.abs(count - 1000)).toBeLessThanOrEqual(200);
  });

  test('property: adding a database moves only keys onto it, and removing one moves only its own keys', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.webUrl(), { minLength: 1, maxLength: 5 }), fc.webUrl(), fc.array(fc.string(), { minLength: 1, maxLength: 30 }), (ids, added, keys) => {
        fc.pre(!ids.includes(added));
        const grown = [...ids, added];
        for (const key of keys) {
          const before = ids[rendezvousIndex(key, ids)];
          const after = grown[rendezvousIndex(key, grown)];
          expect(after === before || after === added).toBe(true);
          // Removing it again is the same question backwards.
          if (after !== added) expect(after).toBe(before);
        }
      }),
    );
  });

  test('refuses an empty list', () => {
    expect(() => rendezvousIndex('k', [])).toThrow(/at least one database/);
  });
});
