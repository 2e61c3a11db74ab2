/**
 * One firelimit instance in its own OS process: the real app from createApp,
 * a limiter from createRateLimiter({ backend: 'rtdb' }) on its own
 * firebase-admin app, and the real auth middleware on the shared file token
 * store. Listens on 127.0.0.1 port 0 and reports the port over IPC.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deleteApp, initializeApp, type App } from 'firebase-admin/app';
import { getDatabase } from 'firebase-admin/database';
import { loadConfig } from '../../../src/config/config';
import { createApp } from '../../../src/service/create-app';
import { createRateLimiter } from '../../../src/limiter/create-rate-limiter';
import type { RateLimiter } from '../../../src/limiter/rate-limiter';
import { silentLogger } from '../../../src/shared/logger';
import { buildRealAuth, type RealAuth } from '../real-auth';
import type { AppWorkerReply, AppWorkerRequest } from './protocol';

let firebase: App | undefined;
let limiter: RateLimiter | undefined;
let auth: RealAuth | undefined;
let server: Server | undefined;

async function init(request: Extract<AppWorkerRequest, { type: 'init' }>): Promise<number> {
  const config = loadConfig({
    ...request.env,
    RATE_LIMIT_BACKEND: 'rtdb',
    FIREBASE_DATABASE_URL: request.databaseUrl,
    TOKENS_FILE: request.tokensFile,
  });
  firebase = initializeApp({ projectId: 'demo-firelimit', databaseURL: request.databaseUrl }, `app-worker-${process.pid}`);
  const database = getDatabase(firebase);
  // Open the connection before the test starts sending.
  await database.ref('.info/serverTimeOffset').get();
  const clock = () => request.nowMs;
  limiter = await createRateLimiter({
    backend: 'rtdb',
    policies: config.rateLimit.defaultTier.policies,
    timeoutMs: config.rateLimit.timeoutMs,
    failurePolicy: config.rateLimit.failurePolicy,
    clock,
    rtdb: { database },
  });
  auth = await buildRealAuth(config, silentLogger);
  const app = createApp({ config, limiter, logger: silentLogger, authMiddleware: auth.authMiddleware, clock });
  const listening = app.listen(0, '127.0.0.1');
  server = listening;
  await new Promise<void>((resolve, reject) => {
    listening.once('listening', resolve);
    listening.once('error', reject);
  });
  return (listening.address() as AddressInfo).port;
}

async function close(): Promise<void> {
  const current = server;
  if (current !== undefined) {
    current.closeAllConnections();
    await new Promise<void>((resolve) => current.close(() => resolve()));
  }
  await limiter?.close();
  await auth?.close();
  if (firebase !== undefined) await deleteApp(firebase);
}

function reply(message: AppWorkerReply): void {
  process.send?.(message);
}

process.on('message', (raw) => {
  const request = raw as AppWorkerRequest;
  const work: Promise<AppWorkerReply> =
    request.type === 'init'
      ? init(request).then((port) => ({ type: 'ready', port }))
      : close().then(() => ({ type: 'closed' }));
  work.then(reply, (error: unknown) => reply({ type: 'error', message: String(error) }));
});

// The test going away (even killed) closes the IPC channel: never outlive it.
process.on('disconnect', () => process.exit(0));
