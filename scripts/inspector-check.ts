import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/config';
import { INSPECTOR_OBSERVED } from '../src/developers/developers-clients';
import { buildService } from '../src/service/build-service';
import { createLogger } from '../src/shared/logger';
import { TokenService } from '../src/tokens/token-service';
import { gatewayChecks, oidcChecks } from './inspector-check-gateway-oidc';
import { envelope, expectThat, type Check, type ErrorEnvelope } from './inspector-check-kit';
import { NODE_22, npxOnNode22, runCaptured, type Captured } from './node-22';

/**
 * `npm run inspector-check`: the MCP Inspector CLI, as an integrator runs it
 * (`mcp-inspector --cli <url> --transport http --header ...`), against the
 * service as `npm start` composes it, held to INSPECTOR_OBSERVED, the
 * constant /developers writes its Inspector entry from. The Inspector needs
 * Node 22, so like `npm run conformance` it is fetched on demand (npx cache)
 * and kept out of package.json and `npm test`. Exits 1 when any observation
 * no longer matches, after printing what each run did.
 */
const INSPECTOR = `${INSPECTOR_OBSERVED.packageName}@${INSPECTOR_OBSERVED.version}`;
const LIMIT_PER_MINUTE = 1;
const TOKEN_NAME = 'inspector-check';

/** Our JSON-RPC body, from the end of a message that carries it after the SDK's prefix. */
function ourBody(message: string | undefined): { error?: { code?: number; message?: string; data?: Record<string, unknown> } } | undefined {
  const at = message?.indexOf(INSPECTOR_OBSERVED.bodyPrefix) ?? -1;
  if (message === undefined || at < 0) return undefined;
  try {
    return JSON.parse(message.slice(at + INSPECTOR_OBSERVED.bodyPrefix.length)) as ReturnType<typeof ourBody>;
  } catch {
    return undefined;
  }
}

function expectAuthRefusal(got: Captured, failures: string[]): NonNullable<ErrorEnvelope['error']> {
  const error = envelope(got.stderr) ?? {};
  expectThat(failures, got.exitCode === INSPECTOR_OBSERVED.authExitCode, `exit code ${INSPECTOR_OBSERVED.authExitCode}`);
  expectThat(failures, error.code === INSPECTOR_OBSERVED.authErrorCode, `error code ${INSPECTOR_OBSERVED.authErrorCode}`);
  return error;
}

