import { clusterSlotOf } from '../../src/library/backends/redis/cluster-slot';

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
