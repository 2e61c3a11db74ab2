/**
 * A real RTDB wire-protocol server for tests (protocol v5 over websockets, the
 * one firebase-admin 13 speaks), run in a child process. It replaces the
 * official emulator where that cannot be downloaded.
 *
 * Implemented: listen/unlisten (plain and tagged queries; a child or value
 * order is filtered server-side only where loaded rules' `.indexOn` covers it,
 * else the whole location is sent with RTDB's `no_index` warning), get, set, update,
 * transactions (hash compare), ServerValue timestamp/increment, onDisconnect,
 * rules through targaryen for every non-admin request (websocket and REST),
 * auth as admin ("owner"), databaseAuthVariableOverride, or an unsigned JWT.
 * Left out: priorities (dropped on write), persistence across restart(),
 * rules re-checked on live listens after a write.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { killServer, signalAndWait, spawnServer } from './child-process';
import { STATS_PATH } from './rest';

export interface RtdbTestServer {
  /** "127.0.0.1:<port>", the value for FIREBASE_DATABASE_EMULATOR_HOST */
  readonly host: string;
  readonly port: number;
  /** e.g. "http://127.0.0.1:<port>?ns=<namespace>" — the databaseURL to give firebase-admin */
  readonly databaseUrl: string;
  readonly namespace: string;
  /** SIGSTOP the server process: sockets stay open, nothing answers */
  suspend(): Promise<void>;
  /** SIGCONT */
  resume(): Promise<void>;
  /** stop the process (connections drop); data may be lost */
  stop(): Promise<void>;
  /** start again on the SAME port (clients reconnect to it) */
  restart(): Promise<void>;
  /** read a path as the admin, bypassing rules (for assertions); works against the official emulator too */
  read(path: string): Promise<unknown>;
  /** kill the process for good */
  close(): Promise<void>;
}

export interface StartOptions {
  /** parsed database.rules.json (`{rules: {...}}`); default: everything open, as the emulator without rules */
  rules?: object;
  namespace?: string;
}

/** Set by createAdminApp when it points firebase-admin at one of our servers, so that is not mistaken for an external emulator. */
export const SELF_SET_HOST_VAR = 'RTDB_TEST_SERVER_EMULATOR_HOST';

function uniqueNamespace(): string {
  return `firelimit-test-${randomBytes(5).toString('hex')}`;
}

/** Admin REST read (`Bearer owner` is what the emulator, and this server, treat as the admin). */
async function readAsAdmin(host: string, namespace: string, path: string): Promise<unknown> {
  const segments = path.split('/').filter(Boolean).map(encodeURIComponent).join('/');
  const url = `http://${host}/${segments}.json?ns=${encodeURIComponent(namespace)}`;
  const response = await fetch(url, { headers: { authorization: 'Bearer owner' } });
  if (!response.ok) throw new Error(`GET ${url} failed: ${response.status} ${await response.text()}`);
  return response.json();
}

export interface RtdbWriteStats {
  /** Writes the namespace applied (puts, merges, committed transactions, REST writes). */
  readonly writes: number;
  /** Transaction writes refused for a stale hash: each is a lost race that the client runs again. */
  readonly staleWrites: number;
}

/** The namespace's write counts so far; this server only (the official emulator has no such path). */
export async function readWriteStats(server: Pick<RtdbTestServer, 'host' | 'namespace'>): Promise<RtdbWriteStats> {
  const url = `http://${server.host}${STATS_PATH}?ns=${encodeURIComponent(server.namespace)}`;
  const response = await fetch(url, { headers: { authorization: 'Bearer owner' } });
  if (!response.ok) throw new Error(`GET ${url} failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as RtdbWriteStats;
}

class ChildServer implements RtdbTestServer {
  readonly host: string;
  readonly databaseUrl: string;
  private child: ChildProcess | null;
  private closed = false;

  constructor(
    child: ChildProcess,
    readonly port: number,
    readonly namespace: string,
    private readonly rules: object | undefined,
  ) {
    this.child = child;
    this.host = `127.0.0.1:${port}`;
    this.databaseUrl = `http://${this.host}?ns=${namespace}`;
  }

  private running(): ChildProcess {
    if (this.closed) throw new Error('RTDB test server is closed');
    if (!this.child) throw new Error('RTDB test server is stopped; call restart() first');
    return this.child;
  }

  suspend(): Promise<void> {
    return signalAndWait(this.running(), 'SIGSTOP');
  }

  resume(): Promise<void> {
    return signalAndWait(this.running(), 'SIGCONT');
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child) await killServer(child);
  }

  async restart(): Promise<void> {
    if (this.closed) throw new Error('RTDB test server is closed');
    await this.stop();
    this.child = (await spawnServer(this.port, this.rules)).child;
  }

  read(path: string): Promise<unknown> {
    this.running();
    return readAsAdmin(this.host, this.namespace, path);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stop();
  }
}

/** Starts a fresh server process on a free 127.0.0.1 port; resolves once it accepts connections. */
export async function startRtdbTestServer(options: StartOptions = {}): Promise<RtdbTestServer> {
  const { child, port } = await spawnServer(0, options.rules);
  return new ChildServer(child, port, options.namespace ?? uniqueNamespace(), options.rules);
}

function externalHandle(host: string, namespace: string): RtdbTestServer & { external: boolean } {
  const unsupported = (what: string) => () =>
    Promise.reject(
      new Error(`${what}() is not supported against an external emulator (FIREBASE_DATABASE_EMULATOR_HOST=${host})`),
    );
  return {
    external: true,
    host,
    port: Number(host.split(':').pop()),
    namespace,
    databaseUrl: `http://${host}?ns=${namespace}`,
    suspend: unsupported('suspend'),
    resume: unsupported('resume'),
    stop: unsupported('stop'),
    restart: unsupported('restart'),
    read: (path) => readAsAdmin(host, namespace, path),
    close: () => Promise.resolve(),
  };
}

/**
 * The official emulator when FIREBASE_DATABASE_EMULATOR_HOST is set (firebase
 * emulators:exec), else a fresh test server. Each call gets its own namespace so
 * suites never share data. Against the emulator, `rules` are loaded into that
 * namespace over REST.
 */
export async function rtdbForTests(options: StartOptions = {}): Promise<RtdbTestServer & { external: boolean }> {
  const host = process.env.FIREBASE_DATABASE_EMULATOR_HOST;
  if (!host || host === process.env[SELF_SET_HOST_VAR]) {
    return Object.assign(await startRtdbTestServer(options), { external: false });
  }
  const handle = externalHandle(host, options.namespace ?? uniqueNamespace());
  if (options.rules) {
    const url = `http://${host}/.settings/rules.json?ns=${handle.namespace}`;
    const response = await fetch(url, {
      method: 'PUT',
      headers: { authorization: 'Bearer owner' },
      body: JSON.stringify(options.rules),
    });
    if (!response.ok) throw new Error(`PUT ${url} failed: ${response.status} ${await response.text()}`);
  }
  return handle;
}
