import { parseArgs } from 'node:util';
import { MINUTE_MS, type Config } from '../config/config';
import { parseDuration } from '../config/limits-file';
import { ALGORITHM_NAMES, type AlgorithmName } from '../library';
import { overrideIdOf, type OverrideTarget } from '../policies/limit-override';
import { servedToolNames } from '../service/served-tools';
import { createOverrideStore } from '../tokens/create-override-store';
import { createTokenStore } from '../tokens/create-token-store';
import { TOOL_NAME } from '../library/mcp';
import { CorruptOverrideError, parseOverrideRecord, policiesOf, type LimitOverrideRecord, type LimitOverrideStore, type SkippedOverride } from '../tokens/limit-override-record';
import type { TokenStore } from '../tokens/token-record';
import { SUBJECT_ID_PATTERN, subjectCallerId } from '../tokens/subject-id';
import { configOrReport, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, runAsMain, type CliStreams } from './run-as-main';

/** The longest --expires: ten years. Longer is "until unset" (leave --expires out); past a Date's range every instance once stopped at its next poll. */
export const MAX_EXPIRES = '3650d';
const MAX_EXPIRES_MS = 3650 * 86_400_000;

export const LIMITS_USAGE = `Usage: npm run limits -- <command> [options]

Commands:
  set (--token ID | --tier NAME) [--tool NAME] --per-minute N [--algorithm A] [--burst B] [--expires 24h] [--shadow] [--json]
  set --issuer URL --subject SUB ...
      A signed-in caller (AUTH_ISSUERS_FILE, FIREBASE_AUTH_PROJECT_ID) is named by its
      issuer and subject (a Firebase uid), or by its id (--token sub_..., as whoami and
      the logs show it).
  set --tool NAME --per-minute N ...
      Override a limit at runtime: a token's or a tier's figure, or (with --tool) the
      limit on one tool's calls, for one token, one tier or every token. Every running
      instance applies it within LIMIT_OVERRIDES_POLL_MS (5 s by default). --expires
      (30s, 10m, 24h, 7d; at most ${MAX_EXPIRES}) makes it vanish by itself; --shadow decides
      and reports it without enforcing it. With UPSTREAM_MCP_URL set (a gateway), --tool
      takes any well-formed tool name: only the upstream knows its tools.
  list [--json]
      The overrides in force.
  unset (--token ID | --issuer URL --subject SUB | --tier NAME | --tool NAME) [--tool NAME] [--json]
      Remove an override.

Algorithms: ${ALGORITHM_NAMES.join(', ')} (default fixed-window); --burst only for the buckets.
The store is the token store's: TOKEN_STORE (file | firestore) and TOKENS_FILE.
With --json, stdout holds exactly one JSON value.
`;

export interface LimitsCliDeps {
  readonly cwd?: string;
  readonly clock?: () => number;
  /** Replaces store selection (tests); default: the token store's (TOKEN_STORE). */
  readonly openStores?: (config: Config) => Promise<OpenedStores>;
  /** Default: the tools firelimit itself serves (in gateway mode, any well-formed name besides). */
  readonly toolNames?: readonly string[];
}

export interface OpenedStores {
  readonly overrides: LimitOverrideStore;
  readonly tokens: TokenStore;
  close(): Promise<void>;
}

class InputError extends Error {}

interface Parsed {
  readonly command: 'set' | 'list' | 'unset';
  readonly target: OverrideTarget;
  readonly perMinute?: number;
  readonly algorithm: AlgorithmName;
  readonly burst?: number;
  readonly expiresMs?: number;
  readonly shadow: boolean;
  readonly json: boolean;
}

