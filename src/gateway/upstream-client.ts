import { AsyncLocalStorage } from 'node:async_hooks';
import { Client, ProtocolError, ProtocolErrorCode, StreamableHTTPClientTransport, type LoggingMessageNotification, type ServerCapabilities } from '@modelcontextprotocol/client';
import { Pool } from 'undici';
import type { Logger } from '../shared/logger';
import { boundedFetch, UPSTREAM_MAX_ANSWER_BYTES } from './bounded-fetch';
import { secretsOfUpstreamAuthorization } from './caller-facing-text';
import { isForgottenSession } from './forgotten-session';
import { SessionPool } from './session-pool';
import { ToolCallForwarder, type ForwardRelay } from './tool-call-forwarder';
import { UpstreamConnection, type OpenedClient } from './upstream-connection';
import { UpstreamError, upstreamErrorOf } from './upstream-error';
import { UpstreamHealth } from './upstream-health';

/**
 * The header that tells the upstream which firelimit token a call is for: the
 * token's public id (`tok_...`), never its secret
 * (docs/adr/0034-gateway-forwarding.md).
 */
export const TOKEN_ID_HEADER = 'X-Firelimit-Token-Id';

/**
 * Failures that say the connection itself is broken, so the next call opens a new one. An HTTP answer (refused: a
 * 401, a 429, a 500) proves the connection works; a forgotten session (404, or a 400 about the session) is renewed on
 * its own (./forgotten-session).
 */
const DROPS_CONNECTION: ReadonlySet<UpstreamError['kind']> = new Set(['unreachable']);

export const GATEWAY_CLIENT_INFO = { name: 'firelimit-gateway', version: '0.1.0' } as const;

export interface UpstreamClientOptions {
  readonly url: string;
  /** A secret: the Authorization value the upstream expects. */
  readonly authorization: string | undefined;
  /** Deadline for connecting and for each request; past it the call fails as `timeout`. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** The upstream said one of its lists changed. */
  readonly onListChanged?: () => void;
  /** Default global fetch; tests record what goes upstream. */
  readonly fetch?: typeof fetch;
  /** UPSTREAM_SESSIONS_MAX: the most callers' sessions kept open upstream at once. Default 256. */
  readonly maxSessions?: number;
  /** UPSTREAM_SESSION_IDLE_MS: a caller's session unused this long is ended. Default 300000 (5 min). */
  readonly sessionIdleMs?: number;
  /** Default Date.now. */
  readonly clock?: () => number;
}

export const UPSTREAM_SESSIONS_MAX_DEFAULT = 256;
export const UPSTREAM_SESSION_IDLE_MS_DEFAULT = 300_000;

/** Where the upstream's log messages for one call go. */
export type UpstreamLogSink = (params: LoggingMessageNotification['params']) => void;

/** Who a request upstream is for: the public token id for its header, and where its log messages go. */
interface Caller {
  readonly tokenId: string | undefined;
  readonly onlog: UpstreamLogSink | undefined;
}

/** What a call runs with: the connected client and the per-request options the deadline needs. */
export type UpstreamCall<T> = (client: Client, options: { readonly timeout: number; readonly signal?: AbortSignal }) => Promise<T>;

/** An attempt's call, which may also read the connection the client is on (its session, for the forwarder). */
type AttemptCall<T> = (client: Client, options: { readonly timeout: number; readonly signal?: AbortSignal }, connection: UpstreamConnection) => Promise<T>;

/** The protocol versions whose tools/call the forwarder writes itself (the 2025 handshake's); any other goes through the SDK client. */
const FORWARDED_ERAS = /^202[45]-/;

