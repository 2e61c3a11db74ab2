import { clusterSlotOf, clusterSlotOfKey } from '../../src/library/backends/redis/cluster-slot';

// The figures CLUSTER KEYSLOT answers (the Redis Cluster specification's own vector is 123456789 → 12739).
describe('clusterSlotOf: the slot Redis Cluster gives a hash tag', () => {
  test.each([
    ['123456789', 12739],
    ['foo', 12182],
    ['bar', 5061],
    ['', 0],
  ])('%s → %i', (tag, slot) => {
    expect(clusterSlotOf(tag)).toBe(slot);
  });
  // Every other key (unicode included) is checked against a real cluster's CLUSTER KEYSLOT in test/integration/redis-cluster.test.ts.
});

describe('clusterSlotOfKey: the slot of a whole key, by its hash tag as Redis Cluster reads it', () => {
  test.each([
    ['a key with a tag hashes the tag', 'firelimit:{foo}:0', 'foo'],
    ['text around the tag does not matter', 'x{foo}y', 'foo'],
    ['the first tag only', 'a{bar}b{foo}c', 'bar'],
    ['an empty tag: the whole key', 'a{}b', 'a{}b'],
    ['no closing brace: the whole key', 'a{foo', 'a{foo'],
    ['a closing brace before the opening one: the tag after the opening', '}x{foo}', 'foo'],
    ['no brace: the whole key', '123456789', '123456789'],
    ['a multi-byte tag: its UTF-8 bytes', 'k{tök}', 'tök'],
  ])('%s (%s)', (_name, key, hashed) => {
    expect(clusterSlotOfKey(key)).toBe(clusterSlotOf(hashed));
  });

  test('two keys with one tag share a slot; the figure is the specification\'s', () => {
    expect(clusterSlotOfKey('{123456789}:a')).toBe(12739);
    expect(clusterSlotOfKey('{123456789}:b')).toBe(12739);
  });
});
