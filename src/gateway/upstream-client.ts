import { AsyncLocalStorage } from 'node:async_hooks';
import { Client, ProtocolError, ProtocolErrorCode, SdkHttpError, StreamableHTTPClientTransport, type LoggingMessageNotification, type ServerCapabilities } from '@modelcontextprotocol/client';
import type { Logger } from '../shared/logger';
import { boundedFetch, UPSTREAM_MAX_ANSWER_BYTES } from './bounded-fetch';
import { UpstreamError, upstreamErrorOf } from './upstream-error';

/**
 * The header that tells the upstream which firelimit token a call is for: the
 * token's public id (`tok_...`), never its secret
 * (docs/adr/0034-gateway-forwarding.md).
 */
export const TOKEN_ID_HEADER = 'X-Firelimit-Token-Id';

/**
 * Failures that say the connection itself is broken, so the next call opens a new one. An HTTP answer (refused: a
 * 401, a 429, a 500) proves the connection works; an expired session (404) is renewed on its own (sessionExpired).
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
}

/** Where the upstream's log messages for one call go. */
export type UpstreamLogSink = (params: LoggingMessageNotification['params']) => void;

/** Who a request upstream is for: the public token id for its header, and where its log messages go. */
interface Caller {
  readonly tokenId: string | undefined;
  readonly onlog: UpstreamLogSink | undefined;
}

/** What a call runs with: the connected client and the per-request options the deadline needs. */
export type UpstreamCall<T> = (client: Client, options: { readonly timeout: number; readonly signal?: AbortSignal }) => Promise<T>;

/**
 * One SDK client connection to the upstream, reused by every call and
 * reopened after a failure. The integrator's request never reaches the
 * upstream: every request upstream is built by this client, whose only
 * headers are the configured Authorization and the caller's public token id
 * (carried per call through AsyncLocalStorage into the transport's fetch, so
 * concurrent calls on the one connection are each attributed right).
 */
export class UpstreamClient {
  private connecting: Promise<Client> | undefined;
  /** Each client's transport, for its session id. */
  private readonly sessions = new WeakMap<Client, StreamableHTTPClientTransport>();
  /** Clients whose session the upstream no longer knows. */
  private readonly expired = new WeakSet<Client>();
  private readonly caller = new AsyncLocalStorage<Caller>();
  private readonly fetchBounded: typeof fetch;
  /** Calls now running on each client. */
  private readonly inFlight = new Map<Client, number>();
  /** Clients dropped after a failure while other calls ran on them: each is closed when its last call ends. */
  private readonly retired = new Set<Client>();

  constructor(private readonly options: UpstreamClientOptions) {
    this.fetchBounded = boundedFetch(options.fetch ?? fetch, { deadlineMs: options.timeoutMs, maxAnswerBytes: UPSTREAM_MAX_ANSWER_BYTES });
  }

  /** Connects now, so the first caller does not pay for it; a failure is logged and retried on first use. */
  async warmUp(): Promise<boolean> {
    try {
      await this.client();
      return true;
    } catch (error) {
      this.options.logger.warn('upstream MCP server not reachable at startup; calls fail until it is', { event: 'gateway.upstream_not_ready', kind: upstreamErrorOf(error, this.options.timeoutMs).kind });
      return false;
    }
  }

  /** What the upstream said it offers; undefined before the first connection. */
  async capabilities(): Promise<ServerCapabilities | undefined> {
    return (await this.client()).getServerCapabilities();
  }

  /**
   * Runs one request upstream for `tokenId`. Failures come back as an
   * UpstreamError that names what went wrong (unreachable, timeout, refused, invalid,
   * a JSON-RPC error) without the upstream's own text; a failure of the
   * connection drops it, so the next call reconnects (the calls still
   * running on it finish first). `onlog` hears the
   * upstream's notifications/message that arrive on this request's own
   * response stream (not those on the session's standalone stream).
   */
  async request<T>(tokenId: string | undefined, call: UpstreamCall<T>, signal?: AbortSignal, onlog?: UpstreamLogSink): Promise<T> {
    return this.caller.run({ tokenId, onlog }, () => this.attempt(call, signal, true));
  }