async function main(): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-inspector-'));
  const config = loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), LOG_FORMAT: 'json', RATE_LIMIT_PER_MINUTE: String(LIMIT_PER_MINUTE) });
  const service = await buildService(config, { logger: createLogger(() => undefined) });
  let server: Server | undefined;
  let refusalsSent = 0;
  try {
    const tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
    const { secret } = await tokens.create({ name: TOKEN_NAME, scopes: ['mcp'] });
    server = createServer((req, res) => {
      res.once('finish', () => {
        if (res.statusCode === 429) refusalsSent += 1;
      });
      service.app(req, res);
    });
    const listening = server;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    process.stdout.write(`inspector-check: ${INSPECTOR} --cli (Node 22 from ${NODE_22}) against ${url}, ${LIMIT_PER_MINUTE} call/min\n`);

    // Its catalog, client config and OAuth state go to a home of its own; npx keeps the user's cache.
    const home = path.join(dir, 'home');
    mkdirSync(home);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: home,
      npm_config_cache: process.env.npm_config_cache ?? path.join(os.homedir(), '.npm'),
      npm_config_loglevel: 'error',
      MCP_INSPECTOR_SECRET_STORE: 'memory',
      BROWSER: 'false',
      DISPLAY: '',
    };
    const cli = (args: readonly string[]): string[] => npxOnNode22([INSPECTOR], ['mcp-inspector', '--cli', ...args]);
    const inspector = (args: readonly string[]): Promise<Captured> => runCaptured('npx', cli(args), env);
    const http = [url, '--transport', 'http'];
    const bearer = ['--header', `Authorization: Bearer ${secret}`];
    const whoami = [...http, '--method', 'tools/call', '--tool-name', 'whoami'];
    const checks: Check[] = [];

    {
      const got = await inspector(['--version']);
      const failures: string[] = [];
      expectThat(failures, got.stdout.trim() === INSPECTOR_OBSERVED.version, `version ${INSPECTOR_OBSERVED.version}`);
      checks.push({ run: '--version', got, failures });
    }
    {
      const got = await inspector([...http, '--method', 'tools/list', ...bearer]);
      const failures: string[] = [];
      expectThat(failures, got.exitCode === 0, 'exit code 0');
      const names = parseTools(got.stdout);
      expectThat(failures, names.includes('whoami') && names.includes('rate_limit_status'), 'lists whoami and rate_limit_status');
      checks.push({ run: 'tools/list, token', got, failures });
    }
    {
      const got = await inspector([...whoami, ...bearer]);
      const failures: string[] = [];
      expectThat(failures, got.exitCode === 0, 'exit code 0');
      expectThat(failures, got.stdout.includes(`"name": "${TOKEN_NAME}"`), 'prints the tool result (our token name)');
      checks.push({ run: 'tools/call whoami, allowed', got, failures });
    }
    checks.push(await refusedCall(() => inspector([...whoami, ...bearer]), () => refusalsSent));
    {
      const got = await inspector([...whoami, '--header', 'Authorization: Bearer flk_not-a-real-token']);
      const failures: string[] = [];
      const error = expectAuthRefusal(got, failures);
      expectThat(failures, error.message?.startsWith(INSPECTOR_OBSERVED.noTtyMessagePrefix) === true, `message starts "${INSPECTOR_OBSERVED.noTtyMessagePrefix}"`);
      checks.push({ run: 'wrong token, no TTY', got, failures });
    }
    {
      const got = await inspector([...whoami]);
      const failures: string[] = [];
      const error = expectAuthRefusal(got, failures);
      expectThat(failures, error.message?.startsWith(INSPECTOR_OBSERVED.noTtyMessagePrefix) === true, `message starts "${INSPECTOR_OBSERVED.noTtyMessagePrefix}"`);
      checks.push({ run: 'no token, no TTY', got, failures });
    }
    for (const [run, header, reason] of [
      ['wrong token, --stored-auth-only', ['--header', 'Authorization: Bearer flk_not-a-real-token'], 'malformed_token'],
      ['no token, --stored-auth-only', [], 'missing_token'],
    ] as const) {
      const got = await inspector([...whoami, ...header, '--stored-auth-only']);
      const failures: string[] = [];
      const error = expectAuthRefusal(got, failures);
      const body = ourBody(error.message);
      expectThat(failures, body?.error?.code === -32001 && body.error.data?.reason === reason, `message ends with our 401 body, reason ${reason}`);
      checks.push({ run, got, failures });
    }
    checks.push(await noTokenInTerminal(cli([...whoami]), env));
    checks.push(...(await gatewayChecks(inspector, dir)));
    checks.push(...(await oidcChecks(inspector, dir)));

    printTable(checks);
    const failed = checks.filter((c) => c.failures.length > 0);
    for (const c of failed) process.stdout.write(`MISMATCH ${c.run}: expected ${c.failures.join('; ')}\n  stdout: ${c.got.stdout}\n  stderr: ${c.got.stderr}\n`);
    process.stdout.write(failed.length === 0 ? `inspector-check: ${INSPECTOR} matches INSPECTOR_OBSERVED\n` : `inspector-check: ${failed.length} run(s) no longer match INSPECTOR_OBSERVED (src/developers/developers-clients.ts)\n`);
    return failed.length === 0 ? 0 : 1;
  } finally {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    await service.release();
    rmSync(dir, { recursive: true, force: true });
  }
}

