import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { WorkerDecision, WorkerReply, WorkerRequest } from './protocol';

export type { WorkerDecision } from './protocol';

const ENTRY = path.join(__dirname, 'worker.ts');
const REPLY_TIMEOUT_MS = 45_000;

/** A limiter in its own OS process; each call waits for that process's answer. */
export interface LimiterWorker {
  init(request: Omit<Extract<WorkerRequest, { type: 'init' }>, 'type'>): Promise<void>;
  run(key: string, count: number, batch: number): Promise<WorkerDecision[]>;
  /** Closes the limiter and the app, then waits for the process to exit. */
  close(): Promise<void>;
}

/** Forks a worker whose firebase-admin talks to `emulatorHost`. */
export function startLimiterWorker(emulatorHost: string): LimiterWorker {
  // tsx as loader hooks, not the tsx CLI (which would add a grandchild). Both hooks: the
  // limiter loads its RTDB store with a dynamic import(), which only the ESM hook serves.
  const child: ChildProcess = fork(ENTRY, [], {
    execArgv: ['--require', require.resolve('tsx/cjs'), '--import', pathToFileURL(require.resolve('tsx/esm')).href],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, FIREBASE_DATABASE_EMULATOR_HOST: emulatorHost },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const ask = (request: WorkerRequest): Promise<WorkerReply> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`limiter worker ${child.pid}: no reply to ${request.type}`)), REPLY_TIMEOUT_MS);
      const onMessage = (message: WorkerReply) => finish(undefined, message);
      const onExit = (code: number | null) => finish(new Error(`limiter worker ${child.pid} exited (${code}) during ${request.type}`));
      function finish(error?: Error, message?: WorkerReply): void {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        if (error !== undefined) reject(error);
        else if (message?.type === 'error') reject(new Error(`limiter worker ${child.pid}: ${message.message}`));
        else resolve(message as WorkerReply);
      }
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send(request);
    });

  return {
    async init(request) {
      await ask({ type: 'init', ...request });
    },
    async run(key, count, batch) {
      const answer = await ask({ type: 'run', key, count, batch });
      if (answer.type !== 'decisions') throw new Error(`limiter worker: unexpected reply ${answer.type}`);
      return answer.decisions;
    },
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
