import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

/**
 * What redis-server.ts and redis-cluster.ts both need to run Debian's
 * redis-server on loopback: the binary, the common flags, the shell that
 * ties a server's life to ours, its pid, the exit hook and free ports.
 */

/** Default /usr/bin/redis-server, or REDIS_SERVER_BIN. */
export function redisServerBinary(): string {
  return process.env.REDIS_SERVER_BIN ?? '/usr/bin/redis-server';
}

/** Loopback only, nothing persisted, warnings only in the log. */
export function redisServerArgs(port: number): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'];
}

// Redis writes its log to stderr; stdout carries only the pid. When our stdin closes (we died,
// however: even SIGKILL, where no 'exit' handler runs), the shell kills the server.
const WRAPPER = `
"$0" "$@" >&2 </dev/null &
pid=$!
echo "$pid"
cat >/dev/null
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exit 0
`;

/** Starts `binary args` under the wrapper shell; its stdout's first line is the server's pid (see serverPidOf). */
export function spawnWrapped(binary: string, args: readonly string[], stderr: 'pipe' | 'ignore'): ChildProcess {
  return spawn('/bin/sh', ['-c', WRAPPER, binary, ...args], { stdio: ['pipe', 'pipe', stderr] });
}

/** The pid the wrapper reports, tracked for the exit hook until the shell exits. */
export async function serverPidOf(shell: ChildProcess, exited: Promise<void>, timeoutMs: number): Promise<number> {
  installExitHook();
  const pid = Number(await firstLine(shell, exited, timeoutMs));
  livePids.add(pid);
  void exited.then(() => livePids.delete(pid));
  return pid;
}

/** SIGKILLs a server the wrapper started and stops tracking it. */
export function killServer(pid: number): void {
  livePids.delete(pid);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

function firstLine(shell: ChildProcess, exited: Promise<void>, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error('no pid from wrapper')), timeoutMs);
    shell.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const newline = text.indexOf('\n');
      if (newline >= 0) {
        clearTimeout(timer);
        resolve(text.slice(0, newline).trim());
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error('wrapper exited'));
    });
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Server pids still running, for the exit hook. */
const livePids = new Set<number>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Belt and braces for a normal exit (the wrapper covers the abnormal ones). The server, not
  // the shell: a killed shell would leave its server orphaned.
  process.once('exit', () => {
    for (const pid of livePids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });
}
