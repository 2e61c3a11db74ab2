import { MemoryWindowStore } from '../../src/library/memory/memory-store';
import { rendezvousIndex } from '../../src/library/support/rendezvous';
import { ShardedLimitStore } from '../../src/library/support/sharded-store';
import type { PolicySet } from '../../src/library/window/policy';

const minute: PolicySet = [{ name: 'minute', algorithm: 'fixed-window', limit: 3, windowMs: 60_000 }];
const ids = ['https://db-a.example', 'https://db-b.example', 'https://db-c.example'];

function sharded() {
  const stores = ids.map(() => new MemoryWindowStore());
  return { stores, store: new ShardedLimitStore(ids.map((id, i) => ({ id, store: stores[i] as MemoryWindowStore }))) };
}

describe('ShardedLimitStore: each key lives wholly in the database rendezvous hashing picks', () => {
  test('keys asked in turns, shardOf between the calls, each land in their own database only', async () => {
    const { stores, store } = sharded();
    const keys = ['tok_a', 'tok_b', 'tok_c', 'tok_d', 'tok_e', 'tok_f', 'tok_g', 'tok_h'];
    for (let round = 0; round < 2; round += 1) {
      for (const key of keys) {
        expect(store.shardOf(key)).toBe(ids[rendezvousIndex(key, ids)]);
        await store.consume(key, 1_000, minute, 1);
      }
    }
    for (const key of keys) {
      const home = rendezvousIndex(key, ids);
      // Two calls went to the home database (a third leaves 0 there); the others never saw the key (2 left).
      stores.forEach((one, i) => {
        expect([key, i, one.consumeSync(key, 1_000, minute, 1).decisions[0]?.remaining]).toEqual([key, i, i === home ? 0 : 2]);
      });
    }
  });

  test('the same key asked twice in a row counts twice in one database', async () => {
    const { store } = sharded();
    await store.consume('tok_same', 1_000, minute, 1);
    const second = await store.consume('tok_same', 1_000, minute, 1);
    expect(second.decisions[0]?.remaining).toBe(1);
  });

  test('a list with one database twice, or of two backends, is refused', () => {
    expect(() => new ShardedLimitStore([{ id: 'x', store: new MemoryWindowStore() }, { id: 'x', store: new MemoryWindowStore() }])).toThrow('listed twice');
    expect(() => new ShardedLimitStore([])).toThrow('at least one store');
  });
});
