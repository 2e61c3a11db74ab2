import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, killServer, redisServerArgs, redisServerBinary, serverPidOf, spawnWrapped } from './redis-process';

/**
 * A Redis Cluster of Debian's redis-server on loopback: `masters` masters
 * with one replica each (6 nodes by default), joined with
 * `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`, ready
 * when every node reports `cluster_state:ok` and agrees on all 16384 slots.
 * Nothing sleeps a fixed time: each step polls for the state it needs.
 *
 * Attached (tests): each server runs under a shell holding our stdin, as in
 * redis-process.ts, so a test process that dies takes its cluster with it.
 * Detached (scripts/redis-cluster.sh): the servers outlive this process and
 * are stopped by the PIDs `up` prints.
 */

export interface RedisClusterOptions {
  /** Masters; each gets one replica. Default 3 (6 nodes). */
  readonly masters?: number;
  /** cluster-node-timeout: how long a silent master takes to be failed over. Default 2000. */
  readonly nodeTimeoutMs?: number;
  /** Servers keep running after this process exits (the shell script). Default false. */
  readonly detached?: boolean;
  /** Default /usr/bin/redis-server, or REDIS_SERVER_BIN. */
  readonly binary?: string;
  /** Default 20000. */
  readonly startTimeoutMs?: number;
  /** The nodes' ports (from freeClusterPorts), for a test that points a client at them before they exist. Default: free ones. */
  readonly ports?: readonly number[];
}

export interface ClusterNode {
  readonly port: number;
  readonly pid: number;
}

export interface RedisCluster {
  /** Every node as `redis://127.0.0.1:port`, comma-separated: what REDIS_URL takes with REDIS_MODE=cluster. */
  readonly url: string;
  readonly nodes: readonly ClusterNode[];
  /** Where the nodes keep their cluster config files; removed by close(). */
  readonly dir: string;
  /** The port of the master currently serving `key`'s slot, as the cluster itself says (CLUSTER NODES). */
  masterPortOf(key: string): number;
  /** Ports of the current masters. */
  masterPorts(): number[];
  /** SIGKILL one node; the cluster fails it over after nodeTimeoutMs. */
  kill(port: number): void;
  /** SIGSTOP one node: its sockets stay open and nothing answers; the cluster fails it over after nodeTimeoutMs. */
  suspend(port: number): void;
  /** SIGCONT. */
  resume(port: number): void;
  /** Resolves once every master again has a replica in sync (after a failover, the old master's resync). */
  whenHealthy(timeoutMs: number): Promise<void>;
  /** SIGKILLs every node; safe to call twice. */
  close(): Promise<void>;
}

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2000;
  const binary = options.binary ?? redisServerBinary();
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  const detached = options.detached ?? false;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-cluster-'));

  const ports = options.ports === undefined ? await freeClusterPorts(masters * 2) : [...options.ports];
  if (ports.length !== masters * 2) throw new Error(`redis cluster: ${masters * 2} ports needed, ${ports.length} given`);
  const shells: ChildProcess[] = [];
  const nodes: ClusterNode[] = [];
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    for (const node of nodes) killServer(node.pid);
    await Promise.all(shells.map((shell) => new Promise<void>((resolve) => {
      if (shell.exitCode !== null || shell.signalCode !== null) resolve();
      else {
        shell.once('exit', () => resolve());
        shell.stdin?.end();
      }
    })));
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    for (const port of ports) {
      const args = [
        ...redisServerArgs(port),
        '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout', String(nodeTimeoutMs), '--dir', dir,
        // Redis' default (yes) makes every shard answer CLUSTERDOWN while one has no master; no keeps the others serving.
        '--cluster-require-full-coverage', 'no',
      ];
      if (detached) {
        const child = spawn(binary, args, { detached: true, stdio: 'ignore' });
        child.unref();
        nodes.push({ port, pid: child.pid as number });
      } else {
        const shell = spawnWrapped(binary, args, 'ignore');
        shells.push(shell);
        const exited = new Promise<void>((resolve) => shell.once('exit', () => resolve()));
        nodes.push({ port, pid: await serverPidOf(shell, exited, startTimeoutMs) });
      }
    }
    const deadline = Date.now() + startTimeoutMs;
    for (const port of ports) await until(deadline, `node ${port} answers PING`, () => cli(port, 'PING') === 'PONG');
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8', timeout: startTimeoutMs });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    await until(deadline, 'every node reports cluster_state:ok with all slots', () =>
      ports.every((port) => {
        const info = cli(port, 'CLUSTER', 'INFO');
        return info.includes('cluster_state:ok') && info.includes('cluster_slots_ok:16384');
      }),
    );
    // Replicas attach after the state turns ok; a kill -9 before that would leave a shard without a successor.
    await until(deadline, `${masters} masters each with a replica in sync`, () => healthy(ports[0] as number, masters));
    for (const shell of shells) {
      shell.unref();
      for (const stream of [shell.stdin, shell.stdout]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
    }
  } catch (error) {
    await close();
    throw error;
  }

  const killed = new Set<number>();
  const nodeOf = (port: number): ClusterNode => {
    const node = nodes.find((n) => n.port === port);
    if (node === undefined) throw new Error(`no node on port ${port}`);
    return node;
  };
  // A node to ask about the cluster: any that still answers (a killed one may linger as a zombie, so not by PID).
  const alive = (): number => (nodes.find((n) => !killed.has(n.port) && cli(n.port, 'PING') === 'PONG') ?? (nodes[0] as ClusterNode)).port;
  return {
    url: ports.map((port) => `redis://127.0.0.1:${port}`).join(','),
    nodes,
    dir,
    masterPortOf(key) {
      const slot = Number(cli(alive(), 'CLUSTER', 'KEYSLOT', key));
      const owner = clusterNodes(alive()).find((n) => n.role === 'master' && !n.failed && n.ranges.some(([from, to]) => slot >= from && slot <= to));
      if (owner === undefined) throw new Error(`no master serves slot ${slot}`);
      return owner.port;
    },
    whenHealthy(timeoutMs) {
      return until(Date.now() + timeoutMs, `${masters} masters each with a replica in sync`, () => healthy(alive(), masters));
    },
    masterPorts() {
      return clusterNodes(alive()).filter((n) => n.role === 'master' && !n.failed && n.slots).map((n) => n.port);
    },
    suspend(port) {
      process.kill(nodeOf(port).pid, 'SIGSTOP');
    },
    resume(port) {
      process.kill(nodeOf(port).pid, 'SIGCONT');
    },
    kill(port) {
      const node = nodes.find((n) => n.port === port);
      if (node === undefined) throw new Error(`no node on port ${port}`);
      killed.add(port);
      killServer(node.pid);
    },
    close,
  };
}