/**
 * firelimit's connections to the upstream (docs/adr/0050-upstream-session-per-caller.md):
 * one shared connection, on which the lists (the same for every caller) are
 * fetched and the upstream's capabilities learned, and, on an upstream that
 * keeps sessions, one session per caller, opened on its first call and ended
 * when idle or when the pool is full, so no caller sees or changes another's
 * upstream state. A stateless upstream (no session id) needs none: every call
 * goes on the shared connection. The integrator's request never reaches the
 * upstream: every request upstream is built by these clients, whose only
 * headers are the configured Authorization and the caller's public token id
 * (a parameter of the forwarder for tools/call, ./tool-call-forwarder; for the
 * other requests, which the SDK client sends, carried through
 * AsyncLocalStorage into the transport's fetch).
 */
export class UpstreamClient {
  private readonly shared: UpstreamConnection;
  private readonly sessions: SessionPool<UpstreamConnection>;
  private readonly caller = new AsyncLocalStorage<Caller>();
  private readonly fetchBounded: typeof fetch;
  private readonly clock: () => number;
  readonly health: UpstreamHealth;
  private readonly sweeper: NodeJS.Timeout;
  /** What the upstream could echo of our credential, masked in the text a caller gets. */
  private readonly secrets: readonly string[];
  /** Keep-alive connections for forwarded tools/call; undefined when a test's fetch must see every request. */
  private readonly pool: Pool | undefined;
  private readonly forwarder: ToolCallForwarder | undefined;

  constructor(private readonly options: UpstreamClientOptions) {
    this.fetchBounded = boundedFetch(options.fetch ?? fetch, { deadlineMs: options.timeoutMs, maxAnswerBytes: UPSTREAM_MAX_ANSWER_BYTES });
    this.clock = options.clock ?? Date.now;
    this.secrets = secretsOfUpstreamAuthorization(options.authorization);
    this.health = new UpstreamHealth(options.logger, this.clock);
    if (options.fetch === undefined) {
      const url = new URL(options.url);
      // Our own deadline bounds each call (the forwarder's timer); undici's idle timeouts would only race it.
      this.pool = new Pool(url.origin, { headersTimeout: 0, bodyTimeout: 0 });
      this.forwarder = new ToolCallForwarder({
        pool: this.pool,
        path: `${url.pathname}${url.search}`,
        authorization: options.authorization,
        tokenIdHeader: TOKEN_ID_HEADER,
        deadlineMs: options.timeoutMs,
        maxAnswerBytes: UPSTREAM_MAX_ANSWER_BYTES,
        onListChanged: () => this.options.onListChanged?.(),
      });
    }
    // Outside any caller: the shared connection, and the standalone stream it opens, belong to no one call.
    this.shared = new UpstreamConnection(() => this.caller.exit(() => this.connect(this.fetchUpstream)));
    const idleMs = options.sessionIdleMs ?? UPSTREAM_SESSION_IDLE_MS_DEFAULT;
    this.sessions = new SessionPool({
      maxSessions: options.maxSessions ?? UPSTREAM_SESSIONS_MAX_DEFAULT,
      idleMs,
      // Opened outside the caller's request context too: what arrives on the session's standalone stream belongs to no
      // one call (ADR 0038), though the session is the caller's.
      create: (tokenId) => new UpstreamConnection(() => this.caller.exit(() => this.connect(this.fetchForCaller(tokenId)))),
    });
    // An instance that goes quiet still ends its callers' sessions; the sweep on each use does the rest.
    this.sweeper = setInterval(() => this.sessions.sweep(this.clock()), Math.max(1000, Math.min(idleMs, 60_000)));
    this.sweeper.unref();
  }

  /** Callers' sessions now open (0 on a stateless upstream). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Connects now, so the first caller does not pay for it; a failure is logged and retried on first use. */
  async warmUp(): Promise<boolean> {
    try {
      await this.shared.client();
      return true;
    } catch (error) {
      const kind = upstreamErrorOf(error, this.options.timeoutMs, this.secrets).kind;
      this.options.logger.warn('upstream MCP server not reachable at startup; calls fail until it is', { event: 'gateway.upstream_not_ready', kind });
      // The boot warning is this outage's one line.
      this.health.failed(kind, true);
      return false;
    }
  }

  /** What the upstream said it offers; undefined before the first connection. */
  async capabilities(): Promise<ServerCapabilities | undefined> {
    return (await this.shared.client()).getServerCapabilities();
  }

