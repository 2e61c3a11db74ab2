import { acquireTokenFileLock } from '../../src/tokens/token-file-lock';

/**
 * A writer in its own process that takes a token file's lock, says so, and
 * then holds it until it is killed: the crashed CLI of the lock tests.
 * The lock path comes in LOCK_PATH.
 */
async function main(): Promise<void> {
  const lockPath = process.env.LOCK_PATH;
  if (lockPath === undefined) throw new Error('LOCK_PATH is not set');
  await acquireTokenFileLock(lockPath);
  process.send?.({ type: 'locked', pid: process.pid });
  // Held until SIGKILL; the IPC channel keeps the process alive.
}

main().catch((error: unknown) => {
  process.send?.({ type: 'error', message: error instanceof Error ? error.message : String(error) });
});
