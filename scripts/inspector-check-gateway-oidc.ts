import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { startEverythingUpstream } from '../test/support/everything-upstream';
import { accessTokenFor } from '../test/support/oauth-test-client';
import { startOidcProvider } from '../test/support/oidc-provider';
import { loadConfig } from '../src/config/config';
import { INSPECTOR_OBSERVED } from '../src/developers/developers-clients';
import { QUOTA_META_KEY } from '../src/mcp/upstream-quota-answer';
import { buildService, type Service } from '../src/service/build-service';
import { createLogger } from '../src/shared/logger';
import { subjectCallerId } from '../src/tokens/subject-id';
import { TokenService } from '../src/tokens/token-service';
import { envelope, expectThat, printedResult, type Check } from './inspector-check-kit';
import type { Captured } from './node-22';

/**
 * The two runs of `npm run inspector-check` that need more than the service:
 * the gateway in front of the real server-everything (issue 17 item 5: a
 * quota answer for a tool with an outputSchema), and a bearer access token
 * from a real OpenID provider (issue 21). test/integration/inspector-cli.test.ts
 * holds the same in `npm test`.
 */
type Inspector = (args: readonly string[]) => Promise<Captured>;

const SCHEMA_TOOL = 'get-structured-content';

async function listen(app: Service['app']): Promise<{ server: Server; url: string }> {
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` };
}

function close(server: Server | undefined): Promise<void> {
  return new Promise((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
}

type Figures = Record<string, unknown> | undefined;

function quotaFiguresOf(got: Captured): Figures {
  return (printedResult(got)?._meta as Record<string, Figures> | undefined)?.[QUOTA_META_KEY];
}

/** A quota answer: printed whole, figures in _meta only, the Inspector's exit code for an isError result. */
function expectQuotaAnswer(got: Captured, status: string, failures: string[]): void {
  const error = envelope(got.stderr);
  expectThat(failures, got.exitCode === INSPECTOR_OBSERVED.toolErrorExitCode, `exit code ${INSPECTOR_OBSERVED.toolErrorExitCode}`);
  expectThat(failures, error?.code === INSPECTOR_OBSERVED.toolErrorCode, `error code ${INSPECTOR_OBSERVED.toolErrorCode}`);
  expectThat(failures, printedResult(got)?.structuredContent === undefined, 'no structuredContent (the tool has an outputSchema)');
  expectThat(failures, quotaFiguresOf(got)?.status === status, `_meta["${QUOTA_META_KEY}"].status "${status}"`);
  expectThat(failures, typeof quotaFiguresOf(got)?.retryAfterMs === 'number', `_meta["${QUOTA_META_KEY}"].retryAfterMs`);
}

/** Three calls of server-everything's get-structured-content at UPSTREAM_RATE=1/min: run, reserved, rejected. */
export async function gatewayChecks(inspector: Inspector, dir: string): Promise<Check[]> {
  const everything = await startEverythingUpstream();
  const config = loadConfig({
    TOKENS_FILE: path.join(dir, 'gateway-tokens.json'),
    LOG_FORMAT: 'json',
    RATE_LIMIT_PER_MINUTE: '100',
    UPSTREAM_MCP_URL: everything.url,
    UPSTREAM_RATE: '1/min',
    UPSTREAM_HOLD_MS: '0',
    UPSTREAM_MAX_WAIT_MS: '90000',
  });
  const service = await buildService(config, { logger: createLogger(() => undefined) });
  let server: Server | undefined;
  try {
    const tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
    const { secret } = await tokens.create({ name: 'inspector-gateway', scopes: ['mcp'] });
    const listening = await listen(service.app);
    server = listening.server;
    const call = (): Promise<Captured> =>
      inspector([listening.url, '--transport', 'http', '--header', `Authorization: Bearer ${secret}`, '--method', 'tools/call', '--tool-name', SCHEMA_TOOL, '--tool-arg', 'location=Chicago']);
    const checks: Check[] = [];
    {
      const got = await call();
      const failures: string[] = [];
      expectThat(failures, got.exitCode === 0, 'exit code 0');
      expectThat(failures, typeof (printedResult(got)?.structuredContent as Record<string, unknown> | undefined)?.conditions === 'string', "the upstream's structured result");
      checks.push({ run: `gateway ${SCHEMA_TOOL}, runs`, got, failures });
    }
    {
      const got = await call();
      const failures: string[] = [];
      expectQuotaAnswer(got, 'reserved', failures);
      expectThat(failures, typeof quotaFiguresOf(got)?.slotAtMs === 'number', `_meta["${QUOTA_META_KEY}"].slotAtMs`);
      checks.push({ run: `gateway ${SCHEMA_TOOL}, reserved`, got, failures });
    }
    {
      const got = await call();
      const failures: string[] = [];
      expectQuotaAnswer(got, 'rejected', failures);
      checks.push({ run: `gateway ${SCHEMA_TOOL}, rejected`, got, failures });
    }
    return checks;
  } finally {
    await close(server);
    await service.release();
    await everything.close();
  }
}

/** whoami with an access token the provider issued for our resource, as a static header. */
export async function oidcChecks(inspector: Inspector, dir: string): Promise<Check[]> {
  const oidc = await startOidcProvider();
  const server = createServer();
  let service: Service | undefined;
  try {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const mcpUrl = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
    const issuersFile = path.join(dir, 'issuers.json');
    writeFileSync(issuersFile, JSON.stringify({ resource: mcpUrl.href, issuers: [{ issuer: oidc.issuer, algorithms: ['ES256'] }] }));
    service = await buildService(loadConfig({ TOKENS_FILE: path.join(dir, 'oidc-tokens.json'), LOG_FORMAT: 'json', AUTH_ISSUERS_FILE: issuersFile }), { logger: createLogger(() => undefined) });
    server.on('request', service.app);
    const token = await accessTokenFor(mcpUrl, 'alice');
    const got = await inspector([mcpUrl.href, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, '--method', 'tools/call', '--tool-name', 'whoami']);
    const failures: string[] = [];
    expectThat(failures, got.exitCode === 0, 'exit code 0');
    const who = printedResult(got)?.structuredContent as Record<string, unknown> | undefined;
    expectThat(failures, who?.tokenId === subjectCallerId(oidc.issuer, 'alice'), "whoami names the subject's caller id");
    return [{ run: 'tools/call whoami, OIDC access token', got, failures }];
  } finally {
    await close(server);
    await service?.release();
    await oidc.stop();
  }
}
