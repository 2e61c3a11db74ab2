import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { freePort, redisServerArgs, redisServerBinary, serverPidOf, spawnWrapped } from './redis-process';

/**
 * A real redis-server (the Debian package) on a free loopback port, for tests
 * and the bench. Nothing is persisted.
 *
 * The server runs under a tiny shell that holds our stdin: when this process
 * dies, however it dies (even SIGKILL, where no 'exit' handler runs), the pipe
 * closes and the shell kills the server. The shell reports the server's pid so
 * suspend/resume signal the server itself.
 */

export interface RedisServerOptions {
  /** Adds --requirepass; the URL then carries it as `redis://:PASSWORD@...`. */
  readonly password?: string;
  /** Default /usr/bin/redis-server, or REDIS_SERVER_BIN. */
  readonly binary?: string;
  /** Default 10000. */
  readonly startTimeoutMs?: number;
}

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Kills the server; the port is free when this resolves. */
  stop(): Promise<void>;
  /** Starts a fresh (empty) server on the same port, stopping the old one first if it still runs. */
  restart(): Promise<void>;
  /** SIGSTOP: connections stay open, nothing answers. */
  suspend(): void;
  /** SIGCONT. */
  resume(): void;
  /** Stops for good; safe to call twice. */
  close(): Promise<void>;
}

interface Running {
  readonly shell: ChildProcess;
  readonly serverPid: number;
  readonly exited: Promise<void>;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const binary = options.binary ?? redisServerBinary();
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;

  let lastError: unknown;
  // A free port can be taken between our probe and the server's bind; try a few.
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    try {
      const first = await launch(binary, port, options.password, startTimeoutMs);
      return handle(first, port, binary, options.password, startTimeoutMs);
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

function handle(first: Running, port: number, binary: string, password: string | undefined, startTimeoutMs: number): RedisServer {
  let running: Running | undefined = first;
  let closed = false;
  const auth = password === undefined ? '' : `:${encodeURIComponent(password)}@`;

  const stop = async (): Promise<void> => {
    const current = running;
    running = undefined;
    if (current === undefined) return;
    // Closing stdin is the shell's cue: SIGKILL the server, reap it, exit. Ref'd again
    // meanwhile, or an otherwise idle process would quit before the exit arrives.
    current.shell.ref();
    current.shell.stdin?.end();
    await current.exited;
  };

  return {
    url: `redis://${auth}127.0.0.1:${port}`,
    port,
    stop,
    async restart() {
      if (closed) throw new Error('redis-server handle is closed');
      await stop();
      running = await launch(binary, port, password, startTimeoutMs);
    },
    suspend() {
      if (running !== undefined) process.kill(running.serverPid, 'SIGSTOP');
    },
    resume() {
      if (running !== undefined) process.kill(running.serverPid, 'SIGCONT');
    },
    async close() {
      closed = true;
      await stop();
    },
  };
}

async function launch(binary: string, port: number, password: string | undefined, startTimeoutMs: number): Promise<Running> {
  const args = redisServerArgs(port);
  if (password !== undefined) args.push('--requirepass', password);
  const shell = spawnWrapped(binary, args, 'pipe');

  let log = '';
  shell.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => {
    shell.once('exit', () => resolve());
  });

  try {
    const serverPid = await serverPidOf(shell, exited, startTimeoutMs);
    await waitForPing(port, exited, startTimeoutMs);
    // Unref'd once up (not before: the wait itself needs the loop alive), so a forgotten
    // handle never keeps a process alive; the stdin trick still takes the server down.
    shell.unref();
    for (const stream of [shell.stdin, shell.stdout, shell.stderr]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
    return { shell, serverPid, exited };
  } catch (error) {
    shell.stdin?.end();
    await exited;
    throw new Error(`redis-server on port ${port} did not start: ${(error as Error).message}\n${log}`);
  }
}

/** Ready means it answers PING; a NOAUTH error is an answer too (the server is up, we just have no password). */
async function waitForPing(port: number, exited: Promise<void>, timeoutMs: number): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (gone) throw new Error('redis-server exited before answering PING');
    if (await pingOnce(port)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no PING reply within ${timeoutMs} ms`);
}

function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('*1\r\n$4\r\nPING\r\n'));
    socket.once('data', (chunk) => {
      const reply = chunk.toString('utf8');
      done(reply.startsWith('+PONG') || reply.startsWith('-NOAUTH'));
    });
  });
}
