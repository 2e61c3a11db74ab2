import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const ESLINT = path.join(ROOT, 'node_modules/.bin/eslint');

/** Lints `source` as if it were the file at `filePath`, with the project's own config. */
async function lint(filePath: string, source: string): Promise<{ ok: boolean; output: string }> {
  const child = run(ESLINT, ['--stdin', '--stdin-filename', filePath, '--format', 'json'], { cwd: ROOT });
  child.child.stdin?.end(source);
  try {
    const { stdout } = await child;
    return { ok: true, output: stdout };
  } catch (error) {
    return { ok: false, output: String((error as { stdout?: string }).stdout ?? error) };
  }
}

// Each row is a file in one layer importing another; lint must refuse exactly the crossings.
describe('npm run lint enforces the layering of src/ and the library entries (docs/adr/0011-layering.md, 0059)', () => {
  test.each([
    ['the pure core importing an adapter', 'src/library/probe.ts', "import type { Logger } from '../logging/create-service-logger';", false],
    ['a store importing http', 'src/library/backends/probe.ts', "import { tokenOf } from '../../http/request-locals';", false],
    ['the core importing the port it may use', 'src/library/probe.ts', "import type { Logger } from '../shared/logger';", true],
    ['the upstream scheduler importing a store', 'src/library/schedule/probe.ts', "import { RtdbUpstreamQuotaStore } from '../backends/rtdb/upstream-rtdb-store';", false],
    ['the pure decision core importing the limiter', 'src/library/window/probe.ts', "import { OutageGuard } from '../limiter/outage-guard';", false],
    ['the pure decision core importing its own algorithm', 'src/library/window/probe.ts', "import { fixedWindow } from './fixed-window';", true],
    ['the library importing the service-only logger', 'src/library/limiter/probe.ts', "import { Logging } from '@google-cloud/logging';", false],
    ['the library importing the MCP SDK', 'src/library/express/probe.ts', "import { McpServer } from '@modelcontextprotocol/server';", false],
    ['a store outside backends/redis loading redis', 'src/library/memory/probe.ts', "import { createClient } from 'redis';", false],
    ['the redis backend loading redis', 'src/library/backends/redis/probe.ts', "import { createClient } from 'redis';", true],
    ['the middleware importing Express', 'src/library/express/probe.ts', "import type { Request } from 'express';", true],
    ['the limiter importing Express', 'src/library/limiter/probe.ts', "import type { Request } from 'express';", false],
    ['the service importing the library entry', 'src/service/probe.ts', "import { createRateLimiter } from '../library';", true],
    ['the service importing the express entry', 'src/service/probe.ts', "import { createRateLimitMiddleware } from '../library/express';", true],
    ['the gateway importing the quota entry', 'src/gateway/probe.ts', "import { CachedUpstreamQuota } from '../library/quota';", true],
    ['policies importing the mcp entry', 'src/policies/probe.ts', "import { isChatter } from '../library/mcp';", true],
    ['policies importing a file of the mcp entry directly', 'src/policies/probe.ts', "import { isChatter } from '../library/mcp/chatter';", false],
    ['the service importing deep into the library', 'src/service/probe.ts', "import { OutageGuard } from '../library/limiter/outage-guard';", false],
    ['http importing a file of the express entry directly', 'src/http/probe.ts', "import { writeJsonRefusal } from '../library/express/refusal-body';", false],
    ['a nested service file importing deep into the library', 'src/mcp/tools/probe.ts', "import type { Decision } from '../../library/window/decision';", false],
    ['the upstream scheduler importing a backend client', 'src/library/schedule/probe.ts', "import { createClient } from 'redis';", false],
    ['the upstream scheduler importing another layer', 'src/library/schedule/probe.ts', "import type { Config } from '../../config/config';", false],
    ['the gateway importing the MCP layer', 'src/gateway/probe.ts', "import { createMcpHandler } from '../mcp/mcp-handler';", false],
    ['the gateway importing the composition root', 'src/gateway/probe.ts', "import { buildService } from '../service/build-service';", false],
    ['the MCP layer importing the gateway', 'src/mcp/probe.ts', "import type { Gateway } from '../gateway/gateway';", true],
    ['an upstream store importing the scheduler', 'src/library/backends/rtdb/probe.ts', "import { scheduleUpstream } from '../../schedule/upstream-schedule';", true],
    ['config importing tokens', 'src/config/probe.ts', "import type { TokenRecord } from '../tokens/token-record';", false],
    ['http importing the composition root', 'src/http/probe.ts', "import { buildService } from '../service/build-service';", false],
    ['http importing mcp', 'src/http/probe.ts', "import { createMcpHandler } from '../mcp/mcp-handler';", false],
    ['mcp importing a middleware file', 'src/mcp/probe.ts', "import { createAuthMiddleware } from '../http/auth-middleware';", false],
    ['mcp importing the request locals', 'src/mcp/probe.ts', "import { tokenOf } from '../http/request-locals';", true],
    ['logging importing metrics', 'src/logging/probe.ts', "import { LimiterMetrics } from '../metrics/limiter-metrics';", false],
    ['the composition root importing every adapter', 'src/service/probe.ts', "import { createMcpHandler } from '../mcp/mcp-handler';", true],
  ])('%s', async (_name, filePath, importLine, allowed) => {
    const { ok, output } = await lint(filePath, `${importLine}\n`);
    // The probe's import is unused, so lint fails either way; what matters is whether the layering rule fired.
    expect(ok).toBe(false);
    expect(output.includes('no-restricted-imports')).toBe(!allowed);
  });
});
