
/** Stable code for a REDIS_URL that cannot be used; the message never repeats the URL. */
export const INVALID_REDIS_URL = 'ERR_FIRELIMIT_INVALID_REDIS_URL';

export class InvalidRedisUrlError extends TypeError {
  readonly code = INVALID_REDIS_URL;
  override readonly name = 'InvalidRedisUrlError';
}

/** What the client needs, taken apart here so the client library never holds (or echoes) the URL string. */
export interface RedisConnectionTarget {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  readonly username?: string;
  readonly password?: string;
  readonly database?: number;
}

/**
 * Parses `redis://[user][:password]@host[:port][/db]` or `rediss://...`.
 * Errors name what is wrong and never include the URL: it may carry a password.
 */
export function parseRedisUrl(url: string): RedisConnectionTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidRedisUrlError('REDIS_URL is not a valid URL; expected redis://[:password@]host[:port][/db] or rediss://...');
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new InvalidRedisUrlError(`REDIS_URL must start with redis:// or rediss://, got ${JSON.stringify(parsed.protocol)}`);
  }
  if (parsed.hostname === '') throw new InvalidRedisUrlError('REDIS_URL has no host');
  const port = parsed.port === '' ? 6379 : Number(parsed.port);
  let database: number | undefined;
  if (parsed.pathname.length > 1) {
    database = Number(parsed.pathname.slice(1));
    if (!Number.isSafeInteger(database) || database < 0) {
      throw new InvalidRedisUrlError('REDIS_URL path must be a database number (/0, /1, ...)');
    }
  }
  return {
    // WHATWG keeps the brackets around an IPv6 literal; net.connect wants them off.
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port,
    tls: parsed.protocol === 'rediss:',
    ...(parsed.username !== '' ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password !== '' ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(database !== undefined ? { database } : {}),
  };
}

/** `standalone`: one server (or a primary behind one address). `cluster`: Redis Cluster, any number of seed nodes. */
export type RedisMode = 'standalone' | 'cluster';

/**
 * REDIS_URL as the mode reads it. Standalone: exactly one URL. Cluster: one
 * or more seed URLs, comma-separated, from which the client discovers the
 * rest; they must agree on scheme and credentials (every node gets the same),
 * and none may name a database: Redis Cluster has only database 0.
 */
export function parseRedisSeeds(value: string, mode: RedisMode): readonly RedisConnectionTarget[] {
  const parts = value.split(',').map((part) => part.trim());
  if (mode === 'standalone') {
    if (parts.length > 1) {
      throw new InvalidRedisUrlError('REDIS_URL lists several URLs, which only REDIS_MODE=cluster reads; set REDIS_MODE=cluster, or keep one URL');
    }
    return [parseRedisUrl(value)];
  }
  if (parts.some((part) => part === '')) throw new InvalidRedisUrlError('REDIS_URL has an empty entry in its comma-separated list of seed nodes');
  const seeds = parts.map(parseRedisUrl);
  if (seeds.some((seed) => seed.database !== undefined)) {
    throw new InvalidRedisUrlError('REDIS_URL names a database (/db), which Redis Cluster does not have (only 0); remove the /db from every seed URL, or set REDIS_MODE=standalone');
  }
  const first = seeds[0] as RedisConnectionTarget;
  if (seeds.some((seed) => seed.tls !== first.tls || seed.username !== first.username || seed.password !== first.password)) {
    throw new InvalidRedisUrlError('REDIS_URL seed nodes differ in scheme or credentials; every node of a cluster gets the same ones, so give them all the same redis:// or rediss:// and user:password');
  }
  return seeds;
}

/**
 * Removes every form of the URL's secrets from a piece of text (an error
 * message from a socket or the client): the URL itself, and the password and
 * user both raw and percent-encoded. Used on anything the store lets out.
 */
export function scrubRedisSecrets(text: string, url: string): string {
  // A cluster's REDIS_URL is a list: each seed URL, and each one's credentials, is a secret of its own.
  const urls = [url, ...url.split(',').map((part) => part.trim())];
  const secrets = new Set<string>(urls);
  for (const one of urls) {
    try {
      const parsed = new URL(one);
      for (const part of [parsed.password, parsed.username]) {
        if (part === '') continue;
        secrets.add(part);
        secrets.add(safeDecode(part));
      }
    } catch {
      // An unparseable URL has no parts to find; the whole string is still removed.
    }
  }
  let out = text;
  // Longest first, so the URL goes as one piece before its password inside it.
  for (const secret of [...secrets].filter((s) => s.length > 0).sort((a, b) => b.length - a.length)) {
    out = out.split(secret).join('***');
  }
  return out;
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