/** The whole command as a function, for in-process tests; returns the exit code. Bad input writes nothing. */
export async function runLimitsCli(argv: readonly string[], env: NodeJS.ProcessEnv, io: CliStreams, deps: LimitsCliDeps = {}): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    (command === undefined ? io.stderr : io.stdout).write(LIMITS_USAGE);
    return command === undefined ? EXIT_USAGE : EXIT_OK;
  }
  const operator = configOrReport(env, deps.cwd, io);
  if (operator === undefined) return EXIT_FAILURE;
  const { config } = operator;
  const tools: ToolNames = { own: deps.toolNames ?? servedToolNames(), gateway: operator.gateway };
  let args: Parsed;
  try {
    args = parse(command, rest, config, tools);
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    io.stderr.write(`${error.message}\n\n${LIMITS_USAGE}`);
    return EXIT_USAGE;
  }
  const clock = deps.clock ?? Date.now;
  const opened = await (deps.openStores ?? openConfiguredStores)(config);
  try {
    return await run(args, opened, config, tools, clock, io);
  } catch (error) {
    if (error instanceof InputError) {
      io.stderr.write(`${error.message}\n`);
      return EXIT_USAGE;
    }
    io.stderr.write(`limits ${args.command} failed: ${error instanceof CorruptOverrideError ? error.message : ((error as Error).message ?? String(error))}\n`);
    return EXIT_FAILURE;
  } finally {
    await opened.close();
  }
}

/** The tool names --tool may give: firelimit's own, and in gateway mode any well-formed one (the upstream's). */
interface ToolNames {
  readonly own: readonly string[];
  readonly gateway: boolean;
}

function parse(command: string, rest: readonly string[], config: Config, tools: ToolNames): Parsed {
  if (command !== 'set' && command !== 'list' && command !== 'unset') throw new InputError(`Unknown command ${JSON.stringify(command)}.`);
  let values;
  try {
    ({ values } = parseArgs({
      args: [...rest],
      options: {
        token: { type: 'string' },
        issuer: { type: 'string' },
        subject: { type: 'string' },
        tier: { type: 'string' },
        tool: { type: 'string' },
        'per-minute': { type: 'string' },
        algorithm: { type: 'string' },
        burst: { type: 'string' },
        expires: { type: 'string' },
        shadow: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
      allowPositionals: false,
      strict: true,
    }));
  } catch (error) {
    throw new InputError((error as Error).message);
  }
  const allowed = { set: ['token', 'issuer', 'subject', 'tier', 'tool', 'per-minute', 'algorithm', 'burst', 'expires', 'shadow', 'json'], list: ['json', 'shadow'], unset: ['token', 'issuer', 'subject', 'tier', 'tool', 'json', 'shadow'] }[command];
  const misplaced = Object.keys(values).find((flag) => !allowed.includes(flag) || (flag === 'shadow' && command !== 'set' && values.shadow === true));
  if (misplaced !== undefined) throw new InputError(`${command} does not take --${misplaced}.`);
  const callerId = signedInCallerId(values, config);
  const target: OverrideTarget = {
    ...(callerId !== undefined ? { tokenId: callerId } : {}),
    ...(values.tier !== undefined ? { tier: values.tier } : {}),
    ...(values.tool !== undefined ? { tool: values.tool } : {}),
  };
  const base = { command: command as Parsed['command'], target, algorithm: 'fixed-window' as AlgorithmName, shadow: values.shadow === true, json: values.json === true };
  if (command === 'list') return base;
  if (target.tokenId !== undefined && target.tier !== undefined) throw new InputError('Give --token or --tier, not both.');
  if (target.tokenId === undefined && target.tier === undefined && target.tool === undefined) throw new InputError(`${command} needs --token ID, --tier NAME or --tool NAME.`);
  if (target.tier !== undefined && !config.rateLimit.tiers.some((t) => t.name === target.tier)) {
    throw new InputError(`No tier is named ${JSON.stringify(target.tier)}; tiers: ${config.rateLimit.tiers.map((t) => t.name).join(', ')}.`);
  }
  if (target.tool !== undefined && !tools.own.includes(target.tool)) {
    if (!tools.gateway) {
      throw new InputError(
        `No tool is named ${JSON.stringify(target.tool)}; tools served: ${tools.own.join(', ')}. For an upstream tool (a gateway), run this with UPSTREAM_MCP_URL set as the service has it.`,
      );
    }
    if (!TOOL_NAME.test(target.tool)) throw new InputError(`--tool ${JSON.stringify(target.tool)} is not a tool name (1-128 of A-Z a-z 0-9 _ - .).`);
  }
  if (command === 'unset') return base;

  const perMinute = wholeNumber(values['per-minute'], '--per-minute');
  if (perMinute === undefined) throw new InputError('set needs --per-minute N (a whole number of calls per minute, at least 1).');
  const algorithm = values.algorithm ?? 'fixed-window';
  if (!(ALGORITHM_NAMES as readonly string[]).includes(algorithm)) throw new InputError(`Unknown algorithm ${JSON.stringify(algorithm)}; use one of ${ALGORITHM_NAMES.join(', ')}.`);
  const burst = wholeNumber(values.burst, '--burst');
  if (burst !== undefined && algorithm !== 'token-bucket' && algorithm !== 'leaky-bucket') throw new InputError(`--burst is for token-bucket and leaky-bucket only; the algorithm is ${algorithm}.`);
  let expiresMs: number | undefined;
  if (values.expires !== undefined) {
    expiresMs = parseDuration(values.expires);
    if (expiresMs === undefined) throw new InputError(`--expires ${JSON.stringify(values.expires)} is not a duration such as 30s, 10m, 24h or 7d.`);
    if (expiresMs > MAX_EXPIRES_MS) {
      throw new InputError(`--expires ${JSON.stringify(values.expires)} is longer than the longest accepted, ${MAX_EXPIRES}; leave --expires out for an override that lasts until unset.`);
    }
  }
  const parsed: Parsed = { ...base, perMinute, algorithm: algorithm as AlgorithmName, ...(burst !== undefined ? { burst } : {}), ...(expiresMs !== undefined ? { expiresMs } : {}) };
  try {
    policiesOf({ target, algorithm: parsed.algorithm, limit: perMinute, windowMs: MINUTE_MS, ...(burst !== undefined ? { burst } : {}) });
  } catch (error) {
    throw new InputError((error as Error).message.replace(/^override: /, ''));
  }
  return parsed;
}

/** --token ID, or the id of the signed-in caller --issuer/--subject name (ADR 0054). */
function signedInCallerId(values: { token?: string; issuer?: string; subject?: string }, config: Config): string | undefined {
  if (values.issuer === undefined && values.subject === undefined) return values.token;
  if (values.token !== undefined) throw new InputError('Give --token or --issuer with --subject, not both.');
  if (values.issuer === undefined || values.subject === undefined || values.subject === '') throw new InputError('--issuer and --subject go together: the issuer URL (iss) and the user id (sub) in its tokens.');
  const issuers = config.auth.issuers.map((issuer) => issuer.issuer);
  if (!issuers.includes(values.issuer)) {
    throw new InputError(`No trusted issuer is ${JSON.stringify(values.issuer)}; ${issuers.length === 0 ? 'none is configured (AUTH_ISSUERS_FILE, FIREBASE_AUTH_PROJECT_ID)' : `issuers: ${issuers.join(', ')}`}.`);
  }
  return subjectCallerId(values.issuer, values.subject);
}

function wholeNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1) throw new InputError(`${flag} ${JSON.stringify(text)} must be a whole number of at least 1.`);
  return Number(text);
}

