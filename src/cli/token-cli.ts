import { parseArgs } from 'node:util';
import type { Config } from '../config/config';
import { createTokenStore } from '../tokens/create-token-store';
import type { TokenStore } from '../tokens/token-record';
import type { TokenSummary } from '../tokens/token-record-schema';
import { TokenInputError, TokenService } from '../tokens/token-service';
import { configOrReport, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, runAsMain, type CliStreams } from './run-as-main';

export interface TokenCliDeps {
  /** Where a relative TOKENS_FILE resolves; default process.cwd(). */
  readonly cwd?: string;
  /** Replaces store selection (tests); default: TOKEN_STORE from the environment. */
  readonly openStore?: (config: Config) => Promise<OpenedStore>;
  readonly clock?: () => number;
}

export interface OpenedStore {
  readonly store: TokenStore;
  /** Releases the store and anything opened for it (the firebase-admin App), so the process can exit. */
  close(): Promise<void>;
}


export const USAGE = `Usage: npm run token -- <command> [options]

Commands:
  create --name NAME [--tier TIER] [--scopes a,b] [--json]
      Create a token and print its secret (shown this once only).
  list [--json]
      List tokens (ids, names, tiers, scopes, status; never secrets).
  revoke ID [--json]
      Revoke a token; every instance refuses it within the token cache TTL.
  update ID [--tier TIER] [--scopes a,b] [--json]
      Change a token's tier and/or scopes.

The store comes from TOKEN_STORE (file | firestore) and TOKENS_FILE.
With --json, stdout holds exactly one JSON object. From a script, run
npm run --silent token -- ... --json: without --silent, npm prints its own
"> firelimit@... token" banner on stdout before it.
`;

class UsageError extends Error {}

/** The whole CLI as a function, so tests run it in-process; returns the exit code. */
export async function runTokenCli(argv: readonly string[], env: NodeJS.ProcessEnv, io: CliStreams, deps: TokenCliDeps = {}): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    (command === undefined ? io.stderr : io.stdout).write(USAGE);
    return command === undefined ? EXIT_USAGE : EXIT_OK;
  }

  let args: ParsedArgs;
  try {
    args = parseCommand(command, rest);
  } catch (error) {
    io.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
    return EXIT_USAGE;
  }

  const config = configOrReport(env, deps.cwd, io)?.config;
  if (config === undefined) return EXIT_FAILURE;

  const opened = await (deps.openStore ?? openConfiguredStore)(config);
  try {
    const service = new TokenService({ store: opened.store, tiers: config.rateLimit.tiers.map((t) => t.name), clock: deps.clock });
    return await runCommand(service, args, config, io);
  } catch (error) {
    if (error instanceof TokenInputError) {
      io.stderr.write(`${error.message}\n`);
      return EXIT_USAGE;
    }
    io.stderr.write(`token ${args.command} failed: ${(error as Error).message ?? String(error)}\n`);
    return EXIT_FAILURE;
  } finally {
    await opened.close();
  }
}

interface ParsedArgs {
  readonly command: 'create' | 'list' | 'revoke' | 'update';
  readonly id?: string;
  readonly name?: string;
  readonly tier?: string;
  readonly scopes?: string[];
  readonly json: boolean;
}

