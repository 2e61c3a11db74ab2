import type { App } from 'firebase-admin/app';
import type { Config } from '../config/config';
import { createMemoryStore, createRedisStore, createRtdbStore, createSqliteStore, type LimitStore, type Logger } from '../library';

export interface LimitStoreSpec {
  /** RTDB root path, Redis key prefix suffix and SQLite namespace: each limiter counts in its own key space. */
  readonly namespace: string;
  readonly logger: Logger;
  /** The RTDB sweeper judges expiry by the same clock the decisions use. */
  readonly clock?: () => number;
}

/**
 * The one backend switch: the store behind a limiter, from
 * `config.rateLimit.backend`. A new store is one folder in src/library/backends
 * plus one case here. Each backend's client is loaded only when chosen, so the
 * memory backend never pays for firebase-admin's database client or redis.
 */
export async function createLimitStore(config: Config, firebaseApp: App | undefined, spec: LimitStoreSpec): Promise<LimitStore> {
  switch (config.rateLimit.backend) {
    case 'memory':
      return createMemoryStore();
    case 'rtdb': {
      const { getDatabase, getDatabaseWithUrl } = await import('firebase-admin/database');
      const urls = config.firebase.databaseUrls;
      const common = { rootPath: spec.namespace, clock: spec.clock, logger: spec.logger };
      if (urls.length <= 1) return createRtdbStore({ ...common, database: getDatabase(firebaseApp) });
      // One store per database, each with its own connection and sweeper; the rules file is deployed to each.
      return createRtdbStore({ ...common, databases: urls.map((url) => ({ id: url, database: getDatabaseWithUrl(url, firebaseApp) })) });
    }
    case 'redis': {
      // loadConfig refuses to boot the redis backend without a URL; this only narrows the type.
      if (config.redis.url === undefined) throw new TypeError('redis backend without a URL');
      return createRedisStore({
        url: config.redis.url,
        mode: config.redis.mode,
        ...(config.redis.tlsCaFile !== undefined ? { tlsCaFile: config.redis.tlsCaFile } : {}),
        keyPrefix: `${config.redis.keyPrefix}${spec.namespace}:`,
        // One deadline: the store gives up on a command when the guard stops waiting for it.
        commandTimeoutMs: config.rateLimit.timeoutMs,
        logger: spec.logger,
      });
    }
    case 'sqlite': {
      // loadConfig refused to boot on a runtime without node:sqlite; the constructor refuses again with the same remedy.
      return createSqliteStore({
        path: config.sqlite.path,
        namespace: spec.namespace,
        // One deadline: the busy timeout is how long a decision waits for another process's lock.
        timeoutMs: config.rateLimit.timeoutMs,
        ...(spec.clock !== undefined ? { clock: spec.clock } : {}),
        logger: spec.logger,
      });
    }
  }
}
