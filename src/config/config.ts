import path from 'node:path';
import { z } from 'zod';
import { algorithmOf, type BackendName, type FailurePolicy, type HotKeyLeaseOptions, InvalidRedisUrlError, type OutageShareMode, parseRedisSeeds, type RateLimitPolicy, type RedisMode } from '../library';
import { tiersOf } from './tiers-from-env';
import type { Tier } from './tier';
import { ConfigError, type ConfigProblem } from './config-error';
import { findNodeSqlite, NODE_SQLITE_MINIMUM, sqliteUnavailableMessage } from '../library';
import { decimalText, knobs, type KnobValues } from './knobs';
import type { PoliciesConfig } from '../policies/resolve-charges';
import { upstreamOf, type UpstreamConfig } from './upstream-config';
import { authConfigOf, type AuthConfig } from './auth-issuers';

export type { UpstreamConfig, UpstreamQuotaConfig } from './upstream-config';
export { anyUpstreamQuota, upstreamIntervalMs } from './upstream-config';

export const MINUTE_MS = 60_000;

/**
 * RATE_LIMIT_TIMEOUT_MS when unset. RTDB: a transaction is a round trip to a
 * regional database, often a few hundred ms. Redis: a command unanswered for
 * 500 ms already means an outage, and every request waits that long before the
 * local window answers. SQLite: the busy timeout, how long a decision waits for
 * another process's write lock, blocking its event loop meanwhile; a lock held
 * 500 ms is already an outage, as for Redis. Memory never waits; its value is only reported.
 */
export const DEFAULT_TIMEOUT_MS: Readonly<Record<BackendName, number>> = { rtdb: 1500, redis: 500, memory: 1500, sqlite: 500 };

/**
 * RATE_LIMIT_HOT_KEY_RATE_PER_SECOND when unset. RTDB: transactions on one
 * node from several instances contend from a few tens a second (issue 18:
 * maxretry from 200 decisions/s over 10 instances), and `npm run bench --
 * hot-key` holds the figure there only when keys lease from 20/s. Redis runs
 * thousands of scripts a second on one key; leasing pays from 200/s.
 */
export const DEFAULT_HOT_KEY_RATE_PER_SECOND: Readonly<Record<BackendName, number>> = { rtdb: 20, redis: 200, memory: 200, sqlite: 200 };

/**
 * Everything the service enforces and publishes, parsed once at boot. The
 * limiter, the headers and the /developers page all read this one object, so
 * what is published is what is enforced.
 */
