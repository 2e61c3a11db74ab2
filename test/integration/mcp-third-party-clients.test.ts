import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { AI_SDK_OBSERVED, LANGCHAIN_OBSERVED, MCP_REMOTE_OBSERVED } from '../../src/developers/developers-clients';
import { firstRejection } from '../support/mcp-calls';
import { buildTestApp, GOOD_SECRET, TEST_TOKEN, type TestApp } from '../support/mcp-test-app';

/**
 * The clients integrators use that are not the official SDK, run as they
 * ship, over a real socket: the Vercel AI SDK's MCP client (@ai-sdk/mcp,
 * in its own Node process: it is ESM only) and mcp-remote (the stdio proxy
 * CLI, spawned from its installed bin and spoken to over stdin/stdout), and
 * LangChain's MCP adapters (@langchain/mcp-adapters, as LangChain tools).
 * Each test holds the client to the observations /developers is written
 * from (AI_SDK_OBSERVED, MCP_REMOTE_OBSERVED, LANGCHAIN_OBSERVED in
 * src/developers/developers-clients.ts), the version included.
 */

interface Started {
  readonly close: () => Promise<void>;
  readonly url: string;
}

async function listen(app: TestApp['app'], release: () => Promise<void>): Promise<Started> {
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await release();
    },
  };
}

async function start(env: NodeJS.ProcessEnv): Promise<Started> {
  const built = await buildTestApp({ env });
  return listen(built.app, () => built.release());
}

function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')) as { version: string }).version;
}

interface AiSdkReport {
  readonly serverName: string;
  readonly protocolVersion: string;
  readonly tools: string[];
  readonly whoami: { isError: boolean; structuredContent: unknown };
  readonly refusal?: { constructorName: string; fields: Record<string, unknown> };
}

function runAiSdkProbe(url: string): Promise<AiSdkReport> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [join(__dirname, '../support/ai-sdk-client-probe.mjs'), url, GOOD_SECRET, '5'], (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as AiSdkReport);
    });
  });
}

