import type { McpServer } from '@modelcontextprotocol/server';

/**
 * Servers built once and lent to one exchange at a time. The SDK connects a
 * server to exactly one transport (a second `connect` throws until the first
 * closes) and keeps the protocol era as instance state, so one instance
 * cannot answer two requests at once; building a new one per request is what
 * made every call pay for registering tools and converting their schemas.
 * Here an instance goes back to the idle list when its exchange closes the
 * transport, and is lent again: the pool grows to the number of requests in
 * flight at once and never rebuilds what it already has.
 */
export class McpServerPool {
  private readonly idle: McpServer[] = [];
  // Weak: a server the SDK drops without closing its transport (a refused 2026 request) is simply forgotten.
  private readonly lent = new WeakSet<McpServer>();
  private builtCount = 0;

  /**
   * @param build makes one fully registered server.
   * @param maxIdle idle servers kept after a burst; beyond it a returned one is dropped. Default 64.
   */
  constructor(
    private readonly build: () => McpServer,
    private readonly maxIdle = 64,
  ) {}

  /** An idle server, or a new one when every server is busy. */
  acquire(): McpServer {
    const server = this.idle.pop() ?? this.buildOne();
    this.lent.add(server);
    return server;
  }

  /** Servers built so far: stays at the peak concurrency, however many requests were served. */
  get built(): number {
    return this.builtCount;
  }

  private buildOne(): McpServer {
    const server = this.build();
    this.builtCount++;
    // The protocol layer clears its transport before calling onclose, so the instance is free to connect again.
    server.server.onclose = () => this.release(server);
    return server;
  }

  private release(server: McpServer): void {
    if (!this.lent.delete(server)) return;
    if (this.idle.length < this.maxIdle) this.idle.push(server);
  }
}
