import net, { type AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type Request, type Response } from 'express';
import {
  arrivedOnLoopback,
  checkHost,
  checkOrigin,
  checkRequestTarget,
  createHostValidation,
  hostHeaderValues,
  hostRuleFor,
  HOSTS_NOT_CONFIGURED_MESSAGE,
  LOCALHOST_NAMES,
  type HostValidationOptions,
} from '../../src/http/host-validation';

const listed = hostRuleFor({ allowedHosts: ['mcp.example.com', 'localhost:8080'] }, false);
const unset = { allowedHosts: [] };

describe('checkHost', () => {
  test('an allowed hostname passes on any port, case-insensitively', () => {
    expect(checkHost('mcp.example.com', listed)).toEqual({ ok: true, hostname: 'mcp.example.com' });
    expect(checkHost('MCP.Example.com:8443', listed)).toEqual({ ok: true, hostname: 'mcp.example.com' });
  });

  test('an entry with a port matches that port only', () => {
    expect(checkHost('localhost:8080', listed).ok).toBe(true);
    expect(checkHost('localhost:9090', listed)).toMatchObject({ ok: false, errorCode: 'host_not_allowed' });
  });

  test('a missing or malformed Host is refused with its own code', () => {
    expect(checkHost(undefined, listed)).toMatchObject({ ok: false, errorCode: 'missing_host' });
    expect(checkHost('', listed)).toMatchObject({ ok: false, errorCode: 'missing_host' });
    expect(checkHost([], listed)).toMatchObject({ ok: false, errorCode: 'missing_host' });
    expect(checkHost('a b', listed)).toMatchObject({ ok: false, errorCode: 'invalid_host' });
    expect(checkHost('user@mcp.example.com', listed)).toMatchObject({ ok: false, errorCode: 'invalid_host' });
    expect(checkHost('mcp.example.com/path', listed)).toMatchObject({ ok: false, errorCode: 'invalid_host' });
  });

  test.each([
    { name: 'two allowed values', hosts: ['mcp.example.com', 'mcp.example.com'] },
    { name: 'an allowed value then a foreign one', hosts: ['mcp.example.com', 'evil.example'] },
    { name: 'a foreign value then an allowed one', hosts: ['evil.example', 'mcp.example.com'] },
  ])('two Host headers are refused as duplicate_host whatever they say: $name', ({ hosts }) => {
    expect(checkHost(hosts, listed)).toMatchObject({ ok: false, errorCode: 'duplicate_host' });
    expect(checkHost(hosts, hostRuleFor({ allowedHosts: [], allowAnyHost: true }, false))).toMatchObject({ ok: false, errorCode: 'duplicate_host' });
  });
});

describe('hostRuleFor', () => {
  test('with ALLOWED_HOSTS unset, a loopback arrival gets the SDK localhost list', () => {
    expect(hostRuleFor(unset, true)).toEqual({ kind: 'list', hosts: LOCALHOST_NAMES });
    expect(checkHost('[::1]:3000', hostRuleFor(unset, true)).ok).toBe(true);
    expect(checkHost('rebound.evil.example', hostRuleFor(unset, true))).toMatchObject({ ok: false, errorCode: 'host_not_allowed' });
  });

  test('with ALLOWED_HOSTS unset, a network arrival is refused whatever its Host, with a message naming the fix', () => {
    for (const host of ['svc-abc-ew.a.run.app', 'localhost', 'rebound.evil.example']) {
      expect(checkHost(host, hostRuleFor(unset, false))).toEqual({ ok: false, errorCode: 'hosts_not_configured', message: HOSTS_NOT_CONFIGURED_MESSAGE });
    }
    expect(HOSTS_NOT_CONFIGURED_MESSAGE).toContain("set ALLOWED_HOSTS to this service's host name, e.g. my-svc-abc123-ew.a.run.app, or ALLOWED_HOSTS=* to accept any Host");
  });

  test('ALLOWED_HOSTS=* accepts any Host on any interface', () => {
    for (const loopback of [true, false]) {
      const rule = hostRuleFor({ allowedHosts: [], allowAnyHost: true }, loopback);
      expect(checkHost('svc-abc-ew.a.run.app', rule)).toEqual({ ok: true, hostname: 'svc-abc-ew.a.run.app' });
      expect(checkHost('rebound.evil.example:8080', rule).ok).toBe(true);
    }
  });

  test('a list applies on loopback too (the localhost names are not added)', () => {
    expect(checkHost('localhost', hostRuleFor({ allowedHosts: ['mcp.example.com'] }, true)).ok).toBe(false);
  });
});

