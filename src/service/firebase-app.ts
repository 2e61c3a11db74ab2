import { randomUUID } from 'node:crypto';
import { deleteApp, initializeApp, type App } from 'firebase-admin/app';
import type { Config } from '../config/config';

/** Whether anything in this configuration talks to Firebase. */
export function needsFirebase(config: Config): boolean {
  return config.rateLimit.backend === 'rtdb' || config.tokens.store === 'firestore';
}

/**
 * One firebase-admin app for the service. On Cloud Run credentials come from
 * the service account (application default credentials); with
 * FIREBASE_DATABASE_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST set,
 * firebase-admin talks to the emulators without any.
 */
export function createFirebaseApp(config: Config): App {
  const projectId =
    config.firebase.projectId ??
    (config.firebase.databaseEmulatorHost !== undefined || config.firebase.firestoreEmulatorHost !== undefined
      ? 'demo-firelimit'
      : undefined);
  // A unique name: tests build several services in one process.
  return initializeApp(
    {
      ...(config.firebase.databaseUrl !== undefined && { databaseURL: config.firebase.databaseUrl }),
      ...(projectId !== undefined && { projectId }),
    },
    `firelimit-${randomUUID()}`,
  );
}

export async function closeFirebaseApp(app: App): Promise<void> {
  // Closes the database websocket and Firestore channels; without it the process never exits.
  await deleteApp(app);
}
