import { isIP } from 'node:net';
import { z } from 'zod';
import { ALGORITHM_NAMES, type AlgorithmName, BACKEND_NAMES } from '../library';
import { FREE_PER_MINUTE_DEFAULT } from '../policies/free-calls';
import { parseToolCosts } from '../library/mcp';
import { hasAtMostFourDecimals, parseUpstreamRate, UPSTREAM_RATE_EXPECTED } from './upstream-rate';

/**
 * A number knob's text as a number, in decimal digits only (an optional minus,
 * an optional fraction): `Number()` (and so `z.coerce.number`) also reads
 * "0b11", "0x1f", "0o7", "1e3", "Infinity", so RATE_LIMIT_PER_MINUTE=0b11
 * meant 3. Anything else becomes NaN, which the knob's schema refuses with
 * its own message. loadConfig (readKnob) applies it to every knob whose schema
 * expects a number, so a number knob is a plain `z.number()` schema: never coerce.
 */
export function decimalText(input: unknown): unknown {
  if (typeof input !== 'string') return input;
  return /^-?(\d+(\.\d+)?|\.\d+)$/.test(input) ? Number(input) : Number.NaN;
}

/** Names a tier may not take: a key every object already has, which a lookup by name would find on any object. */
const RESERVED_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

const positiveInt = (what: string) =>
  z.number({ error: `expected ${what}` }).int({ error: `expected ${what}` }).positive({ error: `expected ${what}` });

const port = z
  .number({ error: 'expected a TCP port number' })
  .int({ error: 'expected a TCP port number' })
  .min(1, { error: 'expected a port from 1 to 65535' })
  .max(65535, { error: 'expected a port from 1 to 65535' });

/** A whole number of milliseconds from `minMs` to `maxMs`; both bounds catch a value given in seconds or with a zero too many. */
const durationMs = (minMs: number, maxMs: number) =>
  z
    .number({ error: 'expected a whole number of milliseconds' })
    .int({ error: 'expected a whole number of milliseconds' })
    .min(minMs, { error: `expected at least ${minMs} ms` })
    .max(maxMs, { error: `expected at most ${maxMs} ms` });

const wholeNumber = (what: string, min: number, max: number) =>
  z
    .number({ error: `expected ${what}` })
    .int({ error: `expected ${what}` })
    .min(min, { error: `expected ${what} from ${min} to ${max}` })
    .max(max, { error: `expected ${what} from ${min} to ${max}` });

/** "a.example, b.example" -> host names; "*" alone -> any Host. */
const allowedHosts = z
  .string()
  .optional()
  .transform((s, ctx) => {
    const hosts = s === undefined ? [] : s.split(',').map((x) => x.trim()).filter(Boolean);
    if (!hosts.includes('*')) return { hosts, anyHost: false };
    if (hosts.length > 1) {
      // "*,a.example" could mean any Host or only a.example: refuse rather than guess.
      ctx.addIssue({ code: 'custom', message: '"*" (any Host) cannot be mixed with host names' });
      return z.NEVER;
    }
    return { hosts: [], anyHost: true };
  });

/** "pro=600,partner=1200": extra tiers, each with its own per-minute limit. */
const tiers = z
  .string()
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return [];
    const out: { name: string; perMinute: number }[] = [];
    for (const part of s.split(',').map((x) => x.trim()).filter(Boolean)) {
      const m = /^([A-Za-z0-9_-]{1,32})=(\d{1,9})$/.exec(part);
      const perMinute = m ? Number(m[2]) : 0;
      if (m && RESERVED_NAMES.has(m[1] as string)) {
        ctx.addIssue({ code: 'custom', message: `"${m[1]}" cannot name a tier (every object has it)` });
        return z.NEVER;
      }
      if (!m || perMinute < 1 || m[1] === 'default' || out.some((t) => t.name === m[1])) {
        ctx.addIssue({ code: 'custom', message: `"${part}" is not name=perMinute (unique names, not "default", limit >= 1)` });
        return z.NEVER;
      }
      out.push({ name: m[1] as string, perMinute });
    }
    return out;
  });

/** "search=5,whoami=1": units per call of each tool. Whether each tool exists is checked at boot, where the tools are known. */
const toolCosts = z
  .string()
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return new Map<string, number>() as ReadonlyMap<string, number>;
    const parsed = parseToolCosts(s);
    if (parsed.ok) return parsed.costs;
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  });