export interface Config {
  readonly port: number;
  readonly rateLimit: {
    readonly backend: BackendName;
    /** The default tier first; every token's tier names one of these. */
    readonly tiers: readonly Tier[];
    readonly defaultTier: Tier;
    /** What each call costs and the extra limits that hold it: costs, rules, the free limit (ADR 0027). */
    readonly calls: PoliciesConfig;
    /** The tools RATE_LIMIT_TOOL_COSTS names (the rest of calls.costs came from LIMITS_FILE), so a boot error names the right knob. */
    readonly toolCostsFromEnv: ReadonlySet<string>;
    /** Failed authentication attempts per client address. */
    readonly authFailures: RateLimitPolicy;
    /**
     * Requests without a valid token per client address, counted per instance
     * (never in the shared store, so a flood of them cannot load it).
     */
    readonly unauthenticated: RateLimitPolicy;
    /** Requests per token refused before the limiter (malformed, oversized, unsupported), per instance. */
    readonly refusedRequests: RateLimitPolicy;
    /** Shared-backend deadline; default DEFAULT_TIMEOUT_MS[backend]. */
    readonly timeoutMs: number;
    readonly failurePolicy: FailurePolicy;
    /** RATE_LIMIT_OUTAGE_SHARE: whether a fail-open outage shares each key's remaining budget among the live instances (ADR 0067). */
    readonly outageShare: OutageShareMode;
    /** RATE_LIMIT_FLEET_INTERVAL_MS: each instance's heartbeat; a beat counts for three intervals. */
    readonly fleetIntervalMs: number;
    readonly probeIntervalMs: number;
    /** Leases for hot keys on a shared backend (RATE_LIMIT_HOT_KEY*, ADR 0066); undefined: off. */
    readonly hotKeys: HotKeyLeaseOptions | undefined;
  };
  readonly firebase: {
    /** The first of databaseUrls: the firebase app's default database (the upstream quota lives there). */
    readonly databaseUrl: string | undefined;
    /** FIREBASE_DATABASE_URLS, or FIREBASE_DATABASE_URL alone; each key lives in one (ADR 0057). */
    readonly databaseUrls: readonly string[];
    readonly databaseEmulatorHost: string | undefined;
    readonly firestoreEmulatorHost: string | undefined;
    readonly projectId: string | undefined;
  };
  readonly redis: {
    /** A secret: never log it. Only set when the backend is redis. */
    readonly url: string | undefined;
    readonly keyPrefix: string;
    /** REDIS_MODE: cluster reads REDIS_URL as seed nodes and tags every key (ADR 0056). */
    readonly mode: RedisMode;
    /** REDIS_TLS_CA_FILE, resolved; only with a rediss:// URL. */
    readonly tlsCaFile: string | undefined;
  };
  readonly sqlite: {
    /** SQLITE_PATH, resolved; the backend sqlite's file (docs/adr/0062). */
    readonly path: string;
  };
  readonly tokens: {
    readonly store: 'file' | 'firestore';
    readonly file: string;
    readonly cacheTtlMs: number;
    /** The file store's runtime limit overrides: limit-overrides.json beside TOKENS_FILE. */
    readonly overridesFile: string;
    /** How often each instance reads the overrides (LIMIT_OVERRIDES_POLL_MS). */
    readonly overridesPollMs: number;
  };
  readonly http: {
    /** X-Forwarded-For entries written by trusted proxies; default 1 on Cloud Run (K_SERVICE set), else 0. */
    readonly trustProxyHops: number;
    /**
     * Host header values accepted on /mcp. Empty (and allowAnyHost false):
     * localhost names on loopback, nothing from the network
     * (docs/adr/0007-client-addresses-and-hosts.md).
     */
    readonly allowedHosts: readonly string[];
    /** ALLOWED_HOSTS=*: any Host is accepted (DNS-rebinding protection off); allowedHosts is then empty. */
    readonly allowAnyHost: boolean;
    readonly maxBodyBytes: number;
    /** Node's server.headersTimeout; default 10000. */
    readonly headersTimeoutMs: number;
    /** Node's server.requestTimeout, >= headersTimeoutMs; default 30000. */
    readonly requestTimeoutMs: number;
    /** Node's server.keepAliveTimeout; default 5000. */
    readonly keepAliveTimeoutMs: number;
    /** Open connections per instance; 0 = no cap (the default). */
    readonly maxConnections: number;
    /** JSON-RPC messages per batch, 1..1000; default 100. */
    readonly maxBatchMessages: number;
  };
  readonly metrics: {
    /** Separate listener for /metrics; undefined = not served. */
    readonly port: number | undefined;
    /** The address it listens on (METRICS_HOST); default 127.0.0.1, never every interface unless asked. */
    readonly host: string;
  };
  readonly log: {
    readonly format: 'json' | 'pretty';
  };
  /** Issuers whose tokens are accepted beside flk_ tokens (AUTH_ISSUERS_FILE, FIREBASE_AUTH_PROJECT_ID). */
  readonly auth: AuthConfig;
  /** UPSTREAM_MCP_URL set: firelimit fronts that MCP server (docs/adr/0034-gateway-forwarding.md). Undefined: it serves only its own tools. */
  readonly upstream: UpstreamConfig | undefined;
}

export interface LoadConfigOptions {
  /** Where relative paths (TOKENS_FILE, REDIS_URL_FILE) resolve. Default process.cwd(). */
  readonly cwd?: string;
  /** Whether stdout is a terminal, to pick the default log format. */
  readonly stdoutIsTty?: boolean;
  /** Reads a secret file (REDIS_URL_FILE); injected for tests. */
  readonly readFile?: (filePath: string) => string;
  /**
   * `checked` (default): LIMITS_FILE's `upstream` section needs
   * UPSTREAM_MCP_URL, as the service does. `schema-only`: its fields are
   * checked, not held against a URL: the operator commands never read it.
   */
  readonly upstreamSection?: 'checked' | 'schema-only';
  /** Whether this runtime has node:sqlite (RATE_LIMIT_BACKEND=sqlite); injected for tests. Default: looked up. */
  readonly hasNodeSqlite?: () => boolean;
  /** The runtime's version for the sqlite refusal; default process.version. */
  readonly nodeVersion?: string;
}