function parseTools(stdout: string): string[] {
  try {
    return ((JSON.parse(stdout) as { tools?: { name: string }[] }).tools ?? []).map((t) => t.name);
  } catch {
    return [];
  }
}

/**
 * The call after the budget is spent. A fixed window can roll over between
 * two runs, so it calls again (a few times at most) until one is refused.
 */
async function refusedCall(call: () => Promise<Captured>, refusalsSent: () => number): Promise<Check> {
  let got = await call();
  for (let attempt = 0; attempt < 2 && got.exitCode === 0; attempt += 1) got = await call();
  const failures: string[] = [];
  if (got.exitCode === 0) {
    failures.push('a refusal after the budget was spent');
    return { run: 'tools/call whoami, refused', got, failures };
  }
  const o = INSPECTOR_OBSERVED;
  const error = envelope(got.stderr) ?? {};
  expectThat(failures, got.exitCode === o.refusedExitCode, `exit code ${o.refusedExitCode}`);
  expectThat(failures, got.stdout === '', 'nothing on stdout');
  expectThat(failures, error.status === o.refusedStatus, `"status":${o.refusedStatus} in the error`);
  expectThat(failures, error.message?.startsWith(`${o.refusedMessagePrefix}${o.retrySentence}`) === true, `message starts "${o.refusedMessagePrefix}${o.retrySentence}"`);
  const body = ourBody(error.message);
  expectThat(failures, body?.error?.code === -32029 && typeof body.error.data?.retryAfterSeconds === 'number', `"${o.bodyPrefix}" then our -32029 body with retryAfterSeconds`);
  expectThat(failures, namedSeconds(error.message ?? '') === body?.error?.data?.retryAfterSeconds, 'the wait it names is our Retry-After');
  // The service has answered 429 once in the whole check, for this run: nothing retried.
  expectThat(failures, refusalsSent() === 1, 'exactly one 429 sent (no retry)');
  return { run: 'tools/call whoami, refused', got, failures };
}

/** The wait in "retry after 49s." or "retry after 1m00s." (how the Inspector formats a minute or more). */
function namedSeconds(message: string): number | undefined {
  const m = /retry after (?:(\d+)m)?(\d+)s\./.exec(message);
  return m === null ? undefined : Number(m[1] ?? 0) * 60 + Number(m[2]);
}

/** With no token in a terminal (script(1) gives it one), the Inspector starts OAuth. */
async function noTokenInTerminal(npxArgs: readonly string[], env: NodeJS.ProcessEnv): Promise<Check> {
  const command = ['npx', ...npxArgs].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const raw = await runCaptured('script', ['-qec', command, '/dev/null'], env);
  // script(1) hands both of the Inspector's streams to its own stdout.
  const got: Captured = { exitCode: raw.exitCode, stdout: '', stderr: raw.stdout + raw.stderr };
  const failures: string[] = [];
  const error = expectAuthRefusal(got, failures);
  expectThat(failures, error.message?.startsWith(INSPECTOR_OBSERVED.noTokenTerminalMessage) === true, `message starts "${INSPECTOR_OBSERVED.noTokenTerminalMessage}"`);
  expectThat(failures, error.message?.includes('Authorization: Bearer flk_') === true, 'our /register answer naming the header');
  return { run: 'no token, terminal', got, failures };
}

function printTable(checks: readonly Check[]): void {
  const oneLine = (s: string): string => {
    const flat = s.replace(/\s+/g, ' ').trim();
    return flat.length > 90 ? `${flat.slice(0, 87)}...` : flat || '(empty)';
  };
  const rows = checks.map((c) => [c.failures.length === 0 ? 'ok' : 'MISMATCH', c.run, String(c.got.exitCode), oneLine(c.got.stdout), oneLine(envelope(c.got.stderr)?.message ?? c.got.stderr)]);
  const header = ['', 'run', 'exit', 'stdout', 'stderr (error message)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  for (const row of [header, ...rows]) process.stdout.write(`${row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(' | ')}\n`);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
