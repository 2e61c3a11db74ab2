import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { PRICED_STATUS } from '../support/mcp-test-app';
import { startReadyServer, type ServerProcess } from '../support/server-process';
import { NODE_SQLITE, reportSqliteSkipped } from '../support/sqlite-runtime';

/**
 * Two firelimit services (src/server.ts, configured only by environment) on
 * one host share one SQLITE_PATH and one token: 120 tools/call requests
 * spread over both admit exactly the published limit, and every answer says
 * the count is shared. The default tier is a sliding log of a minute, which
 * has no window boundary for the test to cross however slow the machine is.
 */
const LIMIT = 40;
const REQUESTS = 120;
const IN_FLIGHT_PER_PROCESS = 4;

reportSqliteSkipped('two firelimit services on one SQLite file');
(NODE_SQLITE === undefined ? describe.skip : describe)('two firelimit services on one SQLite file', () => {
  let dir: string;
  let secret: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'firelimit-sqlite-service-'));
    const tokensFile = path.join(dir, 'tokens.json');
    const store = new FileTokenStore({ path: tokensFile });
    secret = (await new TokenService({ store }).create({ name: 'sqlite-two-processes' })).secret;
    await store.close();
    const env = {
      ...PRICED_STATUS,
      RATE_LIMIT_BACKEND: 'sqlite',
      SQLITE_PATH: path.join(dir, 'limits.sqlite'),
      TOKENS_FILE: tokensFile,
      RATE_LIMIT_ALGORITHM: 'sliding-log',
      RATE_LIMIT_PER_MINUTE: String(LIMIT),
      // Fail closed with a long busy timeout: a decision the file did not make shows up as a 503, never as an extra success.
      RATE_LIMIT_FAILURE_POLICY: 'fail-closed',
      RATE_LIMIT_TIMEOUT_MS: '10000',
      AUTH_FAILURES_PER_MINUTE: '1000',
    };
    servers.push(...(await Promise.all([0, 1].map(() => startReadyServer(env, 45_000)))));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.kill()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function callTool(server: ServerProcess, id: number): Promise<{ status: number; shared: boolean | undefined }> {
    const response = await fetch(`http://127.0.0.1:${server.port}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${secret}`, Accept: 'application/json, text/event-stream', 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } }),
    });
    const body = (await response.json()) as { result?: { structuredContent?: { shared?: boolean } } };
    return { status: response.status, shared: body.result?.structuredContent?.shared };
  }

  test(`${REQUESTS} calls over both processes: exactly ${LIMIT} succeed, the rest are 429, every success counted in the file`, async () => {
    const outcomes: { status: number; shared: boolean | undefined }[] = [];
    let next = 0;
    // Each process gets its own lanes of calls in flight, so both race for the file's write lock throughout.
    const lanes = servers.flatMap((server) =>
      Array.from({ length: IN_FLIGHT_PER_PROCESS }, async () => {
        while (next < REQUESTS) outcomes.push(await callTool(server, next++));
      }),
    );
    await Promise.all(lanes);
    expect(outcomes).toHaveLength(REQUESTS);
    const statuses = outcomes.map((o) => o.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(REQUESTS - LIMIT);
    expect(outcomes.filter((o) => o.status === 200).every((o) => o.shared === true)).toBe(true);
  });
});
