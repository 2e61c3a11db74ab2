/**
 * One firelimit instance in its own OS process, built as the service builds
 * itself: buildService on a config loaded from the test's knobs, with the
 * rtdb backend (its own firebase-admin app, on the emulator named by
 * FIREBASE_DATABASE_EMULATOR_HOST in this process's env) and the real auth
 * middleware on the shared file token store. Listens on 127.0.0.1 port 0 and
 * reports the port over IPC.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../../src/config/config';
import { buildService, type Service } from '../../../src/service/build-service';
import { silentLogger } from '../../../src/shared/logger';
import type { AppWorkerReply, AppWorkerRequest } from './protocol';

let service: Service | undefined;
let server: Server | undefined;

async function init(request: Extract<AppWorkerRequest, { type: 'init' }>): Promise<number> {
  const config = loadConfig({
    ...request.env,
    RATE_LIMIT_BACKEND: 'rtdb',
    FIREBASE_DATABASE_URL: request.databaseUrl,
    FIREBASE_DATABASE_EMULATOR_HOST: process.env.FIREBASE_DATABASE_EMULATOR_HOST,
    TOKENS_FILE: request.tokensFile,
  });
  // Every process decides in the same window, whatever the wall clock says.
  const clock = () => request.nowMs;
  // buildService waits for the database connection before it returns: the test sends nothing before 'ready'.
  service = await buildService(config, { logger: silentLogger, clock });
  const listening = service.app.listen(0, '127.0.0.1');
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
  await service?.release();
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
