import { createHash } from 'node:crypto';

/**
 * The fleet's heartbeats (ADR 0067): one sorted set of instance ids scored by
 * the time each last beat (its own clock). One call records a beat, drops the
 * beats older than the TTL and counts what is left, atomically, so two
 * instances beating at once both count each other. The set expires two TTLs
 * after its last beat: a fleet that is gone leaves nothing behind.
 *
 * KEYS[1] the set; ARGV: instance id, nowMs, ttlMs, 'beat' | 'leave'.
 * Answers the live count (0 after a leave that emptied it).
 */
export const FLEET_HEARTBEAT_SCRIPT = `
local id = ARGV[1]
local nowMs = tonumber(ARGV[2])
local ttlMs = tonumber(ARGV[3])
if ARGV[4] == 'leave' then
  redis.call('ZREM', KEYS[1], id)
  return redis.call('ZCARD', KEYS[1])
end
redis.call('ZADD', KEYS[1], nowMs, id)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (nowMs - ttlMs))
redis.call('PEXPIRE', KEYS[1], ttlMs * 2)
return redis.call('ZCARD', KEYS[1])
`;

export const FLEET_HEARTBEAT_SHA1 = createHash('sha1').update(FLEET_HEARTBEAT_SCRIPT).digest('hex');

/**
 * The set's name after the store's prefix. A '.' is in no limit key (key.ts),
 * so it can never be a limited key's own name; in a cluster it is its own
 * hash tag, on whichever shard that lands.
 */
export const FLEET_HEARTBEAT_KEY = 'fleet.instances';