/** "15/min", "2/s", "1000/h", "5000/day": calls the upstream allows per window. */
const upstreamRate = z
  .string()
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return undefined;
    const rate = parseUpstreamRate(s);
    if (rate === undefined) {
      ctx.addIssue({ code: 'custom', message: UPSTREAM_RATE_EXPECTED });
      return z.NEVER;
    }
    return rate;
  });

/** An http(s) URL without credentials in it: the credential has its own knob, so it can be a mounted secret and never sit in a URL that gets logged. */
const upstreamUrl = z
  .url({ error: 'expected an http:// or https:// URL' })
  .optional()
  .superRefine((s, ctx) => {
    // zod runs refinements after a failed check too: a text that is no URL at all was already reported, and new URL() would throw.
    if (s === undefined || !URL.canParse(s)) return;
    const url = new URL(s);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') ctx.addIssue({ code: 'custom', message: 'expected an http:// or https:// URL' });
    else if (url.username !== '' || url.password !== '') ctx.addIssue({ code: 'custom', message: 'the URL carries credentials' });
  });

interface Knob<S extends z.ZodType> {
  readonly schema: S;
  /** What to do about a bad value; shown verbatim in the boot error. */
  readonly fix: string;
  /** The value may hold a secret (a URL with a password): a bad one is not quoted in the boot error. */
  readonly secret?: boolean;
}

const knob = <S extends z.ZodType>(schema: S, fix: string, secret = false): Knob<S> => ({ schema, fix, secret });

/**
 * Every environment variable the service reads. README's configuration table
 * documents the same list; a knob not here is not read.
 */
