import { ErrorReply } from 'redis';

/** Stable codes, so callers and logs can tell these apart without reading messages. */
export const REDIS_UNAVAILABLE = 'ERR_FIRELIMIT_REDIS_UNAVAILABLE';
export const REDIS_TIMEOUT = 'ERR_FIRELIMIT_REDIS_TIMEOUT';
export const REDIS_ERROR_REPLY = 'ERR_FIRELIMIT_REDIS_ERROR_REPLY';
export const REDIS_BAD_REPLY = 'ERR_FIRELIMIT_REDIS_BAD_REPLY';
/** Redis refused our credentials or their permissions (WRONGPASS, NOAUTH, NOPERM): no retry fixes that, the operator must. */
export const REDIS_AUTH_REFUSED = 'ERR_FIRELIMIT_REDIS_AUTH_REFUSED';
export type RedisStoreErrorCode =
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

/** The script cache does not hold the script (SCRIPT FLUSH, a restart, a failover): load it and retry. */
export function isNoScriptError(error: unknown): boolean {
  return redisReplyCode(error) === 'NOSCRIPT';
}
