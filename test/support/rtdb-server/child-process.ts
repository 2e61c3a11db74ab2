import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ServerMessage } from './server-process';

const ENTRY = path.join(__dirname, 'server-process.ts');
const READY_TIMEOUT_MS = 30_000;

const live = new Set<ChildProcess>();

function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
}

/** Registered only while children live, so many test files in one jest worker do not pile up exit listeners. */
function track(child: ChildProcess): void {
  if (live.size === 0) process.on('exit', killAll);
  live.add(child);
  child.once('exit', () => {
    live.delete(child);
    if (live.size === 0) process.off('exit', killAll);
  });
}

function spawnOnce(port: number, rules: object | undefined): Promise<{ child: ChildProcess; port: number }> {
  // `node --require tsx/cjs`, not the tsx CLI: the CLI runs the script in a grandchild,
  // and SIGSTOP/SIGKILL must reach the process that owns the sockets.
  const child = fork(ENTRY, [], {
    execArgv: ['--require', require.resolve('tsx/cjs')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, RTDB_TEST_SERVER_CONFIG: JSON.stringify({ port, rules }) },
  });
  track(child);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error('RTDB test server did not become ready in time')), READY_TIMEOUT_MS);
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const fail = (error: Error) => {
      cleanup();
      child.kill('SIGKILL');
      reject(error);
    };
    const onExit = (code: number | null, signal: string | null) =>
      fail(new Error(`RTDB test server exited before ready (code ${code}, signal ${signal})`));
    const onMessage = (raw: unknown) => {
      const message = raw as ServerMessage;
      if (message.type === 'ready') {
        cleanup();
        // A forgotten close() must not keep the jest worker alive; the exit hook still kills it.
        child.unref();
        child.channel?.unref();
        resolve({ child, port: message.port });
      } else if (message.type === 'error') {
        fail(Object.assign(new Error(message.message), { code: message.code }));
      }
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Starts the server process; on a fixed port, retries briefly while the old socket is released. */
export async function spawnServer(port: number, rules: object | undefined) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnOnce(port, rules);
    } catch (error) {
      const inUse = (error as { code?: string }).code === 'EADDRINUSE';
      if (!inUse || port === 0 || attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}

export async function killServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/** Whether the kernel reports the process stopped (Linux /proc); undefined where unknown. */
function isStopped(pid: number): boolean | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'T' || state === 't';
  } catch {
    return undefined;
  }
}

/** Sends SIGSTOP/SIGCONT and waits until the kernel has applied it, so a test's next step sees the new state. */
export async function signalAndWait(child: ChildProcess, signal: 'SIGSTOP' | 'SIGCONT'): Promise<void> {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) {
    throw new Error('RTDB test server is not running');
  }
  child.kill(signal);
  const wanted = signal === 'SIGSTOP';
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const stopped = isStopped(pid);
    if (stopped === undefined || stopped === wanted) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`RTDB test server did not ${wanted ? 'stop' : 'continue'} after ${signal}`);
}
