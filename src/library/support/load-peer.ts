/**
 * Loads a store's backend module, whose client is an optional peer dependency
 * of firelimit. When the peer is not installed, the error names the package
 * and the command that installs it, not a bare MODULE_NOT_FOUND.
 */
export async function loadPeer<T>(load: () => Promise<T>, peer: string, factory: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && String((error as Error).message).includes(`'${peer}'`)) {
      throw new Error(`${factory} needs the "${peer}" package, an optional peer dependency of firelimit: npm install ${peer}`, { cause: error });
    }
    throw error;
  }
}
