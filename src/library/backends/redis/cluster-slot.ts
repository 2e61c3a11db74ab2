/** Redis Cluster's slot count: a key's slot is CRC16 of its hash tag modulo this. */
export const CLUSTER_SLOTS = 16384;

/** CRC16-CCITT (XMODEM), as Redis Cluster specifies it, one table entry per byte value. */
const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

/**
 * The slot of a key whose hash tag is `tag` (the text between its first `{`
 * and the next `}`): CRC16 of the tag's UTF-8 bytes modulo 16384, what
 * `CLUSTER KEYSLOT` answers. Computed here so the limiter can tell which
 * shard a key is on without asking the cluster.
 */
export function clusterSlotOf(tag: string): number {
  let crc = 0;
  for (const byte of Buffer.from(tag, 'utf8')) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc % CLUSTER_SLOTS;
}

/**
 * The slot of a whole key, as Redis Cluster picks it: the hash tag (what is
 * between the first `{` and the next `}`, when that is not empty), else the
 * whole key.
 */
export function clusterSlotOfKey(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return clusterSlotOf(key.slice(open + 1, close));
  }
  return clusterSlotOf(key);
}