describe('Vercel AI SDK (@ai-sdk/mcp)', () => {
  let started: Started;
  beforeAll(async () => {
    started = await start({ RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(() => started.close());

  test('connects over Streamable HTTP with a bearer header, lists and calls; a refusal is an MCPClientError with our data as fields, no HTTP status', async () => {
    expect(installedVersion('@ai-sdk/mcp')).toBe(AI_SDK_OBSERVED.version);
    const report = await runAiSdkProbe(started.url);
    expect(report.serverName).toBe('firelimit');
    expect(report.protocolVersion).toBe(AI_SDK_OBSERVED.protocolVersion);
    expect(report.tools).toEqual(['rate_limit_status', 'whoami']);
    expect(report.whoami).toEqual({ isError: false, structuredContent: { tokenId: TEST_TOKEN.id, name: TEST_TOKEN.name, tier: 'default', scopes: ['mcp'] } });
    const refusal = report.refusal;
    expect(refusal?.constructorName).toBe(AI_SDK_OBSERVED.errorClass);
    const fields = refusal?.fields ?? {};
    // It connects in 2026-07-28, whose refusal code is 429 (ADR 0023).
    expect(fields.code).toBe(429);
    expect(fields.data).toMatchObject({ error: 'rate_limited', limit: 3, windowSeconds: 60, retryAfterSeconds: expect.any(Number), resetAt: expect.any(String) });
    expect(fields.message).toMatch(/^Rate limit of 3 requests per 60 s exceeded\. Retry after \d+ s\.$/);
    // What the error does not carry: the HTTP status (its statusCode stays unset) and any header.
    expect(fields.statusCode).toBeUndefined();
    expect(Object.keys(fields).sort()).toEqual([...AI_SDK_OBSERVED.errorFields]);
  });
});

interface JsonRpcAnswer {
  readonly id: number;
  readonly result?: { structuredContent?: unknown; serverInfo?: { name: string } };
  readonly error?: { code: number; message: string; data?: unknown };
}

/** mcp-remote 0.15.1 as an MCP host runs it: its bin under node, JSON-RPC lines on stdin and stdout, its log on stderr. */
class McpRemote {
  readonly stderr: string[] = [];
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting = new Map<number, (answer: JsonRpcAnswer) => void>();
  private readonly configDir = mkdtempSync(join(tmpdir(), 'mcp-remote-'));
  readonly exited: Promise<number | null>;

  constructor(url: string, headers: readonly string[]) {
    const bin = require.resolve('mcp-remote/dist/proxy.js');
    const args = [bin, url, '--transport', 'http-only', ...headers.flatMap((header) => ['--header', header])];
    // Its OAuth state goes to a directory of its own; no display, so no browser could open.
    const env = { ...process.env, MCP_REMOTE_CONFIG_DIR: this.configDir, DISPLAY: '', WAYLAND_DISPLAY: '', BROWSER: 'false' };
    this.child = spawn(process.execPath, args, { env });
    this.child.stderr.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString()));
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const answer = JSON.parse(line) as JsonRpcAnswer;
      this.waiting.get(answer.id)?.(answer);
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  request(id: number, method: string, params: unknown): Promise<JsonRpcAnswer> {
    const answered = new Promise<JsonRpcAnswer>((resolve) => this.waiting.set(id, resolve));
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return answered;
  }

  notify(method: string): void {
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method })}\n`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) this.child.kill();
    await this.exited;
    rmSync(this.configDir, { recursive: true, force: true });
  }
}

const INITIALIZE = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'firelimit-test-host', version: '1.0.0' } };

describe(`mcp-remote ${MCP_REMOTE_OBSERVED.version}`, () => {
  let started: Started;
  beforeEach(async () => {
    started = await start({ RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterEach(() => started.close());

  test('proxies initialize and whoami; a refusal reaches the host as -32001 with our whole JSON-RPC body inside the message, no data, no status', async () => {
    expect(installedVersion('mcp-remote')).toBe(MCP_REMOTE_OBSERVED.version);
    const remote = new McpRemote(started.url, [`Authorization: Bearer ${GOOD_SECRET}`]);
    try {
      const init = await remote.request(1, 'initialize', INITIALIZE);
      expect(init.result?.serverInfo?.name).toBe('firelimit');
      remote.notify('notifications/initialized');
      const who = await remote.request(2, 'tools/call', { name: 'whoami', arguments: {} });
      expect(who.result?.structuredContent).toEqual({ tokenId: TEST_TOKEN.id, name: TEST_TOKEN.name, tier: 'default', scopes: ['mcp'] });
      let refused: JsonRpcAnswer | undefined;
      for (let id = 3; id < 8 && refused === undefined; id++) {
        const answer = await remote.request(id, 'tools/call', { name: 'whoami', arguments: {} });
        if (answer.error !== undefined) refused = answer;
      }
      const error = refused?.error;
      expect(error?.code).toBe(MCP_REMOTE_OBSERVED.code);
      expect(error?.data).toBeUndefined();
      expect(error?.message.startsWith(`${MCP_REMOTE_OBSERVED.messagePrefix}{`)).toBe(true);
      const message = error?.message ?? '';
      const body = JSON.parse(message.slice(message.indexOf('{'))) as { error: { code: number; data: unknown } };
      expect(body.error.code).toBe(-32029);
      expect(body.error.data).toMatchObject({ error: 'rate_limited', limit: 3, windowSeconds: 60, retryAfterSeconds: expect.any(Number) });
      // The 429 is only in its own log (stderr), not in what the host gets.
      expect(message).not.toContain('429');
      expect(remote.stderr.join('')).toContain('status: 429');
    } finally {
      await remote.stop();
    }
  });

  test('without a token it tries OAuth, and stops on our /register answer, printing how to send a token instead', async () => {
    const remote = new McpRemote(started.url, []);
    try {
      void remote.request(1, 'initialize', INITIALIZE);
      const code = await remote.exited;
      expect(code).not.toBe(0);
      const log = remote.stderr.join('');
      expect(log).toContain(MCP_REMOTE_OBSERVED.noTokenMessage);
      expect(log).toContain('send the header \\"Authorization: Bearer flk_...\\"');
      expect(log).toContain('/developers#tokens');
      expect(log).toContain('oauth_not_supported');
    } finally {
      await remote.stop();
    }
  });
});

describe(`LangChain MCP adapters (@langchain/mcp-adapters ${LANGCHAIN_OBSERVED.version})`, () => {
  let started: Started;
  beforeAll(async () => {
    started = await start({ RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(() => started.close());

  test('loads both tools over Streamable HTTP with a bearer header and invokes whoami; a refusal is a ToolException whose message ends with our JSON-RPC body', async () => {
    expect(installedVersion('@langchain/mcp-adapters')).toBe(LANGCHAIN_OBSERVED.version);
    const client = new MultiServerMCPClient({
      mcpServers: { firelimit: { transport: 'http', url: started.url, headers: { Authorization: `Bearer ${GOOD_SECRET}` } } },
    });
    try {
      const tools = await client.getTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['rate_limit_status', 'whoami']);
      const whoami = tools.find((tool) => tool.name === 'whoami');
      const first = (await whoami?.invoke({})) as { structuredContent?: unknown };
      expect(first.structuredContent).toEqual({ tokenId: TEST_TOKEN.id, name: TEST_TOKEN.name, tier: 'default', scopes: ['mcp'] });
      const failure = await firstRejection(() => whoami?.invoke({}));
      const error = failure as Error;
      expect(error.constructor.name).toBe(LANGCHAIN_OBSERVED.errorClass);
      // Nothing but the string: no status, no data, no cause.
      expect(Object.getOwnPropertyNames(error).sort()).toEqual(['message', 'name', 'stack']);
      expect(error.message.startsWith(`${LANGCHAIN_OBSERVED.messagePrefix}{`)).toBe(true);
      const body = JSON.parse(error.message.slice(error.message.indexOf('{'))) as { error: { code: number; data: unknown } };
      expect(body.error.code).toBe(-32029);
      expect(body.error.data).toMatchObject({ error: 'rate_limited', limit: 3, windowSeconds: 60, retryAfterSeconds: expect.any(Number) });
    } finally {
      await client.close();
    }
  });
});
