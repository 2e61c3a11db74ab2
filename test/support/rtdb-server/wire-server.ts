import http from 'node:http';
import { Connection, type WsSocket } from './connection';
import { Namespace } from './namespace';
import { handleRest } from './rest';

interface WsServer {
  on(event: 'connection', cb: (socket: WsSocket, request: http.IncomingMessage) => void): void;
  close(cb?: () => void): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const ws = require('ws') as { Server: new (options: { server: http.Server }) => WsServer };

/** One RTDB endpoint: websocket protocol v5 on /.ws, plus a small REST surface (rest.ts). */
export class WireServer {
  private readonly namespaces = new Map<string, Namespace>();
  private readonly http: http.Server;
  private readonly wss: WsServer;

  constructor(
    private readonly rules: object | undefined,
    private readonly host: () => string,
  ) {
    this.http = http.createServer((req, res) => handleRest(this, req, res));
    this.wss = new ws.Server({ server: this.http });
    this.wss.on('connection', (socket, request) => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      new Connection(socket, this.namespace(namespaceOf(url, request)), this.host());
    });
  }

  namespace(name: string): Namespace {
    let ns = this.namespaces.get(name);
    if (!ns) {
      ns = new Namespace(this.rules);
      this.namespaces.set(name, ns);
    }
    return ns;
  }

  listen(port: number, address: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, address, () => {
        const bound = this.http.address();
        resolve(typeof bound === 'object' && bound ? bound.port : port);
      });
    });
  }
}

/** `?ns=` as firebase clients send it to emulators, else the first label of a `ns.localhost` host. */
export function namespaceOf(url: URL, request: http.IncomingMessage): string {
  const fromQuery = url.searchParams.get('ns');
  if (fromQuery) return fromQuery;
  const host = (request.headers.host ?? '').split(':')[0] ?? '';
  return /^[a-z0-9-]+\.localhost$/i.test(host) ? (host.split('.')[0] as string) : 'default';
}