export function loadConfig(env: NodeJS.ProcessEnv, options: LoadConfigOptions = {}): Config {
  const problems: ConfigProblem[] = [];
  const values = {} as Record<string, unknown>;
  for (const name of Object.keys(knobs) as (keyof typeof knobs)[]) {
    const read = readKnob(name, env[name]);
    if (read.ok) values[name] = read.value;
    else problems.push(read.problem);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const v = values as KnobValues;
  const cwd = options.cwd ?? process.cwd();

  const { tiers, file } = tiersOf(env, v, path.resolve(cwd, v.LIMITS_FILE ?? '.'), options.readFile ?? defaultReadFile, problems);
  const costs = new Map(file.costs);
  for (const [tool, cost] of v.RATE_LIMIT_TOOL_COSTS) {
    if (costs.has(tool)) {
      problems.push({
        knob: 'RATE_LIMIT_TOOL_COSTS',
        problem: `${tool} is given a cost here and in LIMITS_FILE's costs`,
        fix: `keep one: remove ${tool} from RATE_LIMIT_TOOL_COSTS or from the file's "costs"`,
      });
    }
    costs.set(tool, cost);
  }
  file.rules.forEach((rule, i) => {
    if (rule.match.tier !== undefined && !tiers.some((tier) => tier.name === rule.match.tier)) {
      problems.push({
        knob: 'LIMITS_FILE',
        problem: `rules[${i}].match.tier: no tier is named "${rule.match.tier}" (tiers: ${tiers.map((t) => t.name).join(', ')})`,
        fix: 'name a configured tier, or add that tier',
      });
    }
  });

  let redisUrl: string | undefined;
  if (v.RATE_LIMIT_BACKEND === 'redis') {
    // The mounted secret wins over the variable: it is the deliberate choice, a leftover REDIS_URL is not.
    redisUrl = v.REDIS_URL_FILE === undefined ? v.REDIS_URL : undefined;
    if (v.REDIS_URL_FILE !== undefined) {
      try {
        redisUrl = (options.readFile ?? defaultReadFile)(path.resolve(cwd, v.REDIS_URL_FILE)).trim();
      } catch {
        problems.push({
          knob: 'REDIS_URL_FILE',
          problem: 'the file cannot be read',
          fix: 'point REDIS_URL_FILE at a readable file holding the Redis URL (a mounted secret), or unset it and set REDIS_URL',
        });
      }
    }
    if (redisUrl === undefined && problems.length === 0) {
      problems.push({
        knob: 'REDIS_URL',
        problem: 'RATE_LIMIT_BACKEND is redis but no Redis URL is set',
        fix: 'set REDIS_URL=redis://[:password@]host:port, or REDIS_URL_FILE to a file that holds it',
      });
    } else if (redisUrl !== undefined) {
      try {
        const seeds = parseRedisSeeds(redisUrl, v.REDIS_MODE);
        if (v.REDIS_TLS_CA_FILE !== undefined && !seeds.every((seed) => seed.tls)) {
          problems.push({
            knob: 'REDIS_TLS_CA_FILE',
            problem: 'a CA file is set but the Redis URL is redis:// (no TLS)',
            fix: 'use rediss://host:port in REDIS_URL for TLS, or unset REDIS_TLS_CA_FILE',
          });
        }
      } catch (error) {
        // The parser's messages never echo the URL: it may carry a password.
        problems.push({
          knob: v.REDIS_URL_FILE !== undefined ? 'REDIS_URL_FILE' : 'REDIS_URL',
          problem: error instanceof InvalidRedisUrlError ? error.message.replace(/^REDIS_URL /, 'the URL ') : 'not a usable Redis URL',
          fix: v.REDIS_MODE === 'cluster'
            ? 'use redis://[:password@]host:port (rediss:// for TLS), several seed nodes comma-separated, no /db'
            : 'use redis://[:password@]host:port[/db] or rediss://... for TLS',
        });
      }
    }
    if (v.REDIS_TLS_CA_FILE !== undefined) {
      try {
        (options.readFile ?? defaultReadFile)(path.resolve(cwd, v.REDIS_TLS_CA_FILE));
      } catch {
        problems.push({
          knob: 'REDIS_TLS_CA_FILE',
          problem: 'the file cannot be read',
          fix: 'point REDIS_TLS_CA_FILE at a readable PEM file of the CA that signed the Redis server certificate, or unset it',
        });
      }
    }
  }

  if (v.RATE_LIMIT_BURST !== undefined && v.RATE_LIMIT_ALGORITHM !== 'token-bucket' && v.RATE_LIMIT_ALGORITHM !== 'leaky-bucket') {
    problems.push({
      knob: 'RATE_LIMIT_BURST',
      problem: `only token-bucket and leaky-bucket have a burst; RATE_LIMIT_ALGORITHM is ${v.RATE_LIMIT_ALGORITHM}`,
      fix: 'unset RATE_LIMIT_BURST, or set RATE_LIMIT_ALGORITHM=token-bucket or leaky-bucket',
    });
  }

  if (v.FIREBASE_DATABASE_URLS !== undefined && v.FIREBASE_DATABASE_URL !== undefined && v.FIREBASE_DATABASE_URLS[0] !== v.FIREBASE_DATABASE_URL) {
    // Which one holds the keys would be a guess: refuse rather than pick.
    problems.push({
      knob: 'FIREBASE_DATABASE_URLS',
      problem: 'FIREBASE_DATABASE_URL is set too, and is not the first of FIREBASE_DATABASE_URLS',
      fix: 'unset FIREBASE_DATABASE_URL, or list it first in FIREBASE_DATABASE_URLS',
    });
  }
  if (v.RATE_LIMIT_BACKEND === 'rtdb' && v.FIREBASE_DATABASE_URL === undefined && v.FIREBASE_DATABASE_URLS === undefined) {
    problems.push({
      knob: 'FIREBASE_DATABASE_URL',
      problem: 'RATE_LIMIT_BACKEND is rtdb but no database URL is set',
      fix: 'set FIREBASE_DATABASE_URL=https://<project>-default-rtdb.firebaseio.com (or http://127.0.0.1:9000?ns=<ns> with the emulator)',
    });
  }
  if (v.RATE_LIMIT_BACKEND === 'sqlite' && !(options.hasNodeSqlite ?? (() => findNodeSqlite() !== undefined))()) {
    problems.push({
      knob: 'RATE_LIMIT_BACKEND',
      problem: sqliteUnavailableMessage(options.nodeVersion ?? process.version),
      fix: `run on Node 24 (or ${NODE_SQLITE_MINIMUM}+), or set RATE_LIMIT_BACKEND to memory, redis or rtdb`,
    });
  }
  if (v.HTTP_REQUEST_TIMEOUT_MS < v.HTTP_HEADERS_TIMEOUT_MS) {
    // http.createServer throws ERR_OUT_OF_RANGE for this and, set as properties afterwards, nothing checks it; refuse at boot, naming both knobs.
    problems.push({
      knob: 'HTTP_REQUEST_TIMEOUT_MS',
      problem: `${v.HTTP_REQUEST_TIMEOUT_MS} ms is less than HTTP_HEADERS_TIMEOUT_MS (${v.HTTP_HEADERS_TIMEOUT_MS} ms): a request cannot finish before its headers`,
      fix: 'raise HTTP_REQUEST_TIMEOUT_MS to at least HTTP_HEADERS_TIMEOUT_MS, or lower HTTP_HEADERS_TIMEOUT_MS',
    });
  }
  let issuersFileText: string | undefined;
  if (v.AUTH_ISSUERS_FILE !== undefined) {
    try {
      issuersFileText = (options.readFile ?? defaultReadFile)(path.resolve(cwd, v.AUTH_ISSUERS_FILE));
    } catch {
      problems.push({ knob: 'AUTH_ISSUERS_FILE', problem: 'the file cannot be read', fix: 'point AUTH_ISSUERS_FILE at a readable JSON file of issuers, or unset it' });
    }
  }
  const auth = authConfigOf({ issuersFileText, firebaseProjectId: v.FIREBASE_AUTH_PROJECT_ID, tierNames: tiers.map((tier) => tier.name) }, problems);
  const upstream = upstreamOf(v, cwd, options.readFile ?? defaultReadFile, options.upstreamSection === 'schema-only' && v.UPSTREAM_MCP_URL === undefined ? new Map() : file.upstreamTools, problems, file.upstreamCosts);
  if (problems.length > 0) throw new ConfigError(problems);

  return {
    port: v.PORT,
    rateLimit: {
      backend: v.RATE_LIMIT_BACKEND,
      tiers,
      defaultTier: tiers[0] as Tier,
      toolCostsFromEnv: new Set(v.RATE_LIMIT_TOOL_COSTS.keys()),
      calls: {
        costs,
        rules: file.rules,
        free: [{ name: 'free', algorithm: 'fixed-window', limit: v.RATE_LIMIT_FREE_PER_MINUTE, windowMs: MINUTE_MS }],
      },
      authFailures: { name: 'auth-failures', limit: v.AUTH_FAILURES_PER_MINUTE, windowMs: MINUTE_MS },
      unauthenticated: { name: 'unauthenticated', limit: v.UNAUTHENTICATED_PER_MINUTE, windowMs: MINUTE_MS },
      refusedRequests: { name: 'refused-requests', limit: v.REFUSED_REQUESTS_PER_MINUTE, windowMs: MINUTE_MS },
      timeoutMs: v.RATE_LIMIT_TIMEOUT_MS ?? DEFAULT_TIMEOUT_MS[v.RATE_LIMIT_BACKEND],
      failurePolicy: v.RATE_LIMIT_FAILURE_POLICY,
      outageShare: v.RATE_LIMIT_OUTAGE_SHARE,
      fleetIntervalMs: v.RATE_LIMIT_FLEET_INTERVAL_MS,
      probeIntervalMs: v.RATE_LIMIT_PROBE_INTERVAL_MS,
      hotKeys: v.RATE_LIMIT_HOT_KEYS === 'off' ? undefined : { hotRatePerSecond: v.RATE_LIMIT_HOT_KEY_RATE_PER_SECOND ?? DEFAULT_HOT_KEY_RATE_PER_SECOND[v.RATE_LIMIT_BACKEND], maxLeaseUnits: v.RATE_LIMIT_HOT_KEY_MAX_LEASE_UNITS },
    },
    firebase: {
      databaseUrl: v.FIREBASE_DATABASE_URLS?.[0] ?? v.FIREBASE_DATABASE_URL,
      databaseUrls: v.FIREBASE_DATABASE_URLS ?? (v.FIREBASE_DATABASE_URL === undefined ? [] : [v.FIREBASE_DATABASE_URL]),
      databaseEmulatorHost: v.FIREBASE_DATABASE_EMULATOR_HOST,
      firestoreEmulatorHost: v.FIRESTORE_EMULATOR_HOST,
      projectId: v.GOOGLE_CLOUD_PROJECT,
    },
    redis: {
      url: redisUrl,
      keyPrefix: v.REDIS_KEY_PREFIX,
      mode: v.REDIS_MODE,
      tlsCaFile: v.REDIS_TLS_CA_FILE === undefined ? undefined : path.resolve(cwd, v.REDIS_TLS_CA_FILE),
    },
    sqlite: { path: path.resolve(cwd, v.SQLITE_PATH) },
    tokens: {
      store: v.TOKEN_STORE,
      file: path.resolve(cwd, v.TOKENS_FILE),
      cacheTtlMs: v.TOKEN_CACHE_TTL_MS,
      overridesFile: path.join(path.dirname(path.resolve(cwd, v.TOKENS_FILE)), 'limit-overrides.json'),
      overridesPollMs: v.LIMIT_OVERRIDES_POLL_MS,
    },
    http: {
      // Cloud Run sets K_SERVICE, and there Google's front end is one proxy; elsewhere nothing says one is there.
      trustProxyHops: v.TRUST_PROXY_HOPS ?? (v.K_SERVICE === undefined ? 0 : 1),
      allowedHosts: v.ALLOWED_HOSTS.hosts,
      allowAnyHost: v.ALLOWED_HOSTS.anyHost,
      maxBodyBytes: v.MAX_BODY_BYTES,
      headersTimeoutMs: v.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: v.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: v.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: v.MAX_CONNECTIONS,
      maxBatchMessages: v.MAX_BATCH_MESSAGES,
    },
    metrics: { port: v.METRICS_PORT, host: v.METRICS_HOST },
    log: { format: v.LOG_FORMAT ?? (options.stdoutIsTty ? 'pretty' : 'json') },
    auth,
    upstream,
  };
}

/** One knob's value from its raw text (trimmed; empty is unset), or the problem with it. */
export function readKnob(name: keyof typeof knobs, raw: string | undefined): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: ConfigProblem } {
  const knob = knobs[name];
  const schema = knob.schema as z.ZodType;
  const input = raw === undefined || raw.trim() === '' ? undefined : raw.trim();
  let parsed = schema.safeParse(input);
  // A number knob gets its text as a number, read in decimal digits only (knobs.ts, decimalText).
  if (!parsed.success && input !== undefined && expectsNumber(parsed.error)) parsed = schema.safeParse(decimalText(input));
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, problem: { knob: name, problem: describeIssue(parsed.error, knob.secret === true ? undefined : raw), fix: knob.fix } };
}

