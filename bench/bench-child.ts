import { fork, type ChildProcess, type Serializable } from 'node:child_process';
import type { Server } from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { printTable, type BenchTable } from './bench-table';

/** A bench server in a child process, spoken to over IPC. */
export interface BenchChild<R> {
  /** The child's first message: what it is ready with (its port, its secrets). */
  readonly ready: R;
  /** CPU time (user + system, µs) the child has used so far. */
  cpuUs(): Promise<number>;
  /** Sends `message` and resolves with the child's next message, its answer. */
  request<T>(message: Serializable): Promise<T>;
  /** Asks it to stop (so --cpu-prof can write its profile), killing it after 5 s. */
  stop(): Promise<void>;
}

/**
 * Forks `file` with tsx as its loader in the child itself (tsx's CLI would put
 * a grandchild process between us and the server) and waits for its first
 * message. The child answers 'cpu' with `{ cpuUs }` (and any other request
 * with one message) and exits on 'stop'.
 */
export async function startBenchChild<R>(
  file: string,
  args: readonly string[],
  options: {
    readonly name: string;
    readonly execArgv?: readonly string[];
    /** 'tsx' (default), or 'typescript': TypeScript's own CommonJS emit, the code `npm start` runs (typescript-emit.cjs). */
    readonly loader?: 'tsx' | 'typescript';
  },
): Promise<BenchChild<R>> {
  const loader = options.loader === 'typescript' ? ['--require', path.join(__dirname, 'typescript-emit.cjs')] : ['--import', pathToFileURL(require.resolve('tsx')).href];
  const child: ChildProcess = fork(file, args, {
    execArgv: [...loader, ...(options.execArgv ?? [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = await new Promise<R>((resolve, reject) => {
    child.once('message', (m: R) => resolve(m));
    child.once('exit', (code) => reject(new Error(`${options.name} exited (${code}) before it was ready`)));
  });
  const request = <T>(message: Serializable): Promise<T> =>
    new Promise<T>((resolve) => {
      child.once('message', (m: T) => resolve(m));
      child.send(message);
    });
  return {
    ready,
    cpuUs: () => request<{ cpuUs: number }>('cpu').then((m) => m.cpuUs),
    request,
    stop: async () => {
      if (child.connected) child.send('stop');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------- child side

/** The child's answer to 'cpu': its CPU time so far (user + system, µs). */
export function sendCpuUsage(): void {
  const { user, system } = process.cpuUsage();
  process.send?.({ cpuUs: user + system });
}

/**
 * The child side for a worker that answers requests (not an HTTP server):
 * each request message gets `run`'s report sent back, 'cpu' its CPU time,
 * and 'stop' runs `close` and exits, over IPC so --cpu-prof can write its
 * profile on a normal exit.
 */
export function serveBenchRequests<Request, Report extends Serializable>(run: (request: Request) => Promise<Report>, close: () => unknown = () => undefined): void {
  process.on('message', (message: Request | 'cpu' | 'stop') => {
    if (message === 'stop') {
      void Promise.resolve()
        .then(close)
        .finally(() => process.exit(0));
      return;
    }
    if (message === 'cpu') {
      sendCpuUsage();
      return;
    }
    void run(message).then((report) => process.send?.(report));
  });
}

/**
 * The child side for an HTTP server: listens on a free loopback port, sends
 * `ready(server)` once listening, answers 'cpu', and on 'stop' closes the
 * server, runs `cleanUp` and exits, over IPC rather than by a signal so
 * --cpu-prof can write its profile on a normal exit.
 */
export function serveAsBenchChild(
  app: { listen(port: number, host: string, callback: () => void): Server },
  ready: (server: Server) => Serializable,
  cleanUp: () => unknown = () => undefined,
): void {
  const server = app.listen(0, '127.0.0.1', () => {
    process.send?.(ready(server));
  });
  process.on('message', (message: 'cpu' | 'stop') => {
    if (message === 'cpu') {
      sendCpuUsage();
      return;
    }
    server.close(() => {
      void Promise.resolve()
        .then(cleanUp)
        .finally(() => process.exit(0));
    });
    server.closeAllConnections();
  });
}

/** A bench file's entry: `--serve NAME` makes it the child serving NAME, anything else runs the bench and prints its table. */
export function serveOrRun<N extends string>(serve: (name: N) => Promise<void>, run: () => Promise<BenchTable>): void {
  const at = process.argv.indexOf('--serve');
  if (at >= 0) {
    serve(process.argv[at + 1] as N).catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
  } else {
    run().then(printTable, (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
  }
}
