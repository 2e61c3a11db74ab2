import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AppWorkerReply, AppWorkerRequest } from './protocol';

const ENTRY = path.join(__dirname, 'worker.ts');
const REPLY_TIMEOUT_MS = 45_000;

/** A firelimit app in its own OS process, listening on `port`. */
export interface AppWorker {
  readonly port: number;
  /** Closes the server, the limiter and firebase, then waits for the process to exit. */
  close(): Promise<void>;
}

/** Forks a worker whose firebase-admin talks to `emulatorHost`, and waits until it listens. */
export async function startAppWorker(
  emulatorHost: string,
  init: Omit<Extract<AppWorkerRequest, { type: 'init' }>, 'type'>,
): Promise<AppWorker> {
  // `node --import tsx` runs the TypeScript worker in this very child (the tsx CLI would add a grandchild).
  // Not `--require tsx/cjs`: that hook leaves dynamic import() (createRateLimiter loads stores that way) to plain Node.
  const child: ChildProcess = fork(ENTRY, [], {
    execArgv: ['--import', pathToFileURL(require.resolve('tsx')).href],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, FIREBASE_DATABASE_EMULATOR_HOST: emulatorHost },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const ask = (request: AppWorkerRequest): Promise<AppWorkerReply> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`app worker ${child.pid}: no reply to ${request.type}`)), REPLY_TIMEOUT_MS);
      const onMessage = (message: AppWorkerReply) => finish(undefined, message);
      const onExit = (code: number | null) => finish(new Error(`app worker ${child.pid} exited (${code}) during ${request.type}`));
      function finish(error?: Error, message?: AppWorkerReply): void {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        if (error !== undefined) reject(error);
        else if (message?.type === 'error') reject(new Error(`app worker ${child.pid}: ${message.message}`));
        else resolve(message as AppWorkerReply);
      }
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send(request);
    });

  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  let ready: AppWorkerReply;
  try {
    ready = await ask({ type: 'init', ...init });
  } catch (error) {
    await kill();
    throw error;
  }
  if (ready.type !== 'ready') {
    await kill();
    throw new Error(`app worker: unexpected reply ${ready.type}`);
  }
  return {
    port: ready.port,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        await ask({ type: 'close' });
      } finally {
        if (child.connected) child.disconnect();
        await exited;
      }
    },
  };
}