  /**
   * Runs one request upstream for `tokenId` (undefined: for no caller, on the
   * shared connection). Failures come back as an UpstreamError that names what
   * went wrong (unreachable, timeout, refused, invalid, a JSON-RPC error)
   * without the upstream's own text; a failure of the connection drops it, so
   * the next call reconnects (the calls still running on it finish first). A
   * request the upstream refused because it forgot the session is sent once
   * more on a new one. `onlog` hears the upstream's notifications/message that
   * arrive on this request's own response stream.
   */
  async request<T>(tokenId: string | undefined, call: UpstreamCall<T>, signal?: AbortSignal, onlog?: UpstreamLogSink): Promise<T> {
    return this.caller.run({ tokenId, onlog }, () => this.attempt(tokenId, call, signal, true));
  }

  /**
   * One tools/call for `tokenId`, on its session like any request (./upstream-client request), written and read by
   * the forwarder (./tool-call-forwarder) rather than the SDK client: the hot path of the gateway. The caller's token id
   * goes as a parameter, not through the AsyncLocalStorage the SDK's fetch needs. `viaSdk` is the same call through
   * the SDK client, for an upstream that agreed another era's protocol and for tests that record the fetch.
   */
  async forwardToolCall(
    tokenId: string,
    params: { readonly name: string; readonly arguments?: Record<string, unknown> },
    signal: AbortSignal | undefined,
    relay: ForwardRelay,
    viaSdk: UpstreamCall<unknown>,
  ): Promise<unknown> {
    const forwarder = this.forwarder;
    if (forwarder === undefined) return this.request(tokenId, viaSdk, signal, relay.onlog);
    return this.attempt(
      tokenId,
      (client, o, connection) => {
        const transport = connection.transportOf(client);
        const protocolVersion = transport?.protocolVersion;
        if (protocolVersion === undefined || !FORWARDED_ERAS.test(protocolVersion)) return this.caller.run({ tokenId, onlog: relay.onlog }, () => viaSdk(client, o));
        return forwarder.call({ sessionId: transport?.sessionId, protocolVersion, tokenId }, params, signal, relay);
      },
      signal,
      true,
    );
  }

  private async attempt<T>(tokenId: string | undefined, call: AttemptCall<T>, signal: AbortSignal | undefined, mayRenewSession: boolean): Promise<T> {
    let connection: UpstreamConnection;
    let client: Client;
    try {
      connection = await this.connectionFor(tokenId);
      client = await connection.client();
    } catch (error) {
      const failure = upstreamErrorOf(error, this.options.timeoutMs, this.secrets);
      this.health.failed(failure.kind, true);
      throw failure;
    }
    connection.enter(client);
    try {
      const result = await call(client, { timeout: this.options.timeoutMs, signal }, connection);
      this.health.succeeded();
      return result;
    } catch (error) {
      if (mayRenewSession && this.sessionForgotten(connection, client, error)) {
        this.options.logger.info('upstream MCP server no longer knows the session; starting a new one', { event: 'gateway.upstream_session_expired' });
        // Awaited: the call must not reuse the forgotten session; concurrent ones share the one new session.
        await connection.drop(client);
        return this.attempt(tokenId, call, signal, false);
      }
      const failure = upstreamErrorOf(error, this.options.timeoutMs, this.secrets);
      if (failure.kind === 'protocol') this.health.succeeded();
      else this.health.failed(failure.kind, false);
      // A connection may carry several calls: one that timed out, was refused or was answered with something that is
      // not MCP says nothing about it, and dropping it would cut the others in flight. Its own response stream is
      // closed by its deadline (./bounded-fetch). Unreachable: new calls get a new connection, and the calls still
      // running on this one finish on it first.
      if (DROPS_CONNECTION.has(failure.kind)) void connection.drop(client, true);
      throw failure;
    } finally {
      connection.settled(client);
    }
  }