function parseCommand(command: string, rest: readonly string[]): ParsedArgs {
  const options = {
    name: { type: 'string' },
    tier: { type: 'string' },
    scopes: { type: 'string' },
    json: { type: 'boolean', default: false },
  } as const;
  if (command !== 'create' && command !== 'list' && command !== 'revoke' && command !== 'update') {
    throw new UsageError(`Unknown command ${JSON.stringify(command)}.`);
  }
  let parsed;
  try {
    parsed = parseArgs({ args: [...rest], options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const allowed: Record<ParsedArgs['command'], { flags: string[]; positionals: number }> = {
    create: { flags: ['name', 'tier', 'scopes', 'json'], positionals: 0 },
    list: { flags: ['json'], positionals: 0 },
    revoke: { flags: ['json'], positionals: 1 },
    update: { flags: ['tier', 'scopes', 'json'], positionals: 1 },
  };
  const rule = allowed[command];
  const misplaced = Object.keys(values).find((flag) => !rule.flags.includes(flag) && flag !== 'json');
  if (misplaced !== undefined) throw new UsageError(`${command} does not take --${misplaced}.`);
  if (positionals.length !== rule.positionals) {
    throw new UsageError(rule.positionals === 0 ? `${command} takes no arguments, got ${positionals.join(' ')}.` : `${command} needs exactly one token id.`);
  }
  if (command === 'create' && (values.name === undefined || values.name.trim() === '')) throw new UsageError('create needs --name NAME.');
  if (command === 'update' && values.tier === undefined && values.scopes === undefined) throw new UsageError('update needs --tier and/or --scopes.');
  return {
    command,
    id: positionals[0],
    name: values.name,
    tier: values.tier,
    scopes: values.scopes === undefined ? undefined : values.scopes.split(',').map((s) => s.trim()).filter(Boolean),
    json: values.json,
  };
}

async function runCommand(service: TokenService, args: ParsedArgs, config: Config, io: CliStreams): Promise<number> {
  const out = (text: string) => io.stdout.write(text);
  const json = (value: unknown) => out(`${JSON.stringify(value)}\n`);
  switch (args.command) {
    case 'create': {
      const { secret, token } = await service.create({ name: args.name as string, tier: args.tier, scopes: args.scopes });
      if (args.json) {
        json({ id: token.id, token: secret, name: token.name, tier: token.tier, scopes: token.scopes, createdAt: iso(token.createdAtMs) });
        return EXIT_OK;
      }
      out(
        `Created token ${token.id} "${token.name}" (tier ${token.tier}, scopes ${token.scopes.join(',') || '(none)'}).\n\n` +
          `  ${secret}\n\n` +
          'Copy it now: this secret is shown once and cannot be shown again (only its hash is stored).\n' +
          'Send it as: Authorization: Bearer <token>\n',
      );
      return EXIT_OK;
    }
    case 'list': {
      const tokens = await service.list();
      if (args.json) json({ tokens: tokens.map(publicView) });
      else out(formatTable(tokens, config));
      return EXIT_OK;
    }
    case 'revoke': {
      const id = args.id as string;
      const revoked = await service.revoke(id);
      const after = revoked ? await service.get(id) : undefined;
      if (!revoked) io.stderr.write(`No token with id ${JSON.stringify(id)}.\n`);
      if (args.json) json(revoked ? { id, revoked: true, revokedAt: iso(after?.revokedAtMs ?? null) } : { id, revoked: false, error: 'not_found' });
      else if (revoked) {
        out(`Revoked ${id}. Every instance refuses it within ${Math.round(config.tokens.cacheTtlMs / 1000)} s (TOKEN_CACHE_TTL_MS).\n`);
      }
      return revoked ? EXIT_OK : EXIT_FAILURE;
    }
    case 'update': {
      const id = args.id as string;
      const updated = await service.update(id, { tier: args.tier, scopes: args.scopes });
      const after = updated ? await service.get(id) : undefined;
      if (!updated) io.stderr.write(`No token with id ${JSON.stringify(id)}.\n`);
      if (args.json) json(updated && after ? { ...publicView(after), updated: true } : { id, updated: false, error: 'not_found' });
      else if (updated && after) out(`Updated ${id}: tier ${after.tier}, scopes ${after.scopes.join(',') || '(none)'}.\n`);
      return updated ? EXIT_OK : EXIT_FAILURE;
    }
  }
}

function publicView(token: TokenSummary): Record<string, unknown> {
  return { id: token.id, name: token.name, tier: token.tier, scopes: token.scopes, createdAt: iso(token.createdAtMs), revokedAt: iso(token.revokedAtMs) };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function formatTable(tokens: readonly TokenSummary[], config: Config): string {
  if (tokens.length === 0) return `No tokens in the ${config.tokens.store} store. Create one: npm run token -- create --name NAME\n`;
  const rows = [
    ['ID', 'NAME', 'TIER', 'SCOPES', 'CREATED', 'STATUS'],
    ...tokens.map((t) => [t.id, t.name, t.tier, t.scopes.join(',') || '-', iso(t.createdAtMs) ?? '', t.revokedAtMs === null ? 'active' : `revoked ${iso(t.revokedAtMs)}`]),
  ];
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows.map((row) => row.map((cell, col) => cell.padEnd(widths[col]!)).join('  ').trimEnd()).join('\n') + '\n';
}

/** file: the JSON file. firestore: a firebase-admin App of its own (FIRESTORE_EMULATOR_HOST is honoured by firebase-admin). */
async function openConfiguredStore(config: Config): Promise<OpenedStore> {
  if (config.tokens.store === 'file') {
    const store = await createTokenStore(config);
    return { store, close: () => store.close() };
  }
  // The service's own Firebase app setup; loaded only here, so the file store never pays for firebase-admin.
  const { createFirebaseApp, closeFirebaseApp } = await import('../service/firebase-app');
  const app = createFirebaseApp(config);
  const store = await createTokenStore(config, { app });
  return {
    store,
    close: async () => {
      await store.close();
      await closeFirebaseApp(app);
    },
  };
}

if (require.main === module) runAsMain(runTokenCli);
