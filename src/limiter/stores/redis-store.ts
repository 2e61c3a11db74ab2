import { createClient, ErrorReply, TimeoutError } from 'redis';
import { describeError } from '../../shared/describe-error';
import { lateOutcomeOf, mapLateOutcome, withDeadline, withLateOutcome } from '../backend-guard';
import { silentLogger, type Logger } from '../../shared/logger';
import type { Adjustment } from '../algorithms/algorithm';
import { assertValidAdjustments } from '../decide-set';
import type { PolicySet } from '../policy';
import type { LimitStore, StoreDecision } from '../limit-store';
import { SET_SCRIPT, SET_SCRIPT_SHA1 } from './lua/set-script';
import { adjustCommand, assertAdjustReply, decideCommand, decisionFromSetReply } from './redis-set-command';
import {
  AUTH_REPLY_CODES,
  authRefusalHint,
  isNoScriptError,
  REDIS_AUTH_REFUSED,
  REDIS_BAD_REPLY,
  REDIS_ERROR_REPLY,
  REDIS_TIMEOUT,
  REDIS_UNAVAILABLE,
  redisReplyCode,
  RedisStoreError,
} from './redis-store-error';
import { parseRedisUrl, scrubRedisSecrets } from './redis-url';


export interface RedisWindowStoreOptions {
  /** `redis://[:password@]host[:port][/db]` or `rediss://...`. Never logged, scrubbed from every error. */
  readonly url: string;
  /** Prepended to every key, so several deployments can share one Redis. Default 'firelimit:'. */
  readonly keyPrefix?: string;
  /** Deadline for one Redis command; past it the command is abandoned. Default 1000. */
  readonly commandTimeoutMs?: number;
  /** How long a key outlives its window, for instances whose clocks lag. Default 10000. */
  readonly ttlMarginMs?: number;
  /** Commands allowed in flight before new ones fail at once instead of queueing. Default 1000. */
  readonly maxPendingCommands?: number;
  /** Default: silent. */
  readonly logger?: Logger;
}

export const DEFAULT_REDIS_KEY_PREFIX = 'firelimit:';
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 1000;
export const DEFAULT_REDIS_TTL_MARGIN_MS = 10_000;
export const DEFAULT_REDIS_MAX_PENDING_COMMANDS = 1000;
const CONNECT_TIMEOUT_MS = 2000;
const RECONNECT_MAX_DELAY_MS = 2000;

type RedisClient = ReturnType<typeof createClient>;
type CommandArgs = readonly string[];

/** One of our scripts: its text, and the SHA1 EVALSHA names it by. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha1: string;
}

const SET: LuaScript = { name: 'policy set', source: SET_SCRIPT, sha1: SET_SCRIPT_SHA1 };

/**
 * Limit states in Redis, one key per policy of a limited key holding the
 * algorithm's compact string (the default single fixed window: `prefix + key`
 * = "windowNumber:count", as before). Each decision is one EVALSHA of the set
 * script (lua/set-script.ts), which runs every policy's Lua twin and writes
 * only if all allow; the script is loaded on first use and again whenever Redis answers NOSCRIPT
 * (SCRIPT FLUSH, a restart, a failover to a replica that never saw it).
 *
 * Redis being down is an outage, not a crash: the constructor only starts
 * connecting, and while disconnected every call fails at once (no offline
 * queue) so the limiter's guard can answer from the local window.
 */
export class RedisWindowStore implements LimitStore {
  readonly backend = 'redis' as const;
  readonly shared = true;

  private readonly client: RedisClient;
  private readonly url: string;
  private readonly keyPrefix: string;
  private readonly ttlMarginArg: string;
  private readonly commandTimeoutMs: number;
  private readonly logger: Logger;
  private readonly scriptLoading = new Map<string, Promise<void>>();
  private scriptLoadCount = 0;
  private down = false;
  private closed = false;
  /** The auth refusal behind the current outage, if that is what it is; commands failing meanwhile carry it. */
  private authRefusal: string | undefined;
  /** The operator's hint is logged once per outage, not once per reconnect attempt. */
  private authHintLogged = false;

