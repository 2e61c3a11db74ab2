import { execFileSync } from 'node:child_process';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startEverythingUpstream, startRecordingProxy, type EverythingUpstream, type RecordingProxy } from '../support/everything-upstream';

jest.setTimeout(60_000);

/** The local addresses listening on `port`, as `ss -ltn` shows them. */
function listeners(port: number): string[] {
  const out = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.trim() !== '').map((line) => line.trim().split(/\s+/)[3] ?? '');
}

async function connectTo(url: string): Promise<Client> {
  const client = new Client({ name: 'probe', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

describe('test support: the real server-everything and a recording proxy', () => {
  let upstream: EverythingUpstream;
  let proxy: RecordingProxy;

  beforeAll(async () => {
    upstream = await startEverythingUpstream();
    proxy = await startRecordingProxy(upstream.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await upstream?.close();
  });

  it('listens on 127.0.0.1 only, though the server itself binds every interface', () => {
    expect(listeners(upstream.port)).toEqual([`127.0.0.1:${upstream.port}`]);
  });

  it('records each message it forwards with its method, session id and time', async () => {
    proxy.clear();
    const before = Date.now();
    const client = await connectTo(proxy.url);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('echo');
    await client.close();
    const methods = proxy.messages.map((message) => message.method);
    expect(methods.slice(0, 3)).toEqual(['initialize', 'notifications/initialized', 'tools/list']);
    const list = proxy.of('tools/list')[0];
    expect(list?.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(list?.atMs).toBeGreaterThanOrEqual(before);
    expect(list?.batchPosition).toBeUndefined();
    expect(proxy.of('initialize')[0]?.sessionId).toBeUndefined();
  });

  it('records the position of each message of a batch', async () => {
    proxy.clear();
    await fetch(proxy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 2, method: 'tools/list' }]),
    }).then((answer) => answer.text());
    expect(proxy.messages.map((m) => [m.method, m.batchPosition, m.batchSize])).toEqual([['ping', 0, 2], ['tools/list', 1, 2]]);
  });

  it('is killed by pid and restarted on the same port, forgetting every session', async () => {
    const client = await connectTo(upstream.url);
    const pid = upstream.pid();
    await upstream.kill();
    expect(upstream.pid()).toBeUndefined();
    expect(() => process.kill(pid ?? -1, 0)).toThrow();
    await upstream.restart();
    expect(upstream.pid()).not.toBe(pid);
    expect(listeners(upstream.port)).toEqual([`127.0.0.1:${upstream.port}`]);
    // The restarted reference server answers a session it does not know with 400, not 404.
    await expect(client.listTools()).rejects.toMatchObject({ status: 400 });
    const fresh = await connectTo(upstream.url);
    expect((await fresh.listTools()).tools.length).toBeGreaterThan(0);
    await fresh.close();
    await client.close().catch(() => undefined);
  });
});