describe('checkOrigin', () => {
  test('no Origin (a non-browser client) passes', () => {
    expect(checkOrigin(undefined, listed)).toEqual({ ok: true });
  });

  test('an Origin must name an allowed host; "null" and garbage are refused', () => {
    expect(checkOrigin('https://mcp.example.com', listed)).toEqual({ ok: true });
    expect(checkOrigin('https://evil.example', listed)).toMatchObject({ ok: false, errorCode: 'origin_not_allowed' });
    expect(checkOrigin('null', listed)).toMatchObject({ ok: false, errorCode: 'origin_not_allowed' });
  });

  test('with any host allowed (ALLOWED_HOSTS=*), Origin is not checked', () => {
    expect(checkOrigin('https://elsewhere.example', hostRuleFor({ allowedHosts: [], allowAnyHost: true }, false))).toEqual({ ok: true });
  });
});

describe('checkRequestTarget', () => {
  test.each([
    ['an origin-form target (no authority)', '/mcp', { ok: true }],
    ['an origin-form target with a query', '/mcp?x=http://evil.example', { ok: true }],
    ['an absolute-form target naming an allowed host', 'http://mcp.example.com/mcp', { ok: true }],
    ['an allowed host with its listed port', 'http://localhost:8080/mcp', { ok: true }],
    ['an allowed host in capitals', 'HTTPS://MCP.EXAMPLE.COM/mcp', { ok: true }],
    ['another host', 'http://evil.example/mcp', { ok: false, errorCode: 'host_not_allowed' }],
    ['an allowed name on a port not listed', 'http://localhost:9999/mcp', { ok: false, errorCode: 'host_not_allowed' }],
    ['credentials before an allowed host', 'http://user:pw@mcp.example.com/mcp', { ok: false, errorCode: 'invalid_host' }],
    ['a scheme that is not http(s)', 'ftp://mcp.example.com/mcp', { ok: false, errorCode: 'invalid_host' }],
    ['a target that does not parse as a URL', 'http://[bad/mcp', { ok: false, errorCode: 'invalid_host' }],
  ])('%s: %s', (_label, target, expected) => {
    expect(checkRequestTarget(target, listed)).toMatchObject(expected);
  });

  test('unconfigured hosts refuse an absolute-form target with the fix, like Host', () => {
    expect(checkRequestTarget('http://my-svc.example/mcp', hostRuleFor(unset, false))).toMatchObject({ ok: false, errorCode: 'hosts_not_configured' });
  });
});

describe('hostHeaderValues', () => {
  test('collects every Host from raw headers, whatever its case, and nothing else', () => {
    expect(hostHeaderValues(['Host', 'a.example', 'X-Host', 'x', 'content-length', '0', 'HOST', 'b.example'])).toEqual(['a.example', 'b.example']);
    expect(hostHeaderValues(['Accept', '*/*'])).toEqual([]);
  });
});

describe('arrivedOnLoopback', () => {
  test.each([
    { local: '127.0.0.1', want: true },
    { local: '127.8.9.1', want: true },
    { local: '::1', want: true },
    { local: '::ffff:127.0.0.1', want: true },
    { local: '10.0.0.5', want: false },
    { local: '::ffff:10.0.0.5', want: false },
    { local: undefined, want: false },
  ])('$local -> $want', ({ local, want }) => {
    expect(arrivedOnLoopback({ socket: { localAddress: local } } as never)).toBe(want);
  });
});

