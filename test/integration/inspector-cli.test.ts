import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Captured } from '../../scripts/node-22';
import { loadConfig } from '../../src/config/config';
import { INSPECTOR_OBSERVED } from '../../src/developers/developers-clients';
import { QUOTA_META_KEY } from '../../src/mcp/upstream-quota-answer';
import { buildService, type Service } from '../../src/service/build-service';
import { subjectCallerId } from '../../src/tokens/subject-id';
import { createCapturingLogger } from '../support/capturing-logger';
import { startEverythingUpstream, startRecordingProxy, type EverythingUpstream, type RecordingProxy } from '../support/everything-upstream';
import { startFirelimit, type RunningFirelimit } from '../support/gateway-harness';
import { envelope, inspectorCli, parsedStdout, type InspectorCli } from '../support/inspector-cli';
import { GOOD_SECRET } from '../support/mcp-test-app';
import { accessTokenFor } from '../support/oauth-test-client';
import { startOidcProvider, type OidcProvider } from '../support/oidc-provider';

/**
 * The real MCP Inspector CLI (nobody here wrote it) against firelimit, for
 * what the SDK clients of the other tests cannot show on its behalf:
 * issue 17 item 5, a quota answer for an upstream tool with an outputSchema
 * is a result the Inspector prints (it validates structuredContent against
 * the schema and exited 1 on ours), and issue 21, a bearer access token from
 * a real OpenID provider is enough for it to call a tool.
 *
 * Each Inspector run is a process on Node 22 through npx: about 10 s on a
 * loaded 2-core machine once npx has it cached, up to a minute or two for the
 * first download on a fresh machine. Hence the long, bounded timeouts.
 */
const RUN_TIMEOUT_MS = 240_000;

let inspector: InspectorCli;

beforeAll(() => {
  inspector = inspectorCli();
});

afterAll(() => inspector?.close());

// The Inspector's two protocol eras: legacy (the 2025 handshake, its default for a URL) and modern (2026-07-28).
describe.each(['legacy', 'modern'] as const)('the Inspector CLI (--protocol-era %s) through the gateway, for a tool with an outputSchema', (era) => {
  const TOOL = 'get-structured-content';
  let everything: EverythingUpstream;
  let proxy: RecordingProxy;
  let firelimit: RunningFirelimit;

  beforeAll(async () => {
    everything = await startEverythingUpstream();
    proxy = await startRecordingProxy(everything.url);
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_RATE: '1/min', UPSTREAM_HOLD_MS: '0', UPSTREAM_MAX_WAIT_MS: '90000' });
  }, 30_000);

  afterAll(async () => {
    await firelimit?.stop();
    await proxy?.close();
    await everything?.close();
  });

  const call = (): Promise<Captured> =>
    inspector.run([firelimit.url.href, '--transport', 'http', '--header', `Authorization: Bearer ${GOOD_SECRET}`, '--method', 'tools/call', '--tool-name', TOOL, '--tool-arg', 'location=Chicago', '--protocol-era', era]);

  it('runs the first call, then prints the "reserved" answer whole, the slot in _meta, and exits with the Inspector code for isError, not its schema failure; a "rejected" answer the same', async () => {
    const first = await call();
    expect({ exitCode: first.exitCode, stderr: first.stderr.includes('"error"') ? first.stderr : '' }).toEqual({ exitCode: 0, stderr: '' });
    expect(parsedStdout(first)?.structuredContent).toMatchObject({ conditions: expect.any(String) });

    const before = Date.now();
    const second = await call();
    // The answer is a tool result with isError: true (ADR 0035), for which the Inspector prints the result and
    // exits with its TOOL_ERROR code. Exit 1 with the schema validator's words ("data must have required
    // property 'temperature', ...") and nothing on stdout was the defect of issue 17 item 5.
    expect({ exitCode: second.exitCode, error: envelope(second.stderr) }).toEqual({
      exitCode: INSPECTOR_OBSERVED.toolErrorExitCode,
      error: { code: INSPECTOR_OBSERVED.toolErrorCode, message: `Tool '${TOOL}' returned isError:true.` },
    });
    const printed = parsedStdout(second) as { isError?: boolean; structuredContent?: unknown; content?: { text?: string }[]; _meta?: Record<string, { status?: string; slotAtMs?: number; retryAfterMs?: number; quota?: string }> };
    expect(printed.isError).toBe(true);
    expect(printed.structuredContent).toBeUndefined();
    const figures = printed._meta?.[QUOTA_META_KEY];
    expect(figures).toMatchObject({ status: 'reserved', quota: 'upstream' });
    // 1/min at the default headroom 0.9: the next slot is 66 667 ms after the first call.
    expect(figures?.slotAtMs).toBeGreaterThan(before + 60_000);
    expect(figures?.retryAfterMs).toBeGreaterThan(55_000);
    expect(printed.content?.[0]?.text).toContain(`A slot is reserved for you at ${new Date(figures?.slotAtMs ?? 0).toISOString()}`);
    // The reserved call never reached the upstream.
    expect(proxy.of('tools/call')).toHaveLength(1);

    // A third call: the next free slot (133 s away) is past the longest wait (90 s).
    const third = await call();
    expect({ exitCode: third.exitCode, code: envelope(third.stderr)?.code }).toEqual({ exitCode: INSPECTOR_OBSERVED.toolErrorExitCode, code: INSPECTOR_OBSERVED.toolErrorCode });
    const rejected = parsedStdout(third) as { structuredContent?: unknown; _meta?: Record<string, { status?: string; reason?: string; retryAfterMs?: number }> };
    expect(rejected.structuredContent).toBeUndefined();
    expect(rejected._meta?.[QUOTA_META_KEY]).toMatchObject({ status: 'rejected', reason: 'max_wait', retryAfterMs: expect.any(Number) });
    expect(proxy.of('tools/call')).toHaveLength(1);
  }, RUN_TIMEOUT_MS);
});

