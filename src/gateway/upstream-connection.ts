import type { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { PooledSession } from './session-pool';

/** How long ending a session upstream (its DELETE) may take before the client is closed anyway. */
const TERMINATE_DEADLINE_MS = 1000;

/** A connected SDK client and the transport that holds its session id. */
export interface OpenedClient {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
}

/**
 * One upstream connection (one session on a stateful upstream) that reopens
 * after a failure: the shared one the lists are fetched on, or one caller's
 * (docs/adr/0050-upstream-session-per-caller.md). Calls on a client are
 * counted, so a client dropped while others run on it is closed only when the
 * last of them ends (ADR 0041).
 */
export class UpstreamConnection implements PooledSession {
  private connecting: Promise<Client> | undefined;
  private readonly transports = new WeakMap<Client, StreamableHTTPClientTransport>();
  /** Clients whose session the upstream no longer knows. */
  private readonly expired = new WeakSet<Client>();
  /** Calls now running on each client. */
  private readonly inFlight = new Map<Client, number>();
  /** Clients dropped while calls ran on them: each is closed when its last call ends. */
  private readonly retired = new Set<Client>();
  private retiring = false;

  constructor(private readonly open: () => Promise<OpenedClient>) {}

  /** The connected client, connecting first if there is none. */
  client(): Promise<Client> {
    this.connecting ??= this.open().then(
      ({ client, transport }) => {
        this.transports.set(client, transport);
        return client;
      },
      (error: unknown) => {
        this.connecting = undefined;
        throw error;
      },
    );
    return this.connecting;
  }

  /** The session id the upstream gave `client`; undefined for a stateless upstream. */
  sessionIdOf(client: Client): string | undefined {
    return this.transports.get(client)?.sessionId;
  }

  /** The transport that holds `client`'s session id and agreed protocol version. */
  transportOf(client: Client): StreamableHTTPClientTransport | undefined {
    return this.transports.get(client);
  }

  /** A call starts on `client`. */
  enter(client: Client): void {
    this.inFlight.set(client, (this.inFlight.get(client) ?? 0) + 1);
  }

  /** A call on `client` ended; a client dropped meanwhile is closed once none is left. */
  settled(client: Client): void {
    const left = (this.inFlight.get(client) ?? 1) - 1;
    if (left > 0) {
      this.inFlight.set(client, left);
      return;
    }
    this.inFlight.delete(client);
    if (this.retired.delete(client)) void this.end(client);
  }

  markExpired(client: Client): void {
    this.expired.add(client);
  }

  isExpired(client: Client): boolean {
    return this.expired.has(client);
  }

  busy(): boolean {
    return this.inFlight.size > 0;
  }

  /**
   * Forgets `client` if it is still the current one, so the next call reconnects; resolves once done. It is closed now,
   * cutting the calls on it (an expired session's: the upstream runs none of them), or, `whenIdle`, once the calls still
   * running on it have ended.
   */
  drop(client: Client, whenIdle = false): Promise<void> {
    const connecting = this.connecting;
    if (connecting === undefined) return Promise.resolve();
    return connecting.then((current) => {
      if (current !== client || this.connecting !== connecting) return;
      this.connecting = undefined;
      if (whenIdle && this.inFlight.has(client)) this.retired.add(client);
      else void this.end(client);
    }, () => undefined);
  }

  /** The pool let this one go: its session is ended once no call runs on it. */
  retire(): void {
    if (this.retiring) return;
    this.retiring = true;
    const connecting = this.connecting;
    this.connecting = undefined;
    void connecting?.then((client) => {
      if (this.inFlight.has(client)) this.retired.add(client);
      else void this.end(client);
    }, () => undefined);
  }

  /** Shutdown: every client closed now, its session ended. */
  async close(): Promise<void> {
    const connecting = this.connecting;
    this.connecting = undefined;
    const retired = [...this.retired];
    this.retired.clear();
    const current = await connecting?.catch(() => undefined);
    await Promise.all([...retired, ...(current === undefined ? [] : [current])].map((client) => this.end(client)));
  }

  /**
   * Ends the session upstream (DELETE, where it has one and still knows it), then closes the client. The DELETE is a
   * courtesy: an upstream that does not answer it within a second does not hold up a shutdown; closing aborts it.
   */
  private async end(client: Client): Promise<void> {
    const transport = this.transports.get(client);
    if (transport?.sessionId !== undefined && !this.expired.has(client)) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        transport.terminateSession().catch(() => undefined),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, TERMINATE_DEADLINE_MS);
        }),
      ]);
      clearTimeout(timer);
    }
    await client.close().catch(() => undefined);
  }
}
