import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * The real `@modelcontextprotocol/server-everything` (pinned in package.json) in
 * its Streamable HTTP mode, in a process of its own, as the third-party upstream
 * the gateway tests run against; and a recording proxy that can sit in front of
 * any upstream and note every JSON-RPC message it forwards.
 */

const REPO_ROOT = path.resolve(__dirname, '../..');
const ENTRY = path.join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/**
 * Loaded before the server with `--import`. server-everything calls
 * `app.listen(PORT)`, which binds every interface; tests must stay on
 * loopback, so a listen without a host gets 127.0.0.1. It also ends the
 * server when our end of its stdin closes, so a test process that dies, even
 * by SIGKILL, leaves no server behind.
 */
const PRELOAD = `
import net from 'node:net';
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const [first, second] = args;
  if (typeof first === 'object' && first !== null && !Array.isArray(first) && first.path === undefined) {
    args[0] = { ...first, host: '127.0.0.1' };
  } else if ((typeof first === 'number' || (typeof first === 'string' && /^\\d+$/.test(first))) && typeof second !== 'string') {
    args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};
process.stdin.on('data', () => {});
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
`;
const PRELOAD_URL = `data:text/javascript,${encodeURIComponent(PRELOAD)}`;

/** The line server-everything prints from its listen callback: the port is bound. */
const READY_LINE = /listening on port (\d+)/;

export interface EverythingUpstreamOptions {
  /** Default 15000: how long to wait for the server to say it listens. */
  readonly startTimeoutMs?: number;
  /** A port to use; default a free loopback port. */
  readonly port?: number;
}

export interface EverythingUpstream {
  /** `http://127.0.0.1:PORT/mcp`. */
  readonly url: string;
  readonly port: number;
  /** The running server's pid; undefined while stopped. */
  pid(): number | undefined;
  /** SIGKILL by pid; resolves once the process has exited (the port is free then). */
  kill(): Promise<void>;
  /** Starts a fresh server (every session forgotten) on the same port, killing the old one first if it still runs. */
  restart(): Promise<void>;
  /** SIGSTOP: connections stay open, nothing answers. */
  suspend(): void;
  /** SIGCONT. */
  resume(): void;
  /** The server's output so far (bounded), for failure messages. */
  output(): string;
  /** Stops for good; safe to call twice. */
  close(): Promise<void>;
}

interface Running {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
}

const MAX_OUTPUT_CHARS = 64 * 1024;
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

export async function startEverythingUpstream(options: EverythingUpstreamOptions = {}): Promise<EverythingUpstream> {
  installExitHook();
  const startTimeoutMs = options.startTimeoutMs ?? 15_000;
  let output = '';
  const note = (chunk: string): void => {
    output = (output + chunk).slice(-MAX_OUTPUT_CHARS);
  };
  let lastError: unknown;
  // A free port can be taken between our probe and the server's bind; try a few.
  for (let attempt = 0; attempt < (options.port === undefined ? 5 : 1); attempt++) {
    const port = options.port ?? (await freeLoopbackPort());
    try {
      let running: Running | undefined = await launch(port, startTimeoutMs, note);
      let closed = false;
      const kill = async (): Promise<void> => {
        const current = running;
        running = undefined;
        if (current === undefined) return;
        if (current.child.pid !== undefined && current.child.exitCode === null && current.child.signalCode === null) {
          try {
            process.kill(current.child.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        await current.exited;
      };
      const signal = (name: NodeJS.Signals): void => {
        const pid = running?.child.pid;
        if (pid !== undefined) process.kill(pid, name);
      };
      return {
        url: `http://127.0.0.1:${port}/mcp`,
        port,
        pid: () => running?.child.pid,
        kill,
        restart: async () => {
          if (closed) throw new Error('server-everything: restart after close');
          await kill();
          running = await launch(port, startTimeoutMs, note);
        },
        suspend: () => signal('SIGSTOP'),
        resume: () => signal('SIGCONT'),
        output: () => output,
        close: async () => {
          closed = true;
          await kill();
        },
      };
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

function launch(port: number, startTimeoutMs: number, note: (chunk: string) => void): Promise<Running> {
  const child = spawn(process.execPath, ['--import', PRELOAD_URL, ENTRY, 'streamableHttp'], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port), NODE_ENV: 'test' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      live.delete(child);
      resolve();
    });
  });
  return new Promise<Running>((resolve, reject) => {
    let seen = '';
    let settled = false;
    const finish = (error?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error === undefined) {
        resolve({ child, exited });
        return;
      }
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      void exited.then(() => reject(error));
    };
    const timer = setTimeout(() => finish(new Error(`server-everything did not listen on ${port} within ${startTimeoutMs} ms:\n${seen}`)), startTimeoutMs);
    const read = (chunk: string): void => {
      note(chunk);
      if (settled) return;
      seen = (seen + chunk).slice(-8192);
      const match = READY_LINE.exec(seen);
      if (match !== null && Number(match[1]) === port) finish();
    };
    child.stdout?.setEncoding('utf8').on('data', read);
    child.stderr?.setEncoding('utf8').on('data', read);
    child.once('exit', (code, signal) => finish(new Error(`server-everything exited (${code ?? signal}) before listening on ${port}:\n${seen}`)));
    child.once('error', (error) => finish(error));
  });
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = (server.address() as AddressInfo);
      server.close(() => resolve(port));
    });
  });
}