describe('the Inspector CLI claims its reserved slot by echoing the reservation id with --tool-metadata', () => {
  const TOOL = 'get-structured-content';
  let everything: EverythingUpstream;
  let proxy: RecordingProxy;
  let firelimit: RunningFirelimit;
  // firelimit's clock, moved to the slot by the test: the Inspector and the upstream do not read it.
  let nowMs = Date.now();

  beforeAll(async () => {
    everything = await startEverythingUpstream();
    proxy = await startRecordingProxy(everything.url);
    firelimit = await startFirelimit({ UPSTREAM_MCP_URL: proxy.url, UPSTREAM_RATE: '1/min', UPSTREAM_HOLD_MS: '0', UPSTREAM_MAX_WAIT_MS: '90000' }, { clock: () => nowMs });
  }, 30_000);

  afterAll(async () => {
    await firelimit?.stop();
    await proxy?.close();
    await everything?.close();
  });

  const call = (extra: readonly string[] = []): Promise<Captured> =>
    inspector.run([firelimit.url.href, '--transport', 'http', '--header', `Authorization: Bearer ${GOOD_SECRET}`, '--method', 'tools/call', '--tool-name', TOOL, '--tool-arg', 'location=Chicago', ...extra]);

  it('gets the same reservation back when early, and runs at its slot, reaching the upstream a second time', async () => {
    expect((await call()).exitCode).toBe(0);
    const reserved = parsedStdout(await call()) as { _meta?: Record<string, { status?: string; slotAtMs?: number; reservation?: string }> };
    const figures = reserved._meta?.[QUOTA_META_KEY];
    expect(figures).toMatchObject({ status: 'reserved', reservation: expect.any(String), slotAtMs: expect.any(Number) });
    const echo = ['--tool-metadata', `firelimit/reservation=${figures?.reservation}`];
    // Early with the id: the same reservation again (a call that echoes nothing would queue anew, here past the longest wait).
    const early = parsedStdout(await call(echo)) as typeof reserved;
    expect(early._meta?.[QUOTA_META_KEY]).toMatchObject({ status: 'reserved', reservation: figures?.reservation, slotAtMs: figures?.slotAtMs });

    nowMs = figures?.slotAtMs as number;
    const claimed = await call(echo);
    expect({ exitCode: claimed.exitCode, stderr: claimed.stderr.includes('"error"') ? claimed.stderr : '' }).toEqual({ exitCode: 0, stderr: '' });
    expect(parsedStdout(claimed)?.structuredContent).toMatchObject({ conditions: expect.any(String) });
    expect(proxy.of('tools/call')).toHaveLength(2);
    // firelimit's own key is not passed on to the upstream.
    expect((proxy.of('tools/call')[1]?.params as { _meta?: Record<string, unknown> })._meta?.['firelimit/reservation']).toBeUndefined();
  }, RUN_TIMEOUT_MS);
});

describe('the Inspector CLI with a bearer access token from a real OpenID provider', () => {
  let dir: string;
  let oidc: OidcProvider;
  let service: Service;
  let server: Server;
  let mcpUrl: URL;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'firelimit-inspector-oidc-'));
    oidc = await startOidcProvider();
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    mcpUrl = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
    const issuersFile = path.join(dir, 'issuers.json');
    writeFileSync(issuersFile, JSON.stringify({ resource: mcpUrl.href, issuers: [{ issuer: oidc.issuer, algorithms: ['ES256'] }] }));
    service = await buildService(loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), AUTH_ISSUERS_FILE: issuersFile, RATE_LIMIT_PER_MINUTE: '100' }), { logger: createCapturingLogger() });
    server.on('request', service.app);
  }, 60_000);

  afterAll(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await service?.release();
    await oidc?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['legacy', 'modern'] as const)('connects (--protocol-era %s) with the token as a static header and calls whoami as the signed-in subject', async (era) => {
    const token = await accessTokenFor(mcpUrl, 'alice');
    expect(token.split('.')).toHaveLength(3);
    const got = await inspector.run([mcpUrl.href, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, '--method', 'tools/call', '--tool-name', 'whoami', '--protocol-era', era]);
    expect({ exitCode: got.exitCode, stderr: got.stderr.includes('"error"') ? got.stderr : '' }).toEqual({ exitCode: 0, stderr: '' });
    expect(parsedStdout(got)?.structuredContent).toEqual({ tokenId: subjectCallerId(oidc.issuer, 'alice'), name: `signed in with ${oidc.issuer}`, tier: 'default', scopes: ['mcp'] });
  }, RUN_TIMEOUT_MS);

  it('is refused with the auth exit code when the token is not one the provider signed', async () => {
    const token = await accessTokenFor(mcpUrl, 'bob');
    const [head, body] = token.split('.');
    const forged = `${head}.${body}.${Buffer.from('not the signature').toString('base64url')}`;
    const got = await inspector.run([mcpUrl.href, '--transport', 'http', '--header', `Authorization: Bearer ${forged}`, '--method', 'tools/call', '--tool-name', 'whoami', '--stored-auth-only']);
    expect({ exitCode: got.exitCode, code: envelope(got.stderr)?.code }).toEqual({ exitCode: INSPECTOR_OBSERVED.authExitCode, code: INSPECTOR_OBSERVED.authErrorCode });
    expect(got.stdout).toBe('');
  }, RUN_TIMEOUT_MS);
});
