import path from 'node:path';
import { BASIS_POINTS, DEFAULT_UPSTREAM_MAX_RESERVATIONS, defaultReservationsPerHolder, resolveUpstreamPolicy } from '../library/quota';
import type { ConfigProblem } from './config-error';
import type { KnobValues } from './knobs';
import { NO_UPSTREAM_COSTS, type UpstreamCosts } from './upstream-costs';
import type { UpstreamToolQuotaEntry } from './upstream-section';

/** UPSTREAM_MCP_URL and what goes with it: the server firelimit fronts, and the quotas in front of its calls. */
export interface UpstreamConfig {
  readonly url: string;
  /** A secret: the Authorization value sent upstream; never logged, never echoed. */
  readonly authorization: string | undefined;
  readonly timeoutMs: number;
  readonly listTtlMs: number;
  /** UPSTREAM_SESSIONS_MAX: the most callers' upstream sessions open at once (docs/adr/0050). */
  readonly sessionsMax: number;
  /** UPSTREAM_SESSION_IDLE_MS: a caller's upstream session unused this long is ended. */
  readonly sessionIdleMs: number;
  /** UPSTREAM_LISTS: one cached copy of each list for every caller (`shared`, default) or one per token (docs/adr/0050). */
  readonly lists?: 'shared' | 'per-caller';
  /** UPSTREAM_RATE set: the shared quota every forwarded tools/call is scheduled on. */
  readonly quota: UpstreamQuotaConfig | undefined;
  /** The limits file's `upstream.tools`: a tool's own quota, scheduled as well as the shared one (docs/adr/0037). */
  readonly toolQuotas: ReadonlyMap<string, UpstreamQuotaConfig>;
  /** The limits file's `upstream.costs`: what a forwarded request costs on the shared quota. Default: every one 1. */
  readonly costs?: UpstreamCosts;
}

export interface UpstreamQuotaConfig {
  readonly limit: number;
  readonly windowMs: number;
  readonly headroom: number;
  readonly maxWaitMs: number;
  readonly dailyBudget: number | undefined;
  /** How late a reserved caller may claim its slot; the cursor skips this much after each reservation (docs/adr/0032). */
  readonly graceMs: number;
  /** A slot this near is waited for in the request; farther, the caller is told to come back. */
  readonly holdMs: number;
  /** UPSTREAM_MAX_RESERVATIONS_PER_TOKEN; undefined: a quarter of the queue (docs/adr/0053). */
  readonly maxReservationsPerToken?: number;
}

const UPSTREAM_ONLY_KNOBS = ['UPSTREAM_MCP_AUTHORIZATION', 'UPSTREAM_MCP_AUTHORIZATION_FILE', 'UPSTREAM_RATE', 'UPSTREAM_DAILY_BUDGET'] as const;

/** One call every this many ms at most: windowMs / (limit × headroom), rounded, as /developers and firelimit://limits show it. */
export function upstreamIntervalMs(quota: UpstreamQuotaConfig): number {
  return Math.round(quota.windowMs / (quota.limit * quota.headroom));
}

/** The most waiting slots one token may hold on this quota: UPSTREAM_MAX_RESERVATIONS_PER_TOKEN, else a quarter of the queue. */
export function reservationsPerTokenOf(quota: UpstreamQuotaConfig): number {
  const headroomBp = Math.round(quota.headroom * BASIS_POINTS);
  return quota.maxReservationsPerToken ?? defaultReservationsPerHolder(quota.limit, quota.windowMs, headroomBp, quota.maxWaitMs, quota.graceMs, DEFAULT_UPSTREAM_MAX_RESERVATIONS);
}

/**
 * Some quota in front of forwarded calls, for what every quota shares
 * (UPSTREAM_HOLD_MS, UPSTREAM_GRACE_MS): the shared one, else a tool's;
 * undefined when calls are not held to any.
 */
export function anyUpstreamQuota(upstream: UpstreamConfig): UpstreamQuotaConfig | undefined {
  return upstream.quota ?? upstream.toolQuotas.values().next().value;
}