async function run(args: Parsed, stores: OpenedStores, config: Config, tools: ToolNames, clock: () => number, io: CliStreams): Promise<number> {
  const out = (value: unknown) => io.stdout.write(`${JSON.stringify(value)}\n`);
  const nowMs = clock();
  switch (args.command) {
    case 'list': {
      const { records, skipped } = await stores.overrides.list(nowMs);
      reportSkipped(skipped, io);
      if (args.json) out({ overrides: records.map(publicView), ...(skipped.length > 0 ? { skipped } : {}) });
      else io.stdout.write(records.length === 0 ? 'No limit overrides in force.\n' : `${records.map(describe).join('\n')}\n`);
      return EXIT_OK;
    }
    case 'set': {
      // A signed-in caller (sub_...) is stored nowhere: its id is derived from (iss, sub).
      if (args.target.tokenId !== undefined && !SUBJECT_ID_PATTERN.test(args.target.tokenId)) {
        const token = await stores.tokens.get(args.target.tokenId);
        if (token === undefined || token.revokedAtMs !== null) throw new InputError(`No ${token === undefined ? '' : 'live '}token with id ${JSON.stringify(args.target.tokenId)}${token === undefined ? '' : ' (it is revoked)'}; list them with npm run token -- list.`);
      }
      const record: LimitOverrideRecord = {
        id: overrideIdOf(args.target),
        target: args.target,
        algorithm: args.algorithm,
        limit: args.perMinute as number,
        windowMs: MINUTE_MS,
        ...(args.burst !== undefined ? { burst: args.burst } : {}),
        shadow: args.shadow,
        setAtMs: nowMs,
        expiresAtMs: args.expiresMs === undefined ? null : nowMs + args.expiresMs,
      };
      try {
        // The check every instance runs on what it reads: what it would skip is never written.
        parseOverrideRecord(record, 'override');
      } catch (error) {
        if (!(error instanceof CorruptOverrideError)) throw error;
        throw new InputError(`${error.message.replace(/^override: /, 'The service could not load this override: ')}; nothing was written.`);
      }
      await stores.overrides.put(record);
      const upstreamTool = record.target.tool !== undefined && !tools.own.includes(record.target.tool);
      if (args.json) out({ ...publicView(record), ...(upstreamTool ? { upstreamTool: true } : {}) });
      else {
        io.stdout.write(`Set ${describe(record)}.\nEvery instance applies it within ${Math.round(config.tokens.overridesPollMs / 1000)} s (LIMIT_OVERRIDES_POLL_MS).\n`);
        if (upstreamTool) io.stdout.write(`${JSON.stringify(record.target.tool)} is taken as an upstream tool (UPSTREAM_MCP_URL is set): this command cannot ask the upstream, so check the name against its tools/list.\n`);
      }
      return EXIT_OK;
    }
    case 'unset': {
      const id = overrideIdOf(args.target);
      const removed = await stores.overrides.remove(id, nowMs);
      if (!removed) io.stderr.write(`No override for ${id}.\n`);
      if (args.json) out({ override: id, removed });
      else if (removed) io.stdout.write(`Removed the override for ${id}.\n`);
      return removed ? EXIT_OK : EXIT_FAILURE;
    }
  }
}

