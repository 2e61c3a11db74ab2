import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const REPO_ROOT = path.resolve(__dirname, '../..');

/** The real entry point, src/server.ts, in a process of its own. */
export interface ServerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
  stderr(): string;
  /** SIGKILL if still running, then wait for the exit. */
  kill(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts src/server.ts with `node --import tsx` (not the tsx CLI: signals must
 * reach the server itself, not a wrapper), in a clean environment: knobs set by
 * whoever runs jest must not change the service under test. `env` adds knobs.
 */
export function startServerProcess(port: number, env: Record<string, string>): ServerProcess {
  const child = spawn(process.execPath, ['--import', pathToFileURL(require.resolve('tsx')).href, 'src/server.ts'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      METADATA_SERVER_DETECTION: 'none',
      NODE_ENV: 'test',
      LOG_FORMAT: 'json',
      PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    port,
    exit,
    stdout: () => out,
    stderr: () => err,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exit;
    },
  };
}

export function healthz(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(undefined));
  });
}

/** Polls until `probe` returns true; the interval only paces the polling, readiness is what ends it. */
export async function waitFor(what: string, timeoutMs: number, probe: () => Promise<boolean>, server?: ServerProcess): Promise<number> {
  const startedAt = Date.now();
  while (Date.now() - startedAt < timeoutMs) {
    if (await probe()) return Date.now() - startedAt;
    if (server !== undefined && server.child.exitCode !== null) {
      throw new Error(`server exited (${server.child.exitCode}) while waiting for ${what}\n${server.stderr()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Starts the server and resolves once /healthz answers 200. */
export async function startReadyServer(env: Record<string, string>, readyTimeoutMs = 30_000): Promise<ServerProcess> {
  const server = startServerProcess(await freePort(), env);
  try {
    await waitFor('/healthz to answer 200', readyTimeoutMs, async () => (await healthz(server.port)) === 200, server);
  } catch (error) {
    await server.kill();
    throw error;
  }
  return server;
}

export function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
