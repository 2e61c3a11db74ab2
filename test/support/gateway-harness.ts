import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport, type CallToolResult, type ClientOptions } from '@modelcontextprotocol/client';
import { loadConfig } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { createCapturingLogger } from './capturing-logger';
import { GOOD_SECRET, standInAuth, TEST_TOKEN } from './mcp-test-app';
import type { AuthenticatedToken } from '../../src/tokens/token-record';

/** firelimit composed by buildService from environment variables, on a loopback port, for the gateway tests. */
export interface RunningFirelimit {
  readonly service: Service;
  readonly server: Server;
  readonly url: URL;
  readonly logger: ReturnType<typeof createCapturingLogger>;
  stop(): Promise<void>;
}

export interface StartFirelimitOptions {
  readonly clock?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Where LIMITS_FILE and other relative paths resolve. */
  readonly cwd?: string;
  /** More integrators beside TEST_TOKEN, by secret (connect with `connect(url, undefined, secret)`). */
  readonly tokens?: Readonly<Record<string, AuthenticatedToken>>;
}

export async function startFirelimit(env: NodeJS.ProcessEnv, options: StartFirelimitOptions = {}): Promise<RunningFirelimit> {
  const logger = createCapturingLogger();
  const service = await buildService(loadConfig({ RATE_LIMIT_PER_MINUTE: '1000', ...env }, options.cwd === undefined ? {} : { cwd: options.cwd }), {
    logger,
    clock: options.clock,
    sleep: options.sleep,
    authMiddleware: standInAuth({ [GOOD_SECRET]: TEST_TOKEN, ...options.tokens }),
  });
  const server = service.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    service,
    server,
    logger,
    url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`),
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await service.release();
    },
  };
}

/** The integrator: an SDK 2.x client with the test token, or `secret`'s (2025 handshake unless `options` pins a revision). */
export async function connect(url: URL, options?: ClientOptions, secret = GOOD_SECRET): Promise<Client> {
  const client = new Client({ name: 'integrator', version: '1.0.0' }, options);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${secret}` } } }));
  return client;
}

export function textOf(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

/** Polls `probe` until it holds, for things that arrive on a stream the test cannot await (a notification); fails after `timeoutMs`. */
export async function eventually(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