/** Records the service skips are said on stderr, never left for an operator to discover in the logs. */
function reportSkipped(skipped: readonly SkippedOverride[], io: CliStreams): void {
  for (const entry of skipped) {
    io.stderr.write(`Skipped, the service cannot load it: ${entry.where}: ${entry.problem}. Set it again (limits set), remove it (limits unset) or correct it there.\n`);
  }
}

function publicView(record: LimitOverrideRecord): Record<string, unknown> {
  return {
    override: record.id,
    target: record.target,
    algorithm: record.algorithm,
    perMinute: record.limit,
    ...(record.burst !== undefined ? { burst: record.burst } : {}),
    shadow: record.shadow,
    setAt: new Date(record.setAtMs).toISOString(),
    expiresAt: record.expiresAtMs === null ? null : new Date(record.expiresAtMs).toISOString(),
  };
}

function describe(record: LimitOverrideRecord): string {
  const burst = record.burst === undefined ? '' : ` burst ${record.burst}`;
  const expires = record.expiresAtMs === null ? '' : `, until ${new Date(record.expiresAtMs).toISOString()}`;
  return `${record.id}: ${record.limit} a minute (${record.algorithm}${burst})${record.shadow ? ', shadow' : ''}${expires}`;
}

async function openConfiguredStores(config: Config): Promise<OpenedStores> {
  if (config.tokens.store === 'file') {
    const [overrides, tokens] = await Promise.all([createOverrideStore(config), createTokenStore(config)]);
    return { overrides, tokens, close: async () => void (await Promise.all([overrides.close(), tokens.close()])) };
  }
  const { createFirebaseApp, closeFirebaseApp } = await import('../service/firebase-app');
  const app = createFirebaseApp(config);
  const [overrides, tokens] = await Promise.all([createOverrideStore(config, { app }), createTokenStore(config, { app })]);
  return {
    overrides,
    tokens,
    close: async () => {
      await Promise.all([overrides.close(), tokens.close()]);
      await closeFirebaseApp(app);
    },
  };
}

if (require.main === module) runAsMain(runLimitsCli);
