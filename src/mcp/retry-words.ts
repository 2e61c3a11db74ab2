/**
 * "call again in N" for a reserved caller, in words a model obeys: whole
 * seconds when the rounded-up second still falls within the slot's grace,
 * else milliseconds. Rounding up alone sends a caller past a short grace
 * (UPSTREAM_GRACE_MS=200 and 1300 ms to wait: "2 s" lands 500 ms late, and
 * the slot lapses); never earlier than the slot either, or it is told to
 * wait again.
 */
export function reservedRetryWords(retryAfterMs: number, graceMs: number): string {
  const ms = Math.max(0, Math.ceil(retryAfterMs));
  const seconds = Math.ceil(ms / 1000);
  return seconds * 1000 - ms <= graceMs && seconds > 0 ? `${seconds} s` : `${ms} ms`;
}

/** "try again in N s" for a rejected caller: later is always fine, so whole seconds rounded up (at least 1). */
export function rejectedRetryWords(retryAfterMs: number): string {
  return `${Math.max(1, Math.ceil(retryAfterMs / 1000))} s`;
}
