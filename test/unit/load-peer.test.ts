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

describe('loadPeer: what counts as the peer missing', () => {
  const notFound = (code: string, message: string) => Object.assign(new Error(message), { code });
  test.each([
    ['CommonJS MODULE_NOT_FOUND naming the peer', notFound('MODULE_NOT_FOUND', "Cannot find module 'redis'"), true],
    ['ESM ERR_MODULE_NOT_FOUND naming the peer', notFound('ERR_MODULE_NOT_FOUND', "Cannot find package 'redis' imported from x"), true],
    ['not found, but another module', notFound('MODULE_NOT_FOUND', "Cannot find module '@redis/client'"), false],
    ['the peer named, but another failure', notFound('ERR_REQUIRE_ESM', "require() of ES Module 'redis'"), false],
    ['no code at all', new Error("Cannot find module 'redis'"), false],
  ])('%s', async (_name, error, named) => {
    const loading = loadPeer(() => Promise.reject(error), 'redis', 'createRedisStore');
    if (named) await expect(loading).rejects.toThrow('createRedisStore needs the "redis" package, an optional peer dependency of firelimit: npm install redis');
    else await expect(loading).rejects.toBe(error);
  });

  test('the remedy keeps the original error as its cause', async () => {
    const error = notFound('MODULE_NOT_FOUND', "Cannot find module 'redis'");
    await expect(loadPeer(() => Promise.reject(error), 'redis', 'createRedisStore')).rejects.toMatchObject({ cause: error });
  });
});
