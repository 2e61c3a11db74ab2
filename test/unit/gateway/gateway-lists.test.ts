import type { Tool } from '@modelcontextprotocol/client';
import { Gateway } from '../../../src/gateway/gateway';
import type { UpstreamClient } from '../../../src/gateway/upstream-client';

/** A Gateway over a fake upstream whose tools/list answers only when the test says. */
function gatewayOver(listTtlMs: number) {
  const time = { nowMs: 1_000_000 };
  const pending: { resolve: (tools: Tool[]) => void }[] = [];
  const upstream = {
    listTools: () => new Promise<{ tools: Tool[] }>((resolve) => pending.push({ resolve: (tools) => resolve({ tools }) })),
  };
  const client = { request: (_tokenId: string | undefined, call: (c: unknown, o: object) => Promise<unknown>) => call(upstream, { timeout: 1000 }) } as unknown as UpstreamClient;
  const gateway = new Gateway({ client, listTtlMs, clock: () => time.nowMs });
  const tool = (name: string): Tool => ({ name, inputSchema: { type: 'object' } });
  const flush = () => new Promise((resolve) => setImmediate(resolve));
  return { gateway, time, pending, tool, flush };
}

describe('Gateway lists: one fetch upstream however many callers ask', () => {
  it('callers arriving while the list is fetched share that one fetch', async () => {
    const { gateway, pending, tool, flush } = gatewayOver(60_000);
    const lists = Promise.all([gateway.tools(), gateway.tools(), gateway.tool('echo')]);
    await flush();
    expect(pending).toHaveLength(1);
    pending[0]?.resolve([tool('echo')]);
    const [a, b, echo] = await lists;
    expect(a).toEqual([tool('echo')]);
    expect(b).toBe(a);
    expect(echo).toEqual(tool('echo'));
  });

  it('within the TTL the cached list answers; after it, one new fetch', async () => {
    const { gateway, pending, tool, time, flush } = gatewayOver(1000);
    const first = gateway.tools();
    await flush();
    pending[0]?.resolve([tool('one')]);
    await first;
    time.nowMs += 999;
    expect(await gateway.tools()).toEqual([tool('one')]);
    expect(pending).toHaveLength(1);
    time.nowMs += 1;
    const again = Promise.all([gateway.tools(), gateway.tools()]);
    await flush();
    expect(pending).toHaveLength(2);
    pending[1]?.resolve([tool('two')]);
    expect(await again).toEqual([[tool('two')], [tool('two')]]);
  });

  it('a list_changed during a fetch: that fetch answers its callers but is not kept, and the next call fetches afresh', async () => {
    const { gateway, pending, tool, flush } = gatewayOver(60_000);
    const before = gateway.tools();
    await flush();
    gateway.invalidate();
    pending[0]?.resolve([tool('old')]);
    expect(await before).toEqual([tool('old')]);
    const after = gateway.tools();
    await flush();
    expect(pending).toHaveLength(2);
    pending[1]?.resolve([tool('new')]);
    expect(await after).toEqual([tool('new')]);
  });

  it('a failed fetch is not cached: the next caller asks again', async () => {
    const time = { nowMs: 0 };
    let calls = 0;
    const upstream = { listTools: async () => (++calls === 1 ? Promise.reject(new Error('down')) : { tools: [] }) };
    const client = { request: (_t: string | undefined, call: (c: unknown, o: object) => Promise<unknown>) => call(upstream, {}) } as unknown as UpstreamClient;
    const gateway = new Gateway({ client, listTtlMs: 60_000, clock: () => time.nowMs });
    await expect(gateway.tools()).rejects.toThrow('down');
    expect(await gateway.tools()).toEqual([]);
    expect(calls).toBe(2);
  });
});
