import { randomBytes } from 'node:crypto';
import { deleteApp, initializeApp, type App, type AppOptions } from 'firebase-admin/app';
import { getDatabase } from 'firebase-admin/database';
import { SELF_SET_HOST_VAR, type RtdbTestServer } from './index';

/**
 * A firebase-admin app on `server`, in emulator mode (no credentials, token
 * "owner").
 *
 * Side effect: firebase-admin only uses emulator mode when
 * FIREBASE_DATABASE_EMULATOR_HOST is set, so when it is unset this sets it to
 * `server.host` for the rest of the process (jest keeps process.env per test
 * file). When it is already set to another host (a second server in the same
 * file), the database instance is created here, under a temporarily swapped
 * variable, and firebase-admin keeps using that instance for this app.
 *
 * authOverride: undefined = the admin (bypasses rules); null = unauthenticated;
 * an object = that user (e.g. `{uid: 'u1'}`), rules apply.
 */
export function createAdminApp(server: RtdbTestServer, options: { authOverride?: object | null } = {}): App {
  const appOptions: AppOptions = { projectId: 'demo-firelimit', databaseURL: server.databaseUrl };
  if (options.authOverride !== undefined) appOptions.databaseAuthVariableOverride = options.authOverride;
  const app = initializeApp(appOptions, `rtdb-test-${randomBytes(6).toString('hex')}`);

  const previous = process.env.FIREBASE_DATABASE_EMULATOR_HOST;
  if (previous === undefined) {
    process.env.FIREBASE_DATABASE_EMULATOR_HOST = server.host;
    process.env[SELF_SET_HOST_VAR] = server.host;
  }
  if (previous === undefined || previous === server.host) {
    getDatabase(app);
    return app;
  }
  process.env.FIREBASE_DATABASE_EMULATOR_HOST = server.host;
  try {
    getDatabase(app);
  } finally {
    process.env.FIREBASE_DATABASE_EMULATOR_HOST = previous;
  }
  return app;
}

/** Deletes the app, which closes its database connection so jest can exit. */
export async function deleteAdminApp(app: App): Promise<void> {
  await deleteApp(app);
}