/**
 * Every master serving slots has a replica whose replication link is up: a
 * replica that never finished its sync is not eligible for promotion, so
 * only then can any master fail over.
 */
function healthy(askPort: number, masters: number): boolean {
  const table = clusterNodes(askPort);
  const serving = table.filter((n) => n.role === 'master' && !n.failed && n.slots);
  const replicas = table.filter((n) => n.role === 'slave' && n.linked);
  return serving.length === masters && replicas.length >= masters
    && replicas.every((n) => cli(n.port, 'INFO', 'replication').includes('master_link_status:up'));
}

interface NodeLine {
  readonly port: number;
  readonly role: 'master' | 'slave';
  readonly failed: boolean;
  readonly linked: boolean;
  readonly slots: boolean;
  readonly ranges: readonly (readonly [number, number])[];
}

/** CLUSTER NODES, one line per node: id addr flags master ping pong epoch link slots... */
function clusterNodes(port: number): NodeLine[] {
  return cli(port, 'CLUSTER', 'NODES').split('\n').filter(Boolean).map((line) => {
    const fields = line.split(' ');
    const flags = (fields[2] ?? '').split(',');
    const ranges = fields.slice(8).filter((f) => !f.startsWith('[')).map((f) => {
      const [from, to] = f.split('-').map(Number);
      return [from as number, to ?? (from as number)] as const;
    });
    return {
      port: Number((fields[1] ?? '').split('@')[0]?.split(':')[1]),
      role: flags.includes('master') ? 'master' : 'slave',
      failed: flags.includes('fail') || flags.includes('fail?'),
      linked: fields[7] === 'connected' && !flags.includes('fail'),
      slots: ranges.length > 0,
      ranges,
    };
  });
}

function cli(port: number, ...args: string[]): string {
  const result = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8', timeout: 2000 });
  return (result.stdout ?? '').trim();
}

async function until(deadlineMs: number, what: string, ready: () => boolean): Promise<void> {
  while (!ready()) {
    if (Date.now() > deadlineMs) throw new Error(`redis cluster: timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Distinct free ports, and none of them within 10000 below 65536: a cluster
 * node also listens on its port + 10000 (the bus), which must be free too.
 */
export async function freeClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freePort();
    if (port + 10_000 <= 65_535 && !ports.includes(port) && (await isFree(port + 10_000))) ports.push(port);
  }
  return ports;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
