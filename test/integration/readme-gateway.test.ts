import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';
import { freePort, healthz, waitFor } from '../support/server-process';
import { startUpstreamStub, type UpstreamStub } from '../support/upstream-mcp-server';

/**
 * README.md's "In front of your MCP server" commands, run as written (through
 * bash and `npm start`) against a real SDK 2.x MCP server. Only the
 * upstream's port is changed, to the stub's free one.
 */

const REPO_ROOT = path.resolve(__dirname, '../..');
const SERVER_KEY = 'readme_key_5d2c81f0';

async function readmeGatewayCommand(): Promise<string> {
  const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## In front of your MCP server'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const lines = block.split('\n').filter((line) => line.trim() !== '');
  // The README's two commands: the install (already done here) and the start.
  expect(lines).toHaveLength(2);
  expect(lines[0]).toBe('npm ci');
  return lines[1] as string;
}

describe("the README's gateway example", () => {
  let upstream: UpstreamStub;
  let dir: string;

  beforeAll(async () => {
    upstream = await startUpstreamStub();
    dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-readme-gateway-'));
  });

  afterAll(async () => {
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fronts the upstream as written: its tools listed, a call forwarded with the configured credential and the token id, never the token', async () => {
    const command = (await readmeGatewayCommand()).replace('http://127.0.0.1:3000/mcp', upstream.url);
    expect(command).toContain(upstream.url);
    const tokensFile = path.join(dir, 'tokens.json');
    const store = new FileTokenStore({ path: tokensFile });
    const created = await new TokenService({ store }).create({ name: 'readme-integrator', tier: 'default' });
    await store.close();
    const port = await freePort();
    const child = spawn('bash', ['-c', command], {
      cwd: REPO_ROOT,
      detached: true,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, METADATA_SERVER_DETECTION: 'none', LOG_FORMAT: 'json', PORT: String(port), TOKENS_FILE: tokensFile, YOUR_SERVER_KEY: SERVER_KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await waitFor('/healthz to answer 200', 90_000, async () => {
        if (child.exitCode !== null) throw new Error(`the README command exited (${child.exitCode}):\n${output}`);
        return (await healthz(port)) === 200;
      });
      const client = new Client({ name: 'readme-integrator', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${created.secret}` } } }));
      try {
        const names = (await client.listTools()).tools.map((tool) => tool.name);
        expect(names).toEqual(expect.arrayContaining(['rate_limit_status', 'whoami', 'echo', 'slow']));
        const result = (await client.callTool({ name: 'echo', arguments: { text: 'from the README' } })) as CallToolResult;
        expect(result.structuredContent).toEqual({ echoed: 'from the README' });
      } finally {
        await client.close();
      }
      const [call] = upstream.calls();
      expect(call?.headers.authorization).toBe(`Bearer ${SERVER_KEY}`);
      expect(call?.headers['x-firelimit-token-id']).toBe(created.token.id);
      expect(JSON.stringify(upstream.hits.map((hit) => hit.headers))).not.toContain(created.secret);
      expect(output).not.toContain(SERVER_KEY);
    } finally {
      // npm runs node as its child: the whole process group goes.
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
      await exited;
    }
  }, 120_000);
});
