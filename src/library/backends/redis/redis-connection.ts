import { ClientOfflineError, createClient, createCluster } from 'redis';
import type { RedisConnectionTarget, RedisMode } from './redis-url';
import { clusterSlotOfKey } from './cluster-slot';

export interface RedisConnectionOptions {
  readonly mode: RedisMode;
  /** One target (standalone) or the cluster's seed nodes. */
  readonly seeds: readonly RedisConnectionTarget[];
  /** PEM CA bundle for rediss:// (REDIS_TLS_CA_FILE's contents); default Node's trusted CAs. */
  readonly tlsCa?: string;
  /** Commands queued per node connection before new ones fail at once. */
  readonly maxPendingCommands: number;
  /** The client's own wait-to-be-written bound; the store adds its deadline on top. */
  readonly commandTimeoutMs: number;
  /** Every failed connect, handshake or node connection; never thrown, the store classifies it. */
  readonly onError: (error: unknown) => void;
  /** A (node) connection became ready. */
  readonly onReady: () => void;
}

/**
 * One way to send to Redis whichever its topology: a plain client, or
 * node-redis's cluster client, which discovers the slots from the seeds, keeps
 * one connection per master, follows MOVED and ASK, and rediscovers the
 * topology when a node stops answering (ADR 0056).
 */
export interface RedisConnection {
  readonly mode: RedisMode;
  readonly isReady: boolean;
  /** One command to the server, or, in a cluster, to the master of `routingKey`'s slot. */
  send(command: readonly string[], routingKey: string | undefined): Promise<unknown>;
  /** SCRIPT LOAD where `routingKey` lives: each shard has its own script cache. */
  loadScript(source: string, routingKey: string | undefined): Promise<unknown>;
  /** True once ready, false after `timeoutMs`; never rejects. */
  whenReady(timeoutMs: number): Promise<boolean>;
  /**
   * The server serving `routingKey` let a command pass its deadline. In a
   * cluster: ask the other nodes for the topology (at most once per
   * CLUSTER_TOPOLOGY_REFRESH_MS), since a frozen master keeps its sockets open
   * and the client, seeing no disconnect, would never look for its successor.
   */
  suspect(routingKey: string | undefined): void;
  /**
   * Cluster only: which shard serves `slot`, named by its slot range
   * (`slots 0-5460`), which a failover keeps, so the limiter's outage for it
   * ends when the promoted replica answers. Undefined before the topology is
   * known.
   */
  shardOfSlot?(slot: number): string | undefined;
  destroy(): void;
}

const CONNECT_TIMEOUT_MS = 2000;
/**
 * RESP3, node-redis 6's default, named so that a change of default cannot flip
 * it unseen (ADR 0068). Per command RESP2 costs the same (`npm run bench --
 * redis-client`) and our scripts answer the same over both
 * (test/integration/redis-resp-replies); RESP3's HELLO is what checks the
 * credentials on connect, so a missing password is NOAUTH at boot, not on the
 * first call. It needs Redis 6 or later (HELLO).
 */
const PROTOCOL = 3;
const RECONNECT_MAX_DELAY_MS = 2000;
/**
 * How long a cluster node may stay unreachable before the client asks the
 * others for the topology again (node-redis' default is 5000): after a
 * master's failover the replica it promoted is found within this of the
 * cluster's own failover, and asked again every such interval until it is.
 */
export const CLUSTER_TOPOLOGY_REFRESH_MS = 1000;

/** Exponential from 50 ms to 2 s, jittered so a fleet does not reconnect in step. */
export function reconnectDelayMs(retries: number): number {
  return Math.min(50 * 2 ** retries, RECONNECT_MAX_DELAY_MS) + Math.floor(Math.random() * 100);
}

export function openRedisConnection(options: RedisConnectionOptions): RedisConnection {
  return options.mode === 'cluster' ? openCluster(options) : openStandalone(options);
}

/** The parts, not a URL: the client then has no URL string to put into its own errors. */
function socketOf(target: RedisConnectionTarget, tlsCa: string | undefined): Record<string, unknown> {
  return {
    host: target.host,
    port: target.port,
    ...(target.tls ? tlsOf(target.host, tlsCa) : {}),
    connectTimeout: CONNECT_TIMEOUT_MS,
    reconnectStrategy: reconnectDelayMs,
  };
}

/** SNI carries the host name a managed Redis' certificate is issued for; an IP literal has none to send. */
function tlsOf(host: string, tlsCa: string | undefined): Record<string, unknown> {
  const isIp = /^[\d.]+$/.test(host) || host.includes(':');
  return { tls: true, ...(isIp ? {} : { servername: host }), ...(tlsCa !== undefined ? { ca: tlsCa } : {}) };
}

function credentialsOf(target: RedisConnectionTarget): Record<string, unknown> {
  return {
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
  };
}