  constructor(options: RedisWindowStoreOptions) {
    const target = parseRedisUrl(options.url);
    const commandTimeoutMs = positiveInteger('commandTimeoutMs', options.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS);
    const ttlMarginMs = positiveInteger('ttlMarginMs', options.ttlMarginMs ?? DEFAULT_REDIS_TTL_MARGIN_MS);
    const maxPending = positiveInteger('maxPendingCommands', options.maxPendingCommands ?? DEFAULT_REDIS_MAX_PENDING_COMMANDS);
    this.url = options.url;
    this.keyPrefix = options.keyPrefix ?? DEFAULT_REDIS_KEY_PREFIX;
    this.ttlMarginArg = String(ttlMarginMs);
    this.commandTimeoutMs = commandTimeoutMs;
    this.logger = options.logger ?? silentLogger;

    // The parts, not the URL: the client then has no URL string to put into its own errors.
    this.client = createClient({
      socket: {
        host: target.host,
        port: target.port,
        ...(target.tls ? { tls: true as const } : {}),
        connectTimeout: CONNECT_TIMEOUT_MS,
        // Exponential from 50 ms to 2 s, jittered so a fleet does not reconnect in step.
        reconnectStrategy: (retries) => Math.min(50 * 2 ** retries, RECONNECT_MAX_DELAY_MS) + Math.floor(Math.random() * 100),
      },
      ...(target.username !== undefined ? { username: target.username } : {}),
      ...(target.password !== undefined ? { password: target.password } : {}),
      ...(target.database !== undefined ? { database: target.database } : {}),
      disableOfflineQueue: true,
      commandsQueueMaxLength: maxPending,
      commandOptions: { timeout: commandTimeoutMs },
      disableClientInfo: true,
    }) as RedisClient;

    // Without a listener an 'error' event would crash the process; every retry emits one.
    this.client.on('error', (error: unknown) => this.markDown(error));
    this.client.on('ready', () => this.markUp());
    // Resolves at the first successful connection, however long that takes; rejects only on close.
    this.client.connect().catch(() => undefined);
  }

  /** SCRIPT LOADs performed so far (first use, and each NOSCRIPT); for tests and metrics. */
  get scriptLoads(): number {
    return this.scriptLoadCount;
  }