/** A real Express app with only the middleware in front of a 200, on loopback. */
async function startApp(options: HostValidationOptions): Promise<{ port: number; close: () => Promise<void> }> {
  const app = express();
  app.post('/mcp', createHostValidation(options), (_req, res) => {
    res.status(200).json({ ok: true });
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Raw HTTP, since HTTP clients (supertest included) refuse to send a header twice. */
async function rawPost(port: number, headerLines: readonly string[], target = '/mcp'): Promise<{ status: number; body: unknown }> {
  const response = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
    socket.write([`POST ${target} HTTP/1.1`, ...headerLines, 'Content-Length: 0', 'Connection: close', '', ''].join('\r\n'));
  });
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
  const body = response.slice(response.indexOf('\r\n\r\n') + 4);
  return { status, body: body === '' ? undefined : JSON.parse(body) };
}

describe('createHostValidation on a real server', () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  beforeAll(async () => {
    app = await startApp({ allowedHosts: ['mcp.example.com'] });
  });
  afterAll(() => app.close());

  test('one allowed Host passes', async () => {
    expect((await rawPost(app.port, ['Host: mcp.example.com'])).status).toBe(200);
  });

  test('two Host headers get 400 with a JSON-RPC error, even when the first (the one Node keeps) is allowed', async () => {
    const res = await rawPost(app.port, ['Host: mcp.example.com', 'Host: evil.example']);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'More than one Host header', data: { reason: 'duplicate_host' } } });
  });

  test('an absolute-form target naming a foreign host gets 403, though its Host is allowed', async () => {
    const res = await rawPost(app.port, ['Host: mcp.example.com'], 'http://evil.example/mcp');
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: { code: -32000, data: { reason: 'host_not_allowed' } } });
  });

  test('an absolute-form target naming the allowed host passes', async () => {
    expect((await rawPost(app.port, ['Host: mcp.example.com'], 'http://mcp.example.com/mcp')).status).toBe(200);
  });

  test('a foreign Host gets 403 with its reason', async () => {
    const res = await rawPost(app.port, ['Host: evil.example']);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: { code: -32000, data: { reason: 'host_not_allowed' } } });
  });
});

describe('createHostValidation for a network arrival', () => {
  /** Loopback cannot stand in for a network interface, so the request is a stand-in with a non-loopback socket. */
  function run(options: HostValidationOptions, host: string): { status?: number; body?: unknown; passed: boolean } {
    const out: { status?: number; body?: unknown; passed: boolean } = { passed: false };
    const req = { rawHeaders: ['Host', host], headers: { host }, socket: { localAddress: '10.0.0.5' }, body: undefined } as unknown as Request;
    const res = {
      status(code: number) {
        out.status = code;
        return this;
      },
      json(body: unknown) {
        out.body = body;
        return this;
      },
    } as unknown as Response;
    createHostValidation(options)(req, res, () => (out.passed = true));
    return out;
  }

  test('with ALLOWED_HOSTS unset: 403 naming the fix', () => {
    const out = run(unset, 'my-svc-abc123-ew.a.run.app');
    expect(out).toMatchObject({ passed: false, status: 403, body: { error: { message: HOSTS_NOT_CONFIGURED_MESSAGE, data: { reason: 'hosts_not_configured' } } } });
  });

  test('with ALLOWED_HOSTS=*: passes', () => {
    expect(run({ allowedHosts: [], allowAnyHost: true }, 'my-svc-abc123-ew.a.run.app')).toEqual({ passed: true });
  });

  test('with ALLOWED_HOSTS listing the host: passes', () => {
    expect(run({ allowedHosts: ['my-svc-abc123-ew.a.run.app'] }, 'my-svc-abc123-ew.a.run.app')).toEqual({ passed: true });
  });
});
