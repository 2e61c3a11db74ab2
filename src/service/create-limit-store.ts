import type { App } from 'firebase-admin/app';
import type { Config } from '../config/config';
import type { LimitStore } from '../limiter/limit-store';
import { MemoryWindowStore } from '../limiter/stores/memory-store';
import type { Logger } from '../shared/logger';

export interface LimitStoreSpec {
  /** RTDB root path, Redis key prefix suffix and SQLite namespace: each limiter counts in its own key space. */
  readonly namespace: string;
  readonly logger: Logger;
  /** The RTDB sweeper judges expiry by the same clock the decisions use. */
  readonly clock?: () => number;
}

/**
 * The one place a backend is chosen: the store behind a limiter, from
 * `config.rateLimit.backend`. Loaded only when chosen, so the memory backend
 * never pays for firebase-admin's database client or the redis package.
 */
export async function createLimitStore(config: Config, firebaseApp: App | undefined, spec: LimitStoreSpec): Promise<LimitStore> {
  switch (config.rateLimit.backend) {
    case 'memory':
      return new MemoryWindowStore();
    case 'rtdb': {
      const [{ getDatabase, getDatabaseWithUrl }, { RtdbWindowStore }, { ShardedLimitStore }] = await Promise.all([
        import('firebase-admin/database'),
        import('../limiter/stores/rtdb-store'),
        import('../limiter/stores/sharded-store'),
      ]);
      const urls = config.firebase.databaseUrls;
      if (urls.length <= 1) return new RtdbWindowStore({ database: getDatabase(firebaseApp), rootPath: spec.namespace, clock: spec.clock, logger: spec.logger });
      // One store per database, each with its own connection and sweeper; the rules file is deployed to each.
      return new ShardedLimitStore(urls.map((url) => ({
        id: url,
        store: new RtdbWindowStore({ database: getDatabaseWithUrl(url, firebaseApp), rootPath: spec.namespace, clock: spec.clock, logger: spec.logger }),
      })));
    }
    case 'redis': {
      // loadConfig refuses to boot the redis backend without a URL; this only narrows the type.
      if (config.redis.url === undefined) throw new TypeError('redis backend without a URL');
      const { RedisWindowStore } = await import('../limiter/stores/redis-store');
      return new RedisWindowStore({
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
      const { SqliteWindowStore } = await import('../library/backends/sqlite/sqlite-store');
      return new SqliteWindowStore({
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
