import path from 'node:path';
import { forkWorker } from '../forked-worker';
import type { AppWorkerReply, AppWorkerRequest } from './protocol';

const ENTRY = path.join(__dirname, 'worker.ts');

/** A firelimit app in its own OS process, listening on `port`. */
export interface AppWorker {
  readonly port: number;
  /** Closes the server, then the service (limiters, token store, firebase), then waits for the process to exit. */
  close(): Promise<void>;
}

/** Forks a worker whose firebase-admin talks to `emulatorHost`, and waits until it listens. */
export async function startAppWorker(
  emulatorHost: string,
  init: Omit<Extract<AppWorkerRequest, { type: 'init' }>, 'type'>,
): Promise<AppWorker> {
  const worker = forkWorker<AppWorkerRequest, AppWorkerReply>(ENTRY, { FIREBASE_DATABASE_EMULATOR_HOST: emulatorHost }, 'app worker');
  let ready: AppWorkerReply;
  try {
    ready = await worker.ask({ type: 'init', ...init });
  } catch (error) {
    await worker.kill();
    throw error;
  }
  if (ready.type !== 'ready') {
    await worker.kill();
    throw new Error(`app worker: unexpected reply ${ready.type}`);
  }
  return { port: ready.port, close: () => worker.close({ type: 'close' }) };
}