/** One JSON-RPC message the proxy forwarded upstream. */
export interface RecordedMessage {
  /** Date.now() when its HTTP request arrived. */
  readonly atMs: number;
  readonly httpMethod: string;
  /** The JSON-RPC method; undefined for a response the client sent (to a server's request). */
  readonly method: string | undefined;
  readonly id: string | number | undefined;
  readonly params: unknown;
  /** The request's Mcp-Session-Id header. */
  readonly sessionId: string | undefined;
  /** The request's X-Firelimit-Token-Id header. */
  readonly tokenId: string | undefined;
  /** Position in its batch (0-based); undefined when the body was a single message. */
  readonly batchPosition: number | undefined;
  readonly batchSize: number | undefined;
  readonly headers: IncomingHttpHeaders;
}

export interface RecordingProxy {
  /** `http://127.0.0.1:PORT` plus the upstream URL's path. */
  readonly url: string;
  readonly port: number;
  /** Every JSON-RPC message forwarded, in arrival order. */
  readonly messages: RecordedMessage[];
  /** The messages of one JSON-RPC method. */
  of(method: string): RecordedMessage[];
  /** Forgets what was recorded so far. */
  clear(): void;
  close(): Promise<void>;
}

/**
 * An HTTP proxy on loopback in front of `upstreamUrl` (any path is forwarded
 * to the upstream's host and port unchanged). Request bodies are read whole
 * (they are small JSON-RPC messages) to be recorded, then forwarded; answers
 * (JSON or SSE) are streamed back as they come. A body that is not JSON is
 * forwarded and not recorded.
 */
export async function startRecordingProxy(upstreamUrl: string): Promise<RecordingProxy> {
  const target = new URL(upstreamUrl);
  const messages: RecordedMessage[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const atMs = Date.now();
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      record(messages, atMs, req.method ?? 'GET', req.headers, body);
      const headers = { ...req.headers, host: target.host };
      const forward = httpRequest(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end('recording proxy: upstream unreachable');
      });
      // The caller went away (a cancelled SSE stream): so does the request upstream.
      res.on('close', () => {
        if (!res.writableFinished) forward.destroy();
      });
      forward.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${target.pathname}`,
    port,
    messages,
    of: (method) => messages.filter((message) => message.method === method),
    clear: () => {
      messages.length = 0;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function record(messages: RecordedMessage[], atMs: number, httpMethod: string, headers: IncomingHttpHeaders, body: Buffer): void {
  if (body.length === 0) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return;
  }
  const sessionId = single(headers['mcp-session-id']);
  const tokenId = single(headers['x-firelimit-token-id']);
  const batch = Array.isArray(parsed);
  const items: unknown[] = batch ? (parsed as unknown[]) : [parsed];
  items.forEach((item, index) => {
    const message = (typeof item === 'object' && item !== null ? item : {}) as { method?: unknown; id?: unknown; params?: unknown };
    messages.push({
      atMs,
      httpMethod,
      method: typeof message.method === 'string' ? message.method : undefined,
      id: typeof message.id === 'string' || typeof message.id === 'number' ? message.id : undefined,
      params: message.params,
      sessionId,
      tokenId,
      batchPosition: batch ? index : undefined,
      batchSize: batch ? items.length : undefined,
      headers,
    });
  });
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
