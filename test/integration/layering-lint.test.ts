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
describe('npm run lint enforces the layering of src/ (docs/adr/0011-layering.md)', () => {
  test.each([
    ['the pure core importing an adapter', 'src/limiter/probe.ts', "import type { Logger } from '../logging/create-service-logger';", false],
    ['a store importing http', 'src/limiter/stores/probe.ts', "import { tokenOf } from '../../http/request-locals';", false],
    ['the core importing the port it may use', 'src/limiter/probe.ts', "import type { Logger } from '../shared/logger';", true],
    ['the upstream scheduler importing a store', 'src/limiter/upstream/probe.ts', "import { RtdbUpstreamQuotaStore } from '../stores/upstream-rtdb-store';", false],
    ['the upstream scheduler importing a backend client', 'src/limiter/upstream/probe.ts', "import { createClient } from 'redis';", false],
    ['the upstream scheduler importing another layer', 'src/limiter/upstream/probe.ts', "import type { Config } from '../../config/config';", false],
    ['the gateway importing the MCP layer', 'src/gateway/probe.ts', "import { createMcpHandler } from '../mcp/mcp-handler';", false],
    ['the gateway importing the composition root', 'src/gateway/probe.ts', "import { buildService } from '../service/build-service';", false],
    ['the MCP layer importing the gateway', 'src/mcp/probe.ts', "import type { Gateway } from '../gateway/gateway';", true],
    ['an upstream store importing the scheduler', 'src/limiter/stores/probe.ts', "import { scheduleUpstream } from '../upstream/upstream-schedule';", true],
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
