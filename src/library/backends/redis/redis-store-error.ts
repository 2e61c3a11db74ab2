import { ErrorReply } from 'redis';

/** Stable codes, so callers and logs can tell these apart without reading messages. */
export const REDIS_UNAVAILABLE = 'ERR_FIRELIMIT_REDIS_UNAVAILABLE';
export const REDIS_TIMEOUT = 'ERR_FIRELIMIT_REDIS_TIMEOUT';
export const REDIS_ERROR_REPLY = 'ERR_FIRELIMIT_REDIS_ERROR_REPLY';
export const REDIS_BAD_REPLY = 'ERR_FIRELIMIT_REDIS_BAD_REPLY';
/** Redis refused our credentials or their permissions (WRONGPASS, NOAUTH, NOPERM): no retry fixes that, the operator must. */
export const REDIS_AUTH_REFUSED = 'ERR_FIRELIMIT_REDIS_AUTH_REFUSED';
/**
 * Redis answered, and the answer says the deployment is wrong (a cluster
 * spoken to as one server, keys of one call on several slots, a key holding
 * something else): no retry fixes it, and it is logged at ERROR, never only
 * counted as an outage.
 */
export const REDIS_MISCONFIGURED = 'ERR_FIRELIMIT_REDIS_MISCONFIGURED';
export type RedisStoreErrorCode =
  | typeof REDIS_MISCONFIGURED
  | typeof REDIS_UNAVAILABLE
  | typeof REDIS_TIMEOUT
  | typeof REDIS_ERROR_REPLY
  | typeof REDIS_BAD_REPLY
  | typeof REDIS_AUTH_REFUSED;

/** Redis error codes (the reply's first word) that say the credentials, not the network, are the problem. */
export const AUTH_REPLY_CODES: ReadonlySet<string> = new Set(['WRONGPASS', 'NOAUTH', 'NOPERM']);

/**
 * The only error the store lets out. It carries a scrubbed message and the
 * original's class name, never the original error itself: a socket or client
 * error may hold the connection URL, and whoever logs this should not have to
 * know that.
 */
export class RedisStoreError extends Error {
  override readonly name = 'RedisStoreError';
  constructor(
    readonly code: RedisStoreErrorCode,
    message: string,
    /** Class of the underlying error (ClientOfflineError, ErrorReply, ...), for diagnosis. */
    readonly causeName?: string,
    /** Redis's own error code (WRONGPASS, NOPERM, ...) when Redis answered with an error. */
    readonly redisCode?: string,
  ) {
    super(message);
  }
}

/**
 * Redis's error code: the first word of an error reply (WRONGPASS, NOSCRIPT, ...), the structured part of
 * the reply. ErrorReply (SimpleError, BlobError) is how the client marks a reply as Redis's own error,
 * from a command or from the connect handshake alike.
 */
export function redisReplyCode(error: unknown): string | undefined {
  if (!(error instanceof ErrorReply)) return undefined;
  return /^([A-Z][A-Z0-9_]*)(?:\s|$)/.exec(error.message)?.[1];
}

/** What an operator reads when Redis refuses us: the code and the knob to fix, never the password or URL. */
export function authRefusalHint(redisCode: string): string {
  if (redisCode === 'NOPERM') {
    return 'Redis refused the credentials (NOPERM): the user in REDIS_URL or REDIS_URL_FILE lacks permission for the limiter\'s commands (EVALSHA, SCRIPT LOAD, PING)';
  }
  return `Redis refused the credentials (${redisCode}): check the password in REDIS_URL or REDIS_URL_FILE`;
}

/** Redis error codes that mean misconfiguration, not an outage (see REDIS_MISCONFIGURED). */
export const MISCONFIGURATION_REPLY_CODES: ReadonlySet<string> = new Set(['MOVED', 'ASK', 'CROSSSLOT', 'WRONGTYPE']);

/** What to change, per code; Redis' own reply text (it may name keys) is never part of it. */
export function misconfigurationHint(redisCode: string, mode: 'standalone' | 'cluster'): string {
  switch (redisCode) {
    case 'MOVED':
    case 'ASK':
      return mode === 'standalone'
        ? `Redis answered ${redisCode}: REDIS_URL points at a Redis Cluster node; set REDIS_MODE=cluster (REDIS_URL may then list several seed nodes, comma-separated)`
        : `Redis answered ${redisCode} more often than the cluster client follows redirections: the cluster is resharding or its nodes disagree on the slots; check CLUSTER INFO on its nodes`;
    case 'CROSSSLOT':
      return mode === 'standalone'
        ? 'Redis answered CROSSSLOT: REDIS_URL points at a Redis Cluster node; set REDIS_MODE=cluster, so every key of one decision carries one hash tag'
        : 'Redis answered CROSSSLOT: the keys of one call hash to several slots; report this as a firelimit defect';
    default:
      return `Redis answered ${redisCode}: a key under REDIS_KEY_PREFIX holds a value firelimit did not write; give this deployment its own REDIS_KEY_PREFIX, or delete the keys under it`;
  }
}

/** The script cache does not hold the script (SCRIPT FLUSH, a restart, a failover): load it and retry. */
export function isNoScriptError(error: unknown): boolean {
  return redisReplyCode(error) === 'NOSCRIPT';
}
