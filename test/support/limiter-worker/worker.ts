/**
 * A separate OS process holding its own firebase-admin app and its own
 * limiter over an RtdbWindowStore, driven over IPC by a
 * test. Stands in for one Cloud Run instance.
 *
 * The parent sets FIREBASE_DATABASE_EMULATOR_HOST in this process's
 * environment, which is how firebase-admin finds the test server.
 */
import { RtdbWindowStore } from '../../../src/library/backends/rtdb/rtdb-store';
import { deleteApp, initializeApp, type App } from 'firebase-admin/app';
import { getDatabase } from 'firebase-admin/database';
import { createRateLimiter } from '../../../src/library/limiter/create-rate-limiter';
import type { RateLimiter } from '../../../src/library/limiter/rate-limiter';
import type { WorkerDecision, WorkerReply, WorkerRequest } from './protocol';

let app: App | undefined;
let limiter: RateLimiter | undefined;

function reply(message: WorkerReply): void {
  process.send?.(message);
}

async function init(request: Extract<WorkerRequest, { type: 'init' }>): Promise<void> {
  app = initializeApp({ projectId: 'demo-firelimit', databaseURL: request.databaseUrl }, `worker-${process.pid}`);
  const database = getDatabase(app);
  // Open the connection before the test starts timing anything.
  await database.ref('.info/serverTimeOffset').get();
  limiter = await createRateLimiter({
    store: new RtdbWindowStore({ database, rootPath: request.rootPath, clock: () => request.nowMs }),
    policy: request.policy,
    timeoutMs: request.timeoutMs,
    clock: () => request.nowMs,
  });
}

async function run(request: Extract<WorkerRequest, { type: 'run' }>): Promise<WorkerDecision[]> {
  const current = limiter;
  if (current === undefined) throw new Error('worker: run before init');
  const decisions: WorkerDecision[] = [];
  for (let done = 0; done < request.count; done += request.batch) {
    const size = Math.min(request.batch, request.count - done);
    const batch = await Promise.all(Array.from({ length: size }, () => current.consume(request.key)));
    for (const d of batch) decisions.push({ allowed: d.allowed, shared: d.shared, reason: d.reason, remaining: d.remaining });
  }
  return decisions;
}

async function close(): Promise<void> {
  await limiter?.close();
  if (app !== undefined) await deleteApp(app);
}

process.on('message', (raw) => {
  const request = raw as WorkerRequest;
  const work: Promise<WorkerReply> =
    request.type === 'init'
      ? init(request).then(() => ({ type: 'ready' }))
      : request.type === 'run'
        ? run(request).then((decisions) => ({ type: 'decisions', decisions }))
        : close().then(() => ({ type: 'closed' }));
  work.then(reply, (error: unknown) => reply({ type: 'error', message: String(error) }));
});

// The test going away (even killed) closes the IPC channel: never outlive it.
process.on('disconnect', () => process.exit(0));
