import type { AddressInfo } from 'node:net';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import express from 'express';
import { Agent, request } from 'undici';
import { createServiceServer } from '../../src/service/express-server';

async function listening(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function jsonApp(): express.Express {
  const app = express();
  app.use(express.json());
  app.post('/echo', (req, res) => {
    res.json({ got: req.body, ip: req.ip, host: req.hostname, sent: res.get('x-test') ?? null });
  });
  return app;
}

describe('createServiceServer', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    server = undefined;
  });

  test("builds each request and response of an Express app with the app's own prototypes, before Express sees them", async () => {
    const app = jsonApp();
    const seen: boolean[] = [];
    // A listener in front of the app, shaped like one (request, response), that looks before Express does.
    const spy = Object.assign(
      (req: IncomingMessage, res: ServerResponse) => {
        seen.push(Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response);
        app(req, res);
      },
      { request: app.request, response: app.response },
    );
    server = createServiceServer(spy as unknown as RequestListener);
    const base = await listening(server);
    const agent = new Agent({ keepAliveTimeout: 10_000 });
    try {
      // Several requests on one keep-alive connection: each is built afresh with the app's prototypes.
      for (let i = 0; i < 3; i++) {
        const answer = await request(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i }), dispatcher: agent });
        expect(answer.statusCode).toBe(200);
        expect(await answer.body.json()).toEqual({ got: { i }, ip: '127.0.0.1', host: '127.0.0.1', sent: null });
      }
    } finally {
      await agent.close();
    }
    expect(seen).toEqual([true, true, true]);
  });

  test('serves a plain request listener as node:http does', async () => {
    server = createServiceServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`${req.method} ${req.url}`);
    });
    const base = await listening(server);
    const answer = await request(`${base}/x?y=1`);
    expect(await answer.body.text()).toBe('GET /x?y=1');
  });
  // Expect: 100-continue through this server: test/integration/expect-continue.test.ts (the service on listenDualStack).
});