  /**
   * The shared connection for lists and for a stateless upstream; else the caller's own session. Whether the upstream
   * keeps sessions is learned from the shared connection, opened first.
   */
  private async connectionFor(tokenId: string | undefined): Promise<UpstreamConnection> {
    if (tokenId === undefined) return this.shared;
    const sharedClient = await this.shared.client();
    if (this.shared.sessionIdOf(sharedClient) === undefined) return this.shared;
    return this.sessions.get(tokenId, this.clock());
  }

  /**
   * The upstream answered a request that carried a session id with "no such session" (./forgotten-session): it
   * restarted or expired the session and did not run the request, and the spec has the client start a new session;
   * the request is sent once more on it, so the caller does not pay for the upstream's restart.
   */
  private sessionForgotten(connection: UpstreamConnection, client: Client, error: unknown): boolean {
    // A call cut short by closing a forgotten session's client was on that dead session too: the upstream never ran it.
    if (connection.isExpired(client)) return true;
    const forgotten = connection.sessionIdOf(client) !== undefined && isForgottenSession(error);
    if (forgotten) connection.markExpired(client);
    return forgotten;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const callers = this.sessions.clear();
    await Promise.all([this.shared.close(), ...callers.map((connection) => connection.close())]);
    await this.pool?.destroy();
  }

  private async connect(fetchUpstream: typeof fetch): Promise<OpenedClient> {
    const transport = new StreamableHTTPClientTransport(new URL(this.options.url), { fetch: fetchUpstream });
    // No debounce (the SDK's default is 300 ms): dropping a cache costs nothing, and a debounced drop serves the stale list meanwhile.
    const changed = { autoRefresh: false, debounceMs: 0, onChanged: () => this.options.onListChanged?.() };
    const client = new Client(GATEWAY_CLIENT_INFO, { capabilities: {}, listChanged: { tools: changed, resources: changed, prompts: changed } });
    // The SSE stream of a POST is read in the async context of the request that sent it, so the store names that request's caller.
    client.setNotificationHandler('notifications/message', (notification) => {
      this.caller.getStore()?.onlog?.(notification.params);
    });
    // No capability is declared, so a careful upstream never asks; one that asks anyway is told at once, not left waiting (ADR 0039).
    client.fallbackRequestHandler = async (request) => {
      throw new ProtocolError(ProtocolErrorCode.MethodNotFound, `${request.method} is not relayed: firelimit, the gateway in front of this server, does not pass requests to its callers`);
    };
    client.onerror = (error) => {
      this.options.logger.debug('upstream MCP connection reported an error', { event: 'gateway.upstream_error', kind: upstreamErrorOf(error, this.options.timeoutMs, this.secrets).kind });
    };
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.connect(transport, { timeout: this.options.timeoutMs } as never),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new UpstreamError('timeout', `the upstream MCP server did not answer within ${this.options.timeoutMs} ms`)), this.options.timeoutMs);
        }),
      ]);
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return { client, transport };
  }

  /** Every request upstream goes through here: the configured credential, the caller's public id, nothing of the caller's own. */
  private readonly fetchUpstream: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.delete('authorization');
    if (this.options.authorization !== undefined) headers.set('authorization', this.options.authorization);
    const tokenId = this.caller.getStore()?.tokenId;
    if (tokenId === undefined) headers.delete(TOKEN_ID_HEADER);
    else headers.set(TOKEN_ID_HEADER, tokenId);
    return this.fetchBounded(input, { ...init, headers });
  };

  /**
   * A caller's session: every request on it carries that caller's public id, its handshake and standalone stream
   * included, so the upstream can tell whose session it is.
   */
  private fetchForCaller(tokenId: string): typeof fetch {
    return (input, init) => {
      const headers = new Headers(init?.headers);
      headers.delete('authorization');
      if (this.options.authorization !== undefined) headers.set('authorization', this.options.authorization);
      headers.set(TOKEN_ID_HEADER, tokenId);
      return this.fetchBounded(input, { ...init, headers });
    };
  }
}
