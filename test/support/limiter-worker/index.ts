import path from 'node:path';
import { forkWorker } from '../forked-worker';
import type { WorkerDecision, WorkerReply, WorkerRequest } from './protocol';

export type { WorkerDecision } from './protocol';

const ENTRY = path.join(__dirname, 'worker.ts');

/** A limiter in its own OS process; each call waits for that process's answer. */
export interface LimiterWorker {
  init(request: Omit<Extract<WorkerRequest, { type: 'init' }>, 'type'>): Promise<void>;
  run(key: string, count: number, batch: number): Promise<WorkerDecision[]>;
  /** Closes the limiter and the app, then waits for the process to exit. */
  close(): Promise<void>;
}

/** Forks a worker whose firebase-admin talks to `emulatorHost`. */
export function startLimiterWorker(emulatorHost: string): LimiterWorker {
  const worker = forkWorker<WorkerRequest, WorkerReply>(ENTRY, { FIREBASE_DATABASE_EMULATOR_HOST: emulatorHost }, 'limiter worker');
  return {
    async init(request) {
      await worker.ask({ type: 'init', ...request });
    },
    async run(key, count, batch) {
      const answer = await worker.ask({ type: 'run', key, count, batch });
      if (answer.type !== 'decisions') throw new Error(`limiter worker: unexpected reply ${answer.type}`);
      return answer.decisions;
    },
    close: () => worker.close({ type: 'close' }),
  };
}
