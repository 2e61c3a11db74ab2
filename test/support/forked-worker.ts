import { fork, type ChildProcess } from 'node:child_process';
import { pathToFileURL } from 'node:url';

const REPLY_TIMEOUT_MS = 45_000;

/** A TypeScript module running in its own OS process, spoken to by request/reply over IPC. */
export interface ForkedWorker<Request, Reply> {
  readonly child: ChildProcess;
  /** Sends one request and waits for the next message; a `{ type: 'error' }` reply rejects. */
  ask(request: Request): Promise<Reply>;
  /** Asks the worker to close (`closeRequest`), then waits for the process to exit. */
  close(closeRequest: Request): Promise<void>;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
}

/**
 * Forks `entry` with tsx as loader hooks in that very child (the tsx CLI would
 * add a grandchild that signals never reach). Both hooks: createRateLimiter
 * loads its stores with a dynamic import(), which only the ESM hook serves.
 */
export function forkWorker<Request, Reply extends { type: string }>(
  entry: string,
  env: NodeJS.ProcessEnv,
  label: string,
): ForkedWorker<Request, Reply> {
  const child = fork(entry, [], {
    execArgv: ['--require', require.resolve('tsx/cjs'), '--import', pathToFileURL(require.resolve('tsx/esm')).href],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...env },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;

  const ask = (request: Request): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const what = (request as { type?: string }).type ?? 'request';
      const timer = setTimeout(() => finish(new Error(`${label} ${child.pid}: no reply to ${what}`)), REPLY_TIMEOUT_MS);
      const onMessage = (message: Reply) => finish(undefined, message);
      const onExit = (code: number | null) => finish(new Error(`${label} ${child.pid} exited (${code}) during ${what}`));
      function finish(error?: Error, message?: Reply): void {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        if (error !== undefined) reject(error);
        else if (message?.type === 'error') reject(new Error(`${label} ${child.pid}: ${(message as { message?: string }).message}`));
        else resolve(message as Reply);
      }
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send(request as object);
    });

  return {
    child,
    ask,
    async close(closeRequest) {
      if (!running()) return;
      try {
        await ask(closeRequest);
      } finally {
        if (child.connected) child.disconnect();
        await exited;
      }
    },
    async kill() {
      if (running()) child.kill('SIGKILL');
      await exited;
    },
  };
}
