import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { startRedisCluster } from '../test/support/redis-cluster';

/**
 * `up`: a 6-node Redis Cluster (3 masters + 3 replicas) of Debian's
 * redis-server on free loopback ports, left running; prints the REDIS_URL to
 * use with REDIS_MODE=cluster and writes the PIDs to the state file.
 * `down`: SIGKILLs those PIDs and removes the nodes' files.
 * One implementation with the tests' cluster (test/support/redis-cluster.ts).
 */

const STATE_FILE = process.env.REDIS_CLUSTER_STATE ?? '.firelimit/redis-cluster.json';

interface State {
  readonly url: string;
  readonly dir: string;
  readonly pids: readonly number[];
}

async function up(): Promise<void> {
  const nodeTimeoutMs = process.env.REDIS_CLUSTER_NODE_TIMEOUT_MS === undefined ? 2000 : Number(process.env.REDIS_CLUSTER_NODE_TIMEOUT_MS);
  const cluster = await startRedisCluster({ detached: true, nodeTimeoutMs });
  const state: State = { url: cluster.url, dir: cluster.dir, pids: cluster.nodes.map((node) => node.pid) };
  writeFileSync(STATE_FILE, `${JSON.stringify(state, null, 2)}\n`);
  process.stdout.write(`REDIS_MODE=cluster REDIS_URL=${cluster.url}\n(pids ${state.pids.join(' ')}; stop with scripts/redis-cluster.sh down)\n`);
}

function down(): void {
  let state: State;
  try {
    state = JSON.parse(readFileSync(STATE_FILE, 'utf8')) as State;
  } catch {
    process.stderr.write(`no cluster recorded in ${STATE_FILE}; nothing to stop\n`);
    return;
  }
  for (const pid of state.pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  rmSync(state.dir, { recursive: true, force: true });
  rmSync(STATE_FILE, { force: true });
  process.stdout.write(`stopped pids ${state.pids.join(' ')}\n`);
}

const command = process.argv[2];
if (command === 'up') {
  up().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
} else if (command === 'down') {
  down();
} else {
  process.stderr.write('usage: scripts/redis-cluster.sh up|down\n');
  process.exitCode = 2;
}