  private async attempt<T>(call: UpstreamCall<T>, signal: AbortSignal | undefined, mayRenewSession: boolean): Promise<T> {
    let client: Client;
    try {
      client = await this.client();
    } catch (error) {
      throw upstreamErrorOf(error, this.options.timeoutMs);
    }
    this.inFlight.set(client, (this.inFlight.get(client) ?? 0) + 1);
    try {
      return await call(client, { timeout: this.options.timeoutMs, signal });
    } catch (error) {
      if (mayRenewSession && this.sessionExpired(client, error)) {
        this.options.logger.info('upstream MCP session expired (HTTP 404); starting a new one', { event: 'gateway.upstream_session_expired' });
        // Awaited: the call must not reuse the expired session; concurrent ones share the one new session.
        await this.drop(client);
        return this.attempt(call, signal, false);
      }
      const failure = upstreamErrorOf(error, this.options.timeoutMs);
      // The connection carries every caller's calls: one that timed out, was refused or was answered with something
      // that is not MCP says nothing about it, and dropping it would cut the others in flight. Its own response stream
      // is closed by its deadline (./bounded-fetch).
      // Unreachable: new calls get a new connection, and the calls still running on this one finish on it first.
      if (DROPS_CONNECTION.has(failure.kind)) void this.drop(client, true);
      throw failure;
    } finally {
      this.settled(client);
    }
  }

  /** One call on `client` ended; a retired client is closed once none is left. */
  private settled(client: Client): void {
    const left = (this.inFlight.get(client) ?? 1) - 1;
    if (left > 0) {
      this.inFlight.set(client, left);
      return;
    }
    this.inFlight.delete(client);
    if (this.retired.delete(client)) void client.close().catch(() => undefined);
  }

  /**
   * HTTP 404 to a request that carried a session id: the upstream restarted
   * or expired the session, and did not run the request. The spec has the
   * client start a new session; the request is sent once more on it, so the
   * caller does not pay for the upstream's restart.
   */
  private sessionExpired(client: Client, error: unknown): boolean {
    // A call cut short by closing an expired session's client was on that dead session too: the upstream never ran it.
    if (this.expired.has(client)) return true;
    const expired = SdkHttpError.isInstance(error) && (error as SdkHttpError).status === 404 && this.sessions.get(client)?.sessionId !== undefined;
    if (expired) this.expired.add(client);
    return expired;
  }

  async close(): Promise<void> {
    const connecting = this.connecting;
    this.connecting = undefined;
    const retired = [...this.retired];
    this.retired.clear();
    await Promise.all(retired.map((client) => client.close().catch(() => undefined)));
    if (connecting !== undefined) await connecting.then((client) => client.close()).catch(() => undefined);
  }

  private client(): Promise<Client> {
    // Outside any caller: the connection, and the standalone stream it opens, belong to no one call.
    this.connecting ??= this.caller.exit(() => this.connect()).catch((error: unknown) => {
      this.connecting = undefined;
      throw error;
    });
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(this.options.url), { fetch: this.fetchUpstream });
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
      this.options.logger.debug('upstream MCP connection reported an error', { event: 'gateway.upstream_error', kind: upstreamErrorOf(error, this.options.timeoutMs).kind });
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
    this.sessions.set(client, transport);
    return client;
  }

  /**
   * Forgets `client` if it is still the current connection, so the next call reconnects; resolves once done. It is
   * closed now, cutting the calls on it (an expired session's: the upstream runs none of them), or, `whenIdle`, once
   * the calls still running on it have ended.
   */
  private drop(client: Client, whenIdle = false): Promise<void> {
    const connecting = this.connecting;
    if (connecting === undefined) return Promise.resolve();
    return connecting.then((current) => {
      if (current !== client || this.connecting !== connecting) return;
      this.connecting = undefined;
      if (whenIdle && this.inFlight.has(client)) this.retired.add(client);
      else void client.close().catch(() => undefined);
    }, () => undefined);
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
}