function openStandalone(options: RedisConnectionOptions): RedisConnection {
  const target = options.seeds[0] as RedisConnectionTarget;
  const client = createClient({
    RESP: PROTOCOL,
    socket: socketOf(target, options.tlsCa),
    ...credentialsOf(target),
    ...(target.database !== undefined ? { database: target.database } : {}),
    disableOfflineQueue: true,
    commandsQueueMaxLength: options.maxPendingCommands,
    commandOptions: { timeout: options.commandTimeoutMs },
    disableClientInfo: true,
  });
  // Without a listener an 'error' event would crash the process; every retry emits one.
  client.on('error', options.onError);
  client.on('ready', options.onReady);
  // Resolves at the first successful connection, however long that takes; rejects only on close.
  client.connect().catch(() => undefined);
  return {
    mode: 'standalone',
    get isReady() {
      return client.isReady;
    },
    send: (command) => client.sendCommand(command as string[]),
    loadScript: (source) => client.sendCommand(['SCRIPT', 'LOAD', source]),
    whenReady: (timeoutMs) => waitFor(() => client.isReady, (listener) => client.on('ready', listener), (listener) => client.off('ready', listener), timeoutMs),
    // One server: nothing to look for elsewhere; the reconnects cover a restart.
    suspect: () => undefined,
    destroy: () => client.destroy(),
  };
}