/** The gateway's config, or undefined without UPSTREAM_MCP_URL; problems are pushed, not thrown. */
export function upstreamOf(
  v: KnobValues,
  cwd: string,
  readFile: (filePath: string) => string,
  toolEntries: ReadonlyMap<string, UpstreamToolQuotaEntry>,
  problems: ConfigProblem[],
  costs: UpstreamCosts = NO_UPSTREAM_COSTS,
): UpstreamConfig | undefined {
  if (v.UPSTREAM_MCP_URL === undefined) {
    if (toolEntries.size > 0 || costs.methods.size > 0 || costs.tools.size > 0) {
      problems.push({ knob: 'LIMITS_FILE', problem: `${toolEntries.size > 0 ? 'upstream.tools' : 'upstream.costs'}: set, but UPSTREAM_MCP_URL is not`, fix: 'set UPSTREAM_MCP_URL to the MCP server to front, or remove "upstream" from LIMITS_FILE' });
    }
    // A credential or quota with nothing to front is a typo in the deployment, not a setting to ignore.
    for (const name of UPSTREAM_ONLY_KNOBS) {
      if (v[name] !== undefined) problems.push({ knob: name, problem: 'set, but UPSTREAM_MCP_URL is not', fix: `set UPSTREAM_MCP_URL to the MCP server to front, or unset ${name}` });
    }
    return undefined;
  }
  let authorization = v.UPSTREAM_MCP_AUTHORIZATION_FILE === undefined ? v.UPSTREAM_MCP_AUTHORIZATION : undefined;
  if (v.UPSTREAM_MCP_AUTHORIZATION_FILE !== undefined) {
    try {
      authorization = readFile(path.resolve(cwd, v.UPSTREAM_MCP_AUTHORIZATION_FILE)).trim();
    } catch {
      problems.push({ knob: 'UPSTREAM_MCP_AUTHORIZATION_FILE', problem: 'the file cannot be read', fix: 'point UPSTREAM_MCP_AUTHORIZATION_FILE at a readable file holding the Authorization value (a mounted secret), or unset it' });
    }
    if (authorization === '') {
      problems.push({ knob: 'UPSTREAM_MCP_AUTHORIZATION_FILE', problem: 'the file is empty', fix: 'write the Authorization value (e.g. "Bearer <key>") into the file, or unset UPSTREAM_MCP_AUTHORIZATION_FILE' });
    }
  }
  if (authorization !== undefined && /[\r\n]/.test(authorization)) {
    // The value is not echoed: it is a secret.
    problems.push({ knob: v.UPSTREAM_MCP_AUTHORIZATION_FILE === undefined ? 'UPSTREAM_MCP_AUTHORIZATION' : 'UPSTREAM_MCP_AUTHORIZATION_FILE', problem: 'the value holds a line break', fix: 'set one header value on one line, e.g. "Bearer <key>"' });
  }
  const rate = v.UPSTREAM_RATE;
  const quotaOf = (entry: UpstreamToolQuotaEntry | undefined): UpstreamQuotaConfig | undefined =>
    entry === undefined
      ? undefined
      : {
          limit: entry.limit,
          windowMs: entry.windowMs,
          headroom: entry.headroom ?? v.UPSTREAM_HEADROOM,
          maxWaitMs: entry.maxWaitMs ?? v.UPSTREAM_MAX_WAIT_MS,
          dailyBudget: entry.dailyBudget,
          graceMs: v.UPSTREAM_GRACE_MS,
          holdMs: v.UPSTREAM_HOLD_MS,
          ...(v.UPSTREAM_MAX_RESERVATIONS_PER_TOKEN === undefined ? {} : { maxReservationsPerToken: v.UPSTREAM_MAX_RESERVATIONS_PER_TOKEN }),
        };
  const toolQuotas = new Map<string, UpstreamQuotaConfig>();
  for (const [tool, entry] of toolEntries) {
    const quota = quotaOf(entry) as UpstreamQuotaConfig;
    try {
      resolveUpstreamPolicy(quota);
      toolQuotas.set(tool, quota);
    } catch (error) {
      problems.push({ knob: 'LIMITS_FILE', problem: `upstream.tools.${tool}: ${(error as Error).message.replace(/^upstream quota: /, '')}`, fix: 'correct that quota in LIMITS_FILE (docs/limits-file.md)' });
    }
  }
  return {
    url: v.UPSTREAM_MCP_URL,
    authorization,
    timeoutMs: v.UPSTREAM_TIMEOUT_MS,
    listTtlMs: v.UPSTREAM_LIST_TTL_MS,
    sessionsMax: v.UPSTREAM_SESSIONS_MAX,
    sessionIdleMs: v.UPSTREAM_SESSION_IDLE_MS,
    lists: v.UPSTREAM_LISTS,
    quota: quotaOf(rate === undefined ? undefined : { ...rate, dailyBudget: v.UPSTREAM_DAILY_BUDGET }),
    toolQuotas,
    costs,
  };
}

