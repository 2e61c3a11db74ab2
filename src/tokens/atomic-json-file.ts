import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';

/**
 * Replaces `filePath` with `value` as pretty JSON, all or nothing: written to
 * a private temp file beside it (0600, never an existing one), synced, then
 * renamed over it. A crash leaves the old file or the new one, never half.
 */
export async function writeJsonFileAtomically(filePath: string, value: unknown): Promise<void> {
  const temp = `${filePath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(value, null, 2)}\n`, 'utf8');
    await handle.sync(); // the rename must never publish a file whose data is not on disk
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, filePath);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}