export const knobs = {
  PORT: knob(port.default(8080), 'set PORT to a free port, e.g. 8080 (Cloud Run sets it for you)'),
  RATE_LIMIT_BACKEND: knob(
    z.enum(BACKEND_NAMES, { error: `expected ${BACKEND_NAMES.slice(0, -1).join(', ')} or ${BACKEND_NAMES[BACKEND_NAMES.length - 1]}` }).default('memory'),
    'set RATE_LIMIT_BACKEND to memory (one instance), rtdb (Firebase Realtime Database), redis or sqlite (every process on one host, one file)',
  ),
  RATE_LIMIT_PER_MINUTE: knob(
    positiveInt('a positive whole number of requests per minute').max(1_000_000_000).default(120),
    'set RATE_LIMIT_PER_MINUTE to a whole number of requests per minute, e.g. 120, or unset it for the default (120)',
  ),
  RATE_LIMIT_ALGORITHM: knob(
    z.enum(ALGORITHM_NAMES as [AlgorithmName, ...AlgorithmName[]], { error: `expected one of ${ALGORITHM_NAMES.join(', ')}` }).default('fixed-window'),
    `set RATE_LIMIT_ALGORITHM to one of ${ALGORITHM_NAMES.join(', ')} (docs/algorithms.md compares them), or unset it for fixed-window`,
  ),
  /** The buckets' most calls at once for the default tier; unset: RATE_LIMIT_PER_MINUTE (see config.ts). */
  RATE_LIMIT_BURST: knob(
    positiveInt('a positive whole number of calls').max(1_000_000_000).optional(),
    'set RATE_LIMIT_BURST to the most calls a token may make at once (token-bucket, leaky-bucket), e.g. 10, or unset it for RATE_LIMIT_PER_MINUTE',
  ),
  LIMITS_FILE: knob(z.string().optional(), 'set LIMITS_FILE to a readable JSON file of tiers (docs/limits-file.md), or unset it'),
  RATE_LIMIT_TIERS: knob(tiers, 'set RATE_LIMIT_TIERS to a comma list of name=perMinute, e.g. "pro=600,partner=1200"'),
  RATE_LIMIT_TOOL_COSTS: knob(
    toolCosts,
    'set RATE_LIMIT_TOOL_COSTS to a comma list of tool=cost, e.g. "search=5,whoami=1" (0 makes a tool free), or unset it for 1 per call',
  ),
  /** Free calls (protocol chatter, rate_limit_status, tools costing 0) per token per minute; see free-calls.ts for the default. */
  RATE_LIMIT_FREE_PER_MINUTE: knob(
    positiveInt('a positive whole number of calls per minute').max(1_000_000_000).default(FREE_PER_MINUTE_DEFAULT),
    `set RATE_LIMIT_FREE_PER_MINUTE to the free calls (handshakes, pings, rate_limit_status) a token may make per minute, e.g. ${FREE_PER_MINUTE_DEFAULT}`,
  ),
  AUTH_FAILURES_PER_MINUTE: knob(
    positiveInt('a positive whole number of failed attempts per minute').default(10),
    'set AUTH_FAILURES_PER_MINUTE to the failed sign-ins a client address may make per minute, e.g. 10',
  ),
  /** Unset: the backend's own default (DEFAULT_TIMEOUT_MS in config.ts). */
  RATE_LIMIT_TIMEOUT_MS: knob(
    positiveInt('a positive whole number of milliseconds').max(60_000, { error: 'expected at most 60000 ms' }).optional(),
    'set RATE_LIMIT_TIMEOUT_MS to the shared-backend deadline in ms, e.g. 1500 for rtdb or 500 for redis, or unset it for that default',
  ),
  RATE_LIMIT_FAILURE_POLICY: knob(
    z.enum(['fail-open', 'fail-closed'], { error: 'expected fail-open or fail-closed' }).default('fail-open'),
    'set RATE_LIMIT_FAILURE_POLICY to fail-open (answer from a local window) or fail-closed (refuse with 503)',
  ),
  RATE_LIMIT_OUTAGE_SHARE: knob(
    z.enum(['fleet', 'instance'], { error: 'expected fleet or instance' }).default('fleet'),
    'set RATE_LIMIT_OUTAGE_SHARE to fleet (during an outage each instance admits its share of what a key has left) or instance (each admits all of it)',
  ),
  RATE_LIMIT_FLEET_INTERVAL_MS: knob(
    positiveInt('a positive whole number of milliseconds').min(1000, { error: 'expected at least 1000 ms' }).default(10_000),
    'set RATE_LIMIT_FLEET_INTERVAL_MS to how often each instance beats into the shared store to be counted in the fleet, e.g. 10000',
  ),
  RATE_LIMIT_PROBE_INTERVAL_MS: knob(
    positiveInt('a positive whole number of milliseconds').min(100, { error: 'expected at least 100 ms' }).default(5000),
    'set RATE_LIMIT_PROBE_INTERVAL_MS to how often a failed backend is retried during an outage, e.g. 5000',
  ),
  /**
   * On by default: a key is leased only once one instance decides it at RATE_LIMIT_HOT_KEY_RATE_PER_SECOND,
   * only fixed windows lease, and a lease never over-admits (ADR 0066), so ordinary limits never see it.
   */
  RATE_LIMIT_HOT_KEYS: knob(
    z.enum(['on', 'off'], { error: 'expected on or off' }).default('on'),
    'set RATE_LIMIT_HOT_KEYS to on (a key one instance decides very often is answered from units leased from the shared count) or off (every decision is one shared-store call)',
  ),
  RATE_LIMIT_HOT_KEY_RATE_PER_SECOND: knob(
    wholeNumber('a whole number of decisions per second', 1, 1_000_000).optional(),
    'set RATE_LIMIT_HOT_KEY_RATE_PER_SECOND to the decisions per second, on one instance for one key, at which the key is leased, from 1 to 1000000, e.g. 200',
  ),
  RATE_LIMIT_HOT_KEY_MAX_LEASE_UNITS: knob(
    wholeNumber('a whole number of units', 1, 1_000_000).default(100),
    "set RATE_LIMIT_HOT_KEY_MAX_LEASE_UNITS to the most units one instance leases for a key at once, from 1 to 1000000, e.g. 100 (a window's end may leave up to instances x this unused)",
  ),
  FIREBASE_DATABASE_URL: knob(
    z.url({ error: 'expected a URL' }).optional(),
    'set FIREBASE_DATABASE_URL to your database URL, e.g. https://my-project-default-rtdb.firebaseio.com',
  ),
  /**
   * Several databases, comma-separated: each key lives in the one rendezvous hashing of the URL and the
   * key picks (src/library/support/rendezvous.ts), so adding one later moves only the keys it must.
   */
  FIREBASE_DATABASE_URLS: knob(
    z
      .string()
      .optional()
      .transform((s, ctx) => {
        if (s === undefined) return undefined;
        const urls = s.split(',').map((part) => part.trim());
        for (const url of urls) {
          if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
            ctx.addIssue({ code: 'custom', message: `${JSON.stringify(url)} is not an http(s) database URL` });
            return z.NEVER;
          }
        }
        if (new Set(urls).size !== urls.length) {
          ctx.addIssue({ code: 'custom', message: 'a database is listed twice' });
          return z.NEVER;
        }
        return urls as readonly string[];
      }),
    'set FIREBASE_DATABASE_URLS to the database URLs, comma-separated, e.g. https://p-default-rtdb.firebaseio.com,https://p-two.firebaseio.com (keep their order and spelling when adding one), or unset it and set FIREBASE_DATABASE_URL',
  ),
  FIREBASE_DATABASE_EMULATOR_HOST: knob(
    z.string().regex(/^[^:/\s]+:\d+$/, { error: 'expected host:port' }).optional(),
    'set FIREBASE_DATABASE_EMULATOR_HOST to host:port of the emulator, e.g. 127.0.0.1:9000, or unset it',
  ),
  FIRESTORE_EMULATOR_HOST: knob(
    z.string().regex(/^[^:/\s]+:\d+$/, { error: 'expected host:port' }).optional(),
    'set FIRESTORE_EMULATOR_HOST to host:port of the emulator, e.g. 127.0.0.1:8081, or unset it',
  ),
  GOOGLE_CLOUD_PROJECT: knob(z.string().optional(), 'set GOOGLE_CLOUD_PROJECT to your project id'),
  REDIS_URL: knob(z.string().optional(), 'set REDIS_URL=redis://[:password@]host:port'),
  /** Wins over REDIS_URL when both are set: a mounted secret is the deliberate choice, a stray variable is not. */
  REDIS_URL_FILE: knob(z.string().optional(), 'set REDIS_URL_FILE to a file holding the Redis URL'),
  /**
   * Braces are refused apart, with why: in a cluster firelimit itself puts the hash tag around each
   * limited key, so a tag in the prefix would put every key of every token on one shard.
   */
  REDIS_KEY_PREFIX: knob(
    z
      .string()
      .refine((s) => !/[{}]/.test(s), { error: 'a hash tag ({...}) may not be part of the prefix: firelimit tags each limited key itself ({namespace:key} after the prefix), so one decision stays on one Redis Cluster shard while tokens spread over all; a tag in the prefix would put every key on one shard' })
      .regex(/^[A-Za-z0-9:_-]{0,64}$/, { error: 'expected up to 64 characters of [A-Za-z0-9:_-]' })
      .default('firelimit:'),
    'set REDIS_KEY_PREFIX to a short prefix of [A-Za-z0-9:_-] without braces, such as "firelimit:", so deployments can share one Redis',
  ),
  REDIS_MODE: knob(
    z.enum(['standalone', 'cluster'], { error: 'expected standalone or cluster' }).default('standalone'),
    'set REDIS_MODE to standalone (one Redis, or a primary behind one address) or cluster (Redis Cluster; REDIS_URL may then list several seed nodes, comma-separated)',
  ),
  REDIS_TLS_CA_FILE: knob(z.string().optional(), 'set REDIS_TLS_CA_FILE to a readable PEM file of the CA that signed your managed Redis\'s certificate (with a rediss:// REDIS_URL), or unset it'),
  /** Only read when the backend is sqlite; relative paths resolve against the working directory, as TOKENS_FILE. */
  SQLITE_PATH: knob(
    z.string().min(1, { error: 'expected a file path' }).default('.firelimit/limits.sqlite'),
    'set SQLITE_PATH to a file in a writable directory on a local disk (every process sharing the counters names the same file), e.g. .firelimit/limits.sqlite',
  ),
  TOKEN_STORE: knob(
    z.enum(['file', 'firestore'], { error: 'expected file or firestore' }).default('file'),
    'set TOKEN_STORE to file (local development) or firestore (production)',
  ),
  TOKENS_FILE: knob(z.string().default('.firelimit/tokens.json'), 'set TOKENS_FILE to a writable file path'),
  LIMIT_OVERRIDES_POLL_MS: knob(
    durationMs(100, 10_000).default(5000),
    'set LIMIT_OVERRIDES_POLL_MS to how often each instance reads the runtime limit overrides, from 100 to 10000 ms (a change applies within it), e.g. 5000',
  ),
  TOKEN_CACHE_TTL_MS: knob(
    positiveInt('a positive whole number of milliseconds').max(60_000, { error: 'expected at most 60000 ms, so revocations take effect within a minute' }).default(30_000),
    'set TOKEN_CACHE_TTL_MS to how long a verified token is cached, at most 60000',
  ),
  /**
   * Unset: 1 when K_SERVICE says we run on Cloud Run, else 0. Trusting a hop
   * that is not there lets any client choose its own address.
   */
  TRUST_PROXY_HOPS: knob(
    wholeNumber('a whole number of proxy hops', 0, 10).optional(),
    'set TRUST_PROXY_HOPS to the number of proxies in front of the service (0 with none, 1 on Cloud Run), or unset it to derive it from K_SERVICE',
  ),
  /** Set by Cloud Run to the service name; read only to tell that a proxy (Google's front end) is in front of us. */
  K_SERVICE: knob(z.string().optional(), 'K_SERVICE is set by Cloud Run; outside it, unset it or set TRUST_PROXY_HOPS explicitly'),
  ALLOWED_HOSTS: knob(
    allowedHosts,
    'set ALLOWED_HOSTS to a comma list of Host header values, e.g. "my-svc-abc123-ew.a.run.app", or to * alone to accept any Host',
  ),
  MAX_BODY_BYTES: knob(
    positiveInt('a positive whole number of bytes').max(10_485_760, { error: 'expected at most 10485760 bytes' }).default(1_048_576),
    'set MAX_BODY_BYTES to the largest request body accepted, e.g. 1048576',
  ),
  HTTP_HEADERS_TIMEOUT_MS: knob(
    durationMs(1000, 120_000).default(10_000),
    'set HTTP_HEADERS_TIMEOUT_MS to how long a client may take to send its request headers, e.g. 10000',
  ),
  HTTP_REQUEST_TIMEOUT_MS: knob(
    durationMs(1000, 600_000).default(30_000),
    'set HTTP_REQUEST_TIMEOUT_MS to how long a client may take to send a whole request, e.g. 30000 (not less than HTTP_HEADERS_TIMEOUT_MS)',
  ),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: knob(
    durationMs(1000, 600_000).default(5000),
    'set HTTP_KEEP_ALIVE_TIMEOUT_MS to how long an idle connection is kept open, e.g. 5000',
  ),
  MAX_CONNECTIONS: knob(
    wholeNumber('a whole number of connections (0 = no cap)', 0, 1_000_000).default(0),
    'set MAX_CONNECTIONS to the most open connections per instance, e.g. 1000, or 0 for no cap',
  ),
  MAX_BATCH_MESSAGES: knob(
    wholeNumber('a whole number of messages', 1, 1000).default(100),
    'set MAX_BATCH_MESSAGES to the most JSON-RPC messages one batch may carry, from 1 to 1000, e.g. 100',
  ),
  UNAUTHENTICATED_PER_MINUTE: knob(
    positiveInt('a positive whole number of requests per minute').max(1_000_000_000).default(60),
    'set UNAUTHENTICATED_PER_MINUTE to the requests without a valid token a client address may make per minute per instance, e.g. 60',
  ),
  REFUSED_REQUESTS_PER_MINUTE: knob(
    positiveInt('a positive whole number of requests per minute').max(1_000_000_000).default(60),
    'set REFUSED_REQUESTS_PER_MINUTE to the malformed, oversized or unsupported requests a token may send per minute per instance, e.g. 60',
  ),
  UPSTREAM_MCP_URL: knob(
    upstreamUrl,
    'set UPSTREAM_MCP_URL to the Streamable HTTP endpoint of the MCP server to front, e.g. http://127.0.0.1:3000/mcp, without credentials in it (use UPSTREAM_MCP_AUTHORIZATION), or unset it',
    true,
  ),
  UPSTREAM_MCP_AUTHORIZATION: knob(z.string().optional(), 'set UPSTREAM_MCP_AUTHORIZATION to the Authorization header value the upstream expects, e.g. "Bearer <key>", or unset it'),
  /** Wins over UPSTREAM_MCP_AUTHORIZATION when both are set, like REDIS_URL_FILE. */
  UPSTREAM_MCP_AUTHORIZATION_FILE: knob(z.string().optional(), 'set UPSTREAM_MCP_AUTHORIZATION_FILE to a readable file (a mounted secret) holding the Authorization value, or unset it'),
  UPSTREAM_TIMEOUT_MS: knob(
    durationMs(100, 600_000).default(30_000),
    'set UPSTREAM_TIMEOUT_MS to how long one upstream call may take, in ms, e.g. 30000',
  ),
  UPSTREAM_LIST_TTL_MS: knob(
    durationMs(0, 3_600_000).default(60_000),
    "set UPSTREAM_LIST_TTL_MS to how long the upstream's tool, resource and prompt lists are cached, in ms, e.g. 60000 (0: ask every time)",
  ),
  UPSTREAM_SESSIONS_MAX: knob(
    wholeNumber('a number of sessions', 1, 100_000).default(256),
    "set UPSTREAM_SESSIONS_MAX to the most callers' sessions kept open on the upstream at once, e.g. 256; past it the least recently used is ended",
  ),
  UPSTREAM_LISTS: knob(
    z.enum(['shared', 'per-caller'], { error: 'expected shared or per-caller' }).default('shared'),
    "set UPSTREAM_LISTS to shared (one fetch of each upstream list for every caller) or per-caller (each token's lists fetched on its own upstream session, for an upstream that lists different things to different callers)",
  ),
  UPSTREAM_SESSION_IDLE_MS: knob(
    durationMs(1000, 86_400_000).default(300_000),
    "set UPSTREAM_SESSION_IDLE_MS to how long a caller's upstream session may go unused before it is ended, in ms, e.g. 300000",
  ),
  UPSTREAM_RATE: knob(upstreamRate, 'set UPSTREAM_RATE to the calls the upstream allows per window, e.g. 15/min or 2/s, or unset it for no upstream quota'),
  UPSTREAM_HEADROOM: knob(
    z.number({ error: 'expected a fraction' }).gt(0, { error: 'expected a fraction above 0 and at most 1' }).max(1, { error: 'expected a fraction above 0 and at most 1' })
      .refine(hasAtMostFourDecimals, { error: 'expected at most 4 decimals' }).default(0.9),
    'set UPSTREAM_HEADROOM to the share of UPSTREAM_RATE to use, e.g. 0.9',
  ),
  UPSTREAM_MAX_WAIT_MS: knob(
    durationMs(0, 604_800_000).default(60_000),
    'set UPSTREAM_MAX_WAIT_MS to the farthest slot handed out, in ms, e.g. 60000; callers who would wait longer are rejected',
  ),
  UPSTREAM_DAILY_BUDGET: knob(
    positiveInt('a positive whole number of calls per UTC day').max(1_000_000_000).optional(),
    'set UPSTREAM_DAILY_BUDGET to the most upstream calls per UTC day, e.g. 10000, or unset it for no daily budget',
  ),
  UPSTREAM_GRACE_MS: knob(
    durationMs(0, 60_000).default(1000),
    'set UPSTREAM_GRACE_MS to how late after its slot a reserved caller may come back, in ms, e.g. 1000; each reservation keeps this much of the quota unused',
  ),
  UPSTREAM_HOLD_MS: knob(
    durationMs(0, 60_000).default(2000),
    'set UPSTREAM_HOLD_MS to the longest a call is held for its slot, in ms, e.g. 2000 (0: never hold; answer "reserved")',
  ),
  /** Unset: a quarter of the reservations that fit within the longest wait (defaultReservationsPerHolder). */
  UPSTREAM_MAX_RESERVATIONS_PER_TOKEN: knob(
    positiveInt('a positive whole number of reservations').max(100).optional(),
    'set UPSTREAM_MAX_RESERVATIONS_PER_TOKEN to the most slots one token may hold waiting on an upstream quota, from 1 to 100, e.g. 10, or unset it for a quarter of the queue',
  ),
  AUTH_ISSUERS_FILE: knob(
    z.string().optional(),
    'set AUTH_ISSUERS_FILE to a readable JSON file of trusted token issuers (README, "Signing in with your identity provider"), or unset it to accept only flk_ tokens',
  ),
  FIREBASE_AUTH_PROJECT_ID: knob(
    z.string().regex(/^[a-z][a-z0-9-]{4,61}[a-z0-9]$/, { error: 'expected a Firebase project id such as "my-project"' }).optional(),
    'set FIREBASE_AUTH_PROJECT_ID to the project whose Firebase Authentication ID tokens are accepted, e.g. my-project, or unset it',
  ),
  METRICS_PORT: knob(port.optional(), 'set METRICS_PORT to a port for /metrics (not the public PORT), or unset it'),
  METRICS_HOST: knob(
    z
      .string()
      .trim()
      .refine((value) => isIP(value) !== 0, { error: 'expected an IP address, e.g. 127.0.0.1, ::1 or 0.0.0.0' })
      .default('127.0.0.1'),
    'set METRICS_HOST to the address /metrics listens on: 127.0.0.1 (the default: this host, and sidecars on Cloud Run), ::1, or 0.0.0.0 for every interface',
  ),
  LOG_FORMAT: knob(z.enum(['json', 'pretty'], { error: 'expected json or pretty' }).optional(), 'set LOG_FORMAT to json or pretty'),
} as const;

export type KnobValues = { [K in keyof typeof knobs]: z.output<(typeof knobs)[K]['schema']> };
