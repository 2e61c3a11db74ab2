import { ErrorReply, TimeoutError } from 'redis';
import { describeError } from '../../../shared/describe-error';
import type { Logger } from '../../../shared/logger';
import {
  AUTH_REPLY_CODES,
  authRefusalHint,
  MISCONFIGURATION_REPLY_CODES,
  misconfigurationHint,
  REDIS_AUTH_REFUSED,
  REDIS_ERROR_REPLY,
  REDIS_MISCONFIGURED,
  REDIS_TIMEOUT,
  REDIS_UNAVAILABLE,
  redisReplyCode,
  RedisStoreError,
} from './redis-store-error';
import { scrubRedisSecrets, type RedisMode } from './redis-url';

export interface RedisErrorReporterOptions {
  /** Scrubbed from every message: it may carry a password. */
  readonly url: string;
  readonly mode: RedisMode;
  readonly commandTimeoutMs: number;
  readonly logger: Logger;
  /** Whether the connection is up right now. */
  readonly isReady: () => boolean;
}

/** A misconfiguration is logged at ERROR at most once per code per this interval, however many calls meet it. */
const MISCONFIGURATION_LOG_INTERVAL_MS = 60_000;

/**
 * What the Redis store lets out and logs about failures: every error becomes
 * a scrubbed RedisStoreError with a stable code, and the two kinds no retry
 * fixes (refused credentials, misconfiguration replies) get one ERROR line
 * each with the remedy. Keeps the little state that needs: whether the
 * connection is down, and which refusal or code was already logged.
 */
export class RedisErrorReporter {
  private down = false;
  /** The auth refusal behind the current outage, if that is what it is; commands failing meanwhile carry it. */
  private authRefusal: string | undefined;
  /** The operator's hint is logged once per outage, not once per reconnect attempt. */
  private authHintLogged = false;
  /** When each misconfiguration code was last logged (wall clock: only paces a log line). */
  private readonly misconfigurationLoggedAtMs = new Map<string, number>();

  constructor(private readonly options: RedisErrorReporterOptions) {}

  /** A command was answered: that ends a NOPERM outage (permissions granted), which no 'ready' event marks. */
  answered(): void {
    this.authHintLogged = false;
  }

  toStoreError(error: unknown): RedisStoreError {
    if (error instanceof RedisStoreError) return error;
    const causeName = error instanceof Error ? error.constructor.name : typeof error;
    const detail = scrubRedisSecrets(error instanceof Error ? error.message : String(error), this.options.url);
    const redisCode = redisReplyCode(error);
    if (redisCode !== undefined && AUTH_REPLY_CODES.has(redisCode)) {
      this.noteAuthRefusal(redisCode);
      return new RedisStoreError(REDIS_AUTH_REFUSED, authRefusalHint(redisCode), causeName, redisCode);
    }
    if (redisCode !== undefined && MISCONFIGURATION_REPLY_CODES.has(redisCode)) {
      const hint = misconfigurationHint(redisCode, this.options.mode);
      this.noteMisconfiguration(redisCode, hint);
      return new RedisStoreError(REDIS_MISCONFIGURED, hint, causeName, redisCode);
    }
    if (this.authRefusal !== undefined && !this.options.isReady()) {
      // Offline because the handshake was refused: say so, rather than a bare ClientOfflineError.
      return new RedisStoreError(REDIS_AUTH_REFUSED, authRefusalHint(this.authRefusal), causeName, this.authRefusal);
    }
    if (error instanceof ErrorReply) {
      return new RedisStoreError(REDIS_ERROR_REPLY, `redis answered with an error: ${detail}`, causeName, redisCode);
    }
    if (error instanceof TimeoutError) {
      return new RedisStoreError(REDIS_TIMEOUT, `redis command waited more than ${this.options.commandTimeoutMs} ms to be sent`, causeName);
    }
    return new RedisStoreError(REDIS_UNAVAILABLE, `redis is unavailable (${causeName}): ${detail}`, causeName);
  }

  /** The client's 'error' event: every failed connect or handshake, including a refused AUTH/HELLO. */
  markDown(error: unknown): void {
    const redisCode = redisReplyCode(error);
    if (redisCode !== undefined && AUTH_REPLY_CODES.has(redisCode)) this.noteAuthRefusal(redisCode);
    else if (redisCode === undefined) this.authRefusal = undefined; // a socket error: no longer (known to be) the credentials
    if (this.down) return;
    this.down = true;
    // Debug: the limiter's guard logs the outage itself, once; this line only adds the socket-level cause.
    // Class and codes only: a socket error's message may name the host, and its fields the credentials.
    this.options.logger.debug('redis connection lost; reconnecting with backoff', { event: 'ratelimit.redis_down', error: describeError(error), redisCode });
  }

  markUp(): void {
    this.authRefusal = undefined;
    this.authHintLogged = false;
    if (!this.down) return;
    this.down = false;
    this.options.logger.debug('redis connection restored', { event: 'ratelimit.redis_up' });
  }

  /**
   * A reply that means the deployment is wrong: the guard's outage line names
   * only our code, so this line names Redis' code and the remedy, at ERROR,
   * once a minute per code however many calls meet it.
   */
  private noteMisconfiguration(redisCode: string, hint: string): void {
    const nowMs = Date.now();
    const lastMs = this.misconfigurationLoggedAtMs.get(redisCode);
    if (lastMs !== undefined && nowMs - lastMs < MISCONFIGURATION_LOG_INTERVAL_MS) return;
    this.misconfigurationLoggedAtMs.set(redisCode, nowMs);
    this.options.logger.error(hint, { event: 'ratelimit.redis_misconfigured', backend: 'redis', mode: this.options.mode, redisCode });
  }

  /**
   * Retrying cannot fix a wrong password, and the guard's outage line only
   * says the backend is down: this one line says what to change. Redis's code
   * only; its reply text is not logged, nor anything of the URL.
   */
  private noteAuthRefusal(redisCode: string): void {
    this.authRefusal = redisCode;
    if (this.authHintLogged) return;
    this.authHintLogged = true;
    this.options.logger.error(authRefusalHint(redisCode), { event: 'ratelimit.redis_auth_refused', backend: 'redis', redisCode });
  }
}
