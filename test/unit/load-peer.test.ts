import { loadPeer } from '../../src/library/support/load-peer';

// A name in a variable, so TypeScript does not look for it and the import fails as a missing package does.
const NO_SUCH_PACKAGE: string = 'firelimit-no-such-peer-package';

describe('loadPeer (a store whose backend package is an optional peer)', () => {
  test('a missing peer is named with the command that installs it', async () => {
    const missing = (): Promise<unknown> => import(NO_SUCH_PACKAGE);
    await expect(loadPeer(missing, 'firelimit-no-such-peer-package', 'createThing')).rejects.toThrow(
      'createThing needs the "firelimit-no-such-peer-package" package, an optional peer dependency of firelimit: npm install firelimit-no-such-peer-package',
    );
  });

  test('a module that is missing something else of its own keeps its own error', async () => {
    const broken = (): Promise<unknown> => import(NO_SUCH_PACKAGE);
    await expect(loadPeer(broken, 'redis', 'createRedisStore')).rejects.toThrow(/firelimit-no-such-peer-package/);
    await expect(loadPeer(broken, 'redis', 'createRedisStore')).rejects.not.toThrow(/npm install redis/);
  });

  test('any other failure is passed through unchanged', async () => {
    const failure = new Error('boom');
    await expect(loadPeer(() => Promise.reject(failure), 'redis', 'createRedisStore')).rejects.toBe(failure);
  });

  test('a loaded module is returned as it is', async () => {
    const module = { createClient: () => 'client' };
    await expect(loadPeer(() => Promise.resolve(module), 'redis', 'createRedisStore')).resolves.toBe(module);
  });
});