function openCluster(options: RedisConnectionOptions): RedisConnection {
  const first = options.seeds[0] as RedisConnectionTarget;
  const cluster = createCluster({
    // Given to every node connection and to discovery's.
    RESP: PROTOCOL,
    rootNodes: options.seeds.map((seed) => ({ socket: socketOf(seed, options.tlsCa) })),
    // What every node connection gets, the discovered ones included (rootNodes is only for discovery).
    defaults: {
      socket: { ...(first.tls ? tlsOf(first.host, options.tlsCa) : {}), connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: reconnectDelayMs },
      ...credentialsOf(first),
      disableOfflineQueue: true,
      commandsQueueMaxLength: options.maxPendingCommands,
      disableClientInfo: true,
    },
    topologyRefreshOnReconnectionAttemptStrategy: CLUSTER_TOPOLOGY_REFRESH_MS,
  });
  let closed = false;
  let lastRefreshMs = Number.NEGATIVE_INFINITY;
  const loadsInFlight = new WeakMap<object, Map<string, Promise<unknown>>>();
  const readyListeners = new Set<() => void>();
  const rangeNames = new WeakMap<object, string>();
  // Asked of the other nodes: asking the frozen one would hang as the command did. Until the cluster has
  // promoted a replica they name the same master, and the next deadline asks again.
  const refreshWithout = async (routingKey: string): Promise<void> => {
    const node = await cluster.getNodeClientForKey(routingKey);
    const socket = node.options?.socket as { host?: string; port?: number } | undefined;
    const address = socket?.host !== undefined && socket.port !== undefined ? `${socket.host}:${socket.port}` : undefined;
    await cluster._slots.rediscover(undefined, address === undefined ? undefined : new Set([address]));
  };
  const hasMaster = (routingKey: string): boolean => (cluster.slots as readonly ({ master?: unknown } | undefined)[])[clusterSlotOfKey(routingKey)]?.master !== undefined;
  // A slot table that lacks the key's slot (a node answered discovery from a view not yet converged, found by
  // CI after whenReady had seen every slot) makes node-redis throw a TypeError reading its master. Ask for the
  // table again once; still missing, the cluster is unreachable for that key (an outage), never a TypeError.
  const afterPartialTable = async <T>(error: unknown, routingKey: string | undefined, again: () => Promise<T>): Promise<T> => {
    if (!(error instanceof TypeError) || routingKey === undefined || hasMaster(routingKey)) throw error;
    await cluster._slots.rediscover(undefined).catch(options.onError);
    if (closed || !hasMaster(routingKey)) throw new ClientOfflineError();
    return again();
  };
  cluster.on('error', options.onError);
  cluster.on('node-error', options.onError);
  cluster.on('node-ready', options.onReady);
  const notifyReady = (): void => {
    for (const listener of [...readyListeners]) listener();
  };
  cluster.on('connect', () => {
    options.onReady();
    notifyReady();
  });
  // The cluster client gives up when no seed answers its first discovery; unlike a plain client it
  // never retries on its own, so this does: a cluster down at boot is an outage, not a dead store.
  const connect = (retries: number): void => {
    if (closed) return;
    cluster.connect().catch((error: unknown) => {
      if (closed) return;
      options.onError(error);
      setTimeout(() => connect(retries + 1), reconnectDelayMs(retries)).unref();
    });
  };
  connect(0);
  return {
    mode: 'cluster',
    get isReady() {
      return cluster.isReady;
    },
    send(command, routingKey) {
      // Before discovery the client has no slot table; fail at once, as a disconnected plain client does.
      if (!cluster.isReady) return Promise.reject(new ClientOfflineError());
      // async: a throw inside node-redis, before its first await, becomes this promise's rejection.
      const sent = async (): Promise<unknown> => cluster.sendCommand(routingKey, false, command as string[]);
      return sent().catch((error: unknown) => afterPartialTable(error, routingKey, sent));
    },
    async loadScript(source, routingKey) {
      if (!cluster.isReady || routingKey === undefined) throw new ClientOfflineError();
      // The key's own master, not SCRIPT LOAD's usual all-nodes fan-out: one unreachable node elsewhere must not fail this shard.
      const nodeOf = async () => cluster.getNodeClientForKey(routingKey);
      const node = await nodeOf().catch((error: unknown) => afterPartialTable(error, routingKey, nodeOf));
      // One SCRIPT LOAD per node and script however many keys met NOSCRIPT there at once (after a failover, every key of the shard).
      let loads = loadsInFlight.get(node);
      if (loads === undefined) {
        loads = new Map();
        loadsInFlight.set(node, loads);
      }
      let loading = loads.get(source);
      if (loading === undefined) {
        const perNode = loads;
        // Forgotten one turn of the event loop after it completes, not at once: calls whose NOSCRIPT came in
        // the same read are still on their way here (behind an await for the node) and would load it again.
        loading = node.sendCommand(['SCRIPT', 'LOAD', source]).finally(() => setImmediate(() => perNode.delete(source)));
        loads.set(source, loading);
      }
      return loading;
    },
    // Ready means every slot has a master: a client that met the cluster while its slots were still being
    // assigned holds a partial table (a command for a missing slot throws inside node-redis), so it asks again.
    whenReady: (timeoutMs) => {
      const covered = (): boolean => cluster.isReady && slotsCovered(cluster.slots as readonly unknown[]);
      const retry = setInterval(() => {
        if (cluster.isReady && !covered()) void cluster._slots.rediscover(undefined).then(notifyReady, options.onError);
      }, PARTIAL_TABLE_RETRY_MS);
      retry.unref();
      return waitFor(covered, (listener) => readyListeners.add(listener), (listener) => readyListeners.delete(listener), timeoutMs).finally(() => clearInterval(retry));
    },
    shardOfSlot(slot) {
      const shards = cluster.slots as readonly object[];
      const shard = shards[slot];
      // A slot the table lacks while the others are known (a discovery during a failover): its own outage, so
      // its keys' failures do not open the whole store's and put every other shard on local windows.
      if (shard === undefined) return cluster.isReady ? SLOTS_WITHOUT_A_MASTER : undefined;
      let name = rangeNames.get(shard);
      if (name === undefined) {
        // Once per shard object per topology: the run of slots that share it.
        let first = slot;
        while (first > 0 && shards[first - 1] === shard) first--;
        let last = slot;
        while (last < shards.length - 1 && shards[last + 1] === shard) last++;
        name = `slots ${first}-${last}`;
        rangeNames.set(shard, name);
      }
      return name;
    },
    suspect(routingKey) {
      const nowMs = Date.now();
      if (closed || !cluster.isReady || routingKey === undefined || nowMs - lastRefreshMs < CLUSTER_TOPOLOGY_REFRESH_MS) return;
      lastRefreshMs = nowMs;
      void refreshWithout(routingKey).catch(options.onError);
    },
    destroy() {
      closed = true;
      cluster.destroy();
    },
  };
}

const CLUSTER_SLOT_COUNT = 16_384;
const SLOTS_WITHOUT_A_MASTER = 'slots without a master';
const PARTIAL_TABLE_RETRY_MS = 250;

function slotsCovered(slots: readonly unknown[]): boolean {
  if (slots.length < CLUSTER_SLOT_COUNT) return false;
  for (let slot = 0; slot < CLUSTER_SLOT_COUNT; slot++) if (slots[slot] === undefined) return false;
  return true;
}

function waitFor(isReady: () => boolean, subscribe: (listener: () => void) => void, unsubscribe: (listener: () => void) => void, timeoutMs: number): Promise<boolean> {
  if (isReady()) return Promise.resolve(true);
  return new Promise((resolve) => {
    // Told of every event that may make it ready (a cluster's partial slot table is not): resolves only when it is.
    const onReady = (): void => {
      if (!isReady()) return;
      clearTimeout(timer);
      unsubscribe(onReady);
      resolve(true);
    };
    const timer = setTimeout(() => {
      unsubscribe(onReady);
      resolve(false);
    }, timeoutMs);
    timer.unref();
    subscribe(onReady);
  });
}