  /**
   * Resolves true once connected, or false after `timeoutMs`; never rejects.
   * For startup warm-up and tests: consume works without it, failing fast until connected.
   */
  async whenReady(timeoutMs: number): Promise<boolean> {
    if (this.client.isReady) return true;
    if (this.closed) return false;
    return new Promise((resolve) => {
      const onReady = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.client.off('ready', onReady);
        resolve(false);
      }, timeoutMs);
      timer.unref();
      this.client.once('ready', onReady);
    });
  }

  async consume(key: string, nowMs: number, policies: PolicySet, cost: number): Promise<StoreDecision> {
    let reply: unknown;
    try {
      reply = await this.evalScript(SET, decideCommand(this.keyPrefix, key, nowMs, this.ttlMarginArg, policies, cost));
    } catch (error) {
      throw lateAs(error, (late) => decisionFromSetReply(late, policies));
    }
    return decisionFromSetReply(reply, policies);
  }

  async adjust(key: string, nowMs: number, policies: PolicySet, adjustments: readonly (Adjustment<unknown> | null)[]): Promise<void> {
    assertValidAdjustments(policies, adjustments);
    let reply: unknown;
    try {
      reply = await this.evalScript(SET, adjustCommand(this.keyPrefix, key, nowMs, this.ttlMarginArg, policies, adjustments));
    } catch (error) {
      throw lateAs(error, (late) => assertAdjustReply(late, policies));
    }
    assertAdjustReply(reply, policies);
  }

  /**
   * Runs another of our scripts on this connection, with the deadline, the
   * NOSCRIPT reload and the scrubbed errors every decision gets: stores of
   * another shape (the upstream quota) share the connection instead of
   * opening their own. Keys get this store's prefix.
   */
  async runScript(script: LuaScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.evalScript(script, ['EVALSHA', script.sha1, String(keys.length), ...keys.map((key) => this.keyPrefix + key), ...args]);
  }

  /** One PING on the store's own connection: a cheap probe for outage handling, and the bench's baseline. */
  async ping(): Promise<void> {
    await this.send(['PING']);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // destroy, not close: close waits for replies, and a stalled Redis would never send them.
    this.client.destroy();
  }

  private async evalScript(script: LuaScript, command: CommandArgs): Promise<unknown> {
    try {
      return await this.sendWithDeadline(command);
    } catch (error) {
      if (!isNoScriptError(error)) throw this.toStoreError(error);
    }
    await this.loadScript(script);
    return this.send(command);
  }

  /** One SCRIPT LOAD per script however many calls met NOSCRIPT at once. */
  private loadScript(script: LuaScript): Promise<void> {
    let loading = this.scriptLoading.get(script.sha1);
    if (loading === undefined) {
      loading = this.send(['SCRIPT', 'LOAD', script.source])
        .then((sha) => {
          this.scriptLoadCount += 1;
          if (sha !== script.sha1) {
            throw new RedisStoreError(REDIS_BAD_REPLY, `redis SCRIPT LOAD returned an unexpected SHA1 for the ${script.name} script`);
          }
        })
        .finally(() => {
          this.scriptLoading.delete(script.sha1);
        });
      this.scriptLoading.set(script.sha1, loading);
    }
    return loading;
  }

  private async send(command: CommandArgs): Promise<unknown> {
    try {
      return await this.sendWithDeadline(command);
    } catch (error) {
      throw this.toStoreError(error);
    }
  }

  /**
   * The client's own `timeout` only covers a command's wait to be written; once
   * on the wire it would wait for a stalled (SIGSTOPped, partitioned) server
   * forever. So the deadline is ours. The abandoned command keeps its slot in
   * the client's queue until the server answers or the socket drops, which
   * `maxPendingCommands` bounds: past it, calls fail at once instead of piling up.
   */
  private async sendWithDeadline(command: CommandArgs): Promise<unknown> {
    // withDeadline subscribes to the reply, so its late rejection (after the deadline won) is not unhandled.
    const result = await withDeadline(() => this.client.sendCommand(command as string[]), this.commandTimeoutMs);
    if (result.ok) {
      // An answered command ends a NOPERM outage (permissions granted), which no 'ready' event marks.
      this.authHintLogged = false;
      return result.value;
    }
    if (result.cause === 'timeout') {
      // The command is on the wire and may still run: the error says how it ended, so the limiter counts it once.
      throw withLateOutcome(new RedisStoreError(REDIS_TIMEOUT, `redis command did not complete within ${this.commandTimeoutMs} ms`), result.late ?? Promise.resolve({ landed: false }));
    }
    throw result.error;
  }

  private toStoreError(error: unknown): RedisStoreError {
    if (error instanceof RedisStoreError) return error;
    const causeName = error instanceof Error ? error.constructor.name : typeof error;
    const detail = scrubRedisSecrets(error instanceof Error ? error.message : String(error), this.url);
    const redisCode = redisReplyCode(error);
    if (redisCode !== undefined && AUTH_REPLY_CODES.has(redisCode)) {
      this.noteAuthRefusal(redisCode);
      return new RedisStoreError(REDIS_AUTH_REFUSED, authRefusalHint(redisCode), causeName, redisCode);
    }
    if (this.authRefusal !== undefined && !this.client.isReady) {
      // Offline because the handshake was refused: say so, rather than a bare ClientOfflineError.
      return new RedisStoreError(REDIS_AUTH_REFUSED, authRefusalHint(this.authRefusal), causeName, this.authRefusal);
    }
    if (error instanceof ErrorReply) {
      return new RedisStoreError(REDIS_ERROR_REPLY, `redis answered with an error: ${detail}`, causeName, redisCode);
    }
    if (error instanceof TimeoutError) {
      return new RedisStoreError(REDIS_TIMEOUT, `redis command waited more than ${this.commandTimeoutMs} ms to be sent`, causeName);
    }
    return new RedisStoreError(REDIS_UNAVAILABLE, `redis is unavailable (${causeName}): ${detail}`, causeName);
  }

  /** The client's 'error' event: every failed connect or handshake, including a refused AUTH/HELLO. */
  private markDown(error: unknown): void {
    if (this.closed) return;
    const redisCode = redisReplyCode(error);
    if (redisCode !== undefined && AUTH_REPLY_CODES.has(redisCode)) this.noteAuthRefusal(redisCode);
    else if (redisCode === undefined) this.authRefusal = undefined; // a socket error: no longer (known to be) the credentials
    if (this.down) return;
    this.down = true;
    // Debug: the limiter's guard logs the outage itself, once; this line only adds the socket-level cause.
    // Class and codes only: a socket error's message may name the host, and its fields the credentials.
    this.logger.debug('redis connection lost; reconnecting with backoff', { event: 'ratelimit.redis_down', error: describeError(error), redisCode });
  }

  private markUp(): void {
    this.authRefusal = undefined;
    this.authHintLogged = false;
    if (!this.down) return;
    this.down = false;
    this.logger.debug('redis connection restored', { event: 'ratelimit.redis_up' });
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
    this.logger.error(authRefusalHint(redisCode), { event: 'ratelimit.redis_auth_refused', backend: 'redis', redisCode });
  }
}

/** A timed-out command's late outcome, seen as the store's answer (a raw reply parsed) instead of the raw reply. */
function lateAs(error: unknown, parse: (reply: unknown) => unknown): unknown {
  const late = lateOutcomeOf(error);
  return late === undefined ? error : withLateOutcome(error as object, mapLateOutcome(late, parse));
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`RedisWindowStore: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}