/** The tier a token names, or undefined when the configuration has no such tier. */
export function findTier(config: Config, name: string): Tier | undefined {
  return config.rateLimit.tiers.find((tier) => tier.name === name);
}

/** What may be logged at boot: no secrets, no URLs with credentials. */
export function describeConfig(config: Config): Record<string, unknown> {
  return {
    port: config.port,
    backend: config.rateLimit.backend,
    tiers: config.rateLimit.tiers.map((t) => `${t.name}=${t.policies.map((p) => `${algorithmOf(p)} ${p.limit}/${p.windowMs / 1000}s${p.burst === undefined ? '' : ` burst ${p.burst}`}`).join(' + ')}`),
    timeoutMs: config.rateLimit.timeoutMs,
    failurePolicy: config.rateLimit.failurePolicy,
    outageShare: config.rateLimit.backend === 'memory' ? undefined : config.rateLimit.outageShare,
    hotKeys: hotKeysDescribed(config),
    // Both are derived when unset; the boot line says what was derived.
    trustProxyHops: config.http.trustProxyHops,
    allowedHosts: config.http.allowAnyHost ? '*' : config.http.allowedHosts,
    tokenStore: config.tokens.store,
    // Public URLs and project ids only: the boot line says whose tokens are trusted.
    trustedIssuers: config.auth.issuers.length === 0 ? undefined : config.auth.issuers.map((issuer) => issuer.issuer),
    redisUrl: config.redis.url === undefined ? undefined : '[set]',
    redisMode: config.rateLimit.backend === 'redis' ? config.redis.mode : undefined,
    sqlitePath: config.rateLimit.backend === 'sqlite' ? config.sqlite.path : undefined,
    // The URL is refused at boot when it carries credentials; the Authorization value is never described.
    upstream: config.upstream === undefined ? undefined : { url: urlWithoutQuery(config.upstream.url), authorization: config.upstream.authorization === undefined ? 'none' : '[set]', quota: config.upstream.quota === undefined ? 'none' : `${config.upstream.quota.limit}/${config.upstream.quota.windowMs / 1000}s x ${config.upstream.quota.headroom}` },
  };
}

/** Whether hot keys lease, and at what; the memory backend never does (nothing is shared). */
export function hotKeysDescribed(config: Config): string {
  const { hotKeys, backend } = config.rateLimit;
  if (backend === 'memory') return 'off (memory backend)';
  if (hotKeys === undefined) return 'off';
  return `leased from ${hotKeys.hotRatePerSecond}/s per instance, up to ${hotKeys.maxLeaseUnits} units (fixed windows)`;
}

/** A query string may carry a key (`?api_key=`): the boot line shows where, not how. */
function urlWithoutQuery(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}${parsed.search === '' ? '' : '?[not shown]'}`;
}

function expectsNumber(error: z.ZodError): boolean {
  const issue = error.issues[0];
  return issue?.code === 'invalid_type' && issue.expected === 'number';
}

function describeIssue(error: z.ZodError, raw: string | undefined): string {
  const message = error.issues[0]?.message ?? 'invalid value';
  return raw === undefined ? message : `${message}, got ${JSON.stringify(raw)}`;
}

function defaultReadFile(filePath: string): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('node:fs') as typeof import('node:fs')).readFileSync(filePath, 'utf8');
}
