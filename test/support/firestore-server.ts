/**
 * A Firestore server for tests. When FIRESTORE_EMULATOR_HOST is set (the
 * official emulator under `npm run test:emulators`) that one is used;
 * otherwise `@firestore-emulator/server` (a gRPC implementation in Node) is
 * started in this process on a free port and FIRESTORE_EMULATOR_HOST is set
 * to it, which is how firebase-admin finds either.
 *
 * Known defects of @firestore-emulator/server, which tests must not rely on:
 * concurrent transactions lose updates, set() without merge merges,
 * FieldValue.delete() is ignored.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { deleteApp, initializeApp, type App } from 'firebase-admin/app';
import { getFirestore, type Firestore } from 'firebase-admin/firestore';

/** firebase.json runs the emulator in single-project mode with this id. */
export const TEST_PROJECT_ID = 'demo-firelimit';

export interface FirestoreTestServer {
  /** "127.0.0.1:<port>" */
  readonly host: string;
  /** True when this is an emulator someone else started (we do not stop it). */
  readonly external: boolean;
  close(): Promise<void>;
}

interface GrpcServer {
  bindAsync(address: string, credentials: unknown, callback: (error: Error | null, port: number) => void): void;
}

export async function startFirestoreTestServer(): Promise<FirestoreTestServer> {
  // Without a project in the environment, google-auth-library probes the GCE
  // metadata server (a link-local address) while building the Firestore stub,
  // even in emulator mode. Tests must only ever talk to loopback.
  process.env.GOOGLE_CLOUD_PROJECT ??= TEST_PROJECT_ID;
  const existing = process.env.FIRESTORE_EMULATOR_HOST;
  if (existing !== undefined && existing !== '') {
    return { host: existing, external: true, close: async () => undefined };
  }
  const { FirestoreServer } = await import('@firestore-emulator/server');
  // The server's own copy of grpc-js (it pins a version): credentials from another copy fail its instanceof check.
  const serverRequire = createRequire(require.resolve('@firestore-emulator/server'));
  const { ServerCredentials } = serverRequire('@grpc/grpc-js') as typeof import('@grpc/grpc-js');
  const server = new FirestoreServer();
  // start(port) binds 0.0.0.0 and does not report the port it got; bind the
  // same gRPC server ourselves on loopback, port 0, to avoid racing for a port.
  const grpc = (server as unknown as { server: GrpcServer }).server;
  const port = await new Promise<number>((resolve, reject) => {
    grpc.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound)));
  });
  const host = `127.0.0.1:${port}`;
  process.env.FIRESTORE_EMULATOR_HOST = host;
  return {
    host,
    external: false,
    close: async () => {
      server.stop();
      if (process.env.FIRESTORE_EMULATOR_HOST === host) delete process.env.FIRESTORE_EMULATOR_HOST;
    },
  };
}

export interface FirestoreTestApp {
  readonly app: App;
  readonly firestore: Firestore;
  close(): Promise<void>;
}

/** A firebase-admin App on the test server (emulator mode: no credentials). */
export function createFirestoreTestApp(): FirestoreTestApp {
  const app = initializeApp({ projectId: TEST_PROJECT_ID }, `firestore-test-${randomBytes(6).toString('hex')}`);
  const firestore = getFirestore(app);
  return { app, firestore, close: () => deleteApp(app) };
}

/** A collection name no other test run uses, so suites sharing one emulator never see each other's documents. */
export function uniqueCollection(prefix = 'apiTokens'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}
