import type { Tool } from '@modelcontextprotocol/client';
import fc from 'fast-check';
import { Gateway } from '../../../src/gateway/gateway';
import type { UpstreamClient } from '../../../src/gateway/upstream-client';
import { UpstreamError } from '../../../src/gateway/upstream-error';
import { createCapturingLogger } from '../../support/capturing-logger';

/** A Gateway with per-caller lists over a fake upstream that lists, to each token, a tool named after it. */
function gatewayOver(maxCallers: number | undefined, listTtlMs = 60_000) {
  const logger = createCapturingLogger();
  const time = { nowMs: 1_000_000 };
  const fetchedFor: (string | undefined)[] = [];
  const state = { down: false };
  const client = {
    request: async (tokenId: string | undefined, call: (c: unknown, o: object) => Promise<unknown>) =>
      call(
        {
          listTools: async () => {
            if (state.down) throw new UpstreamError('unreachable', 'the upstream MCP server cannot be reached');
            fetchedFor.push(tokenId);
            return { tools: [{ name: `tool-of-${tokenId ?? 'everyone'}`, inputSchema: { type: 'object' } } satisfies Tool] };
          },
        },
        { timeout: 1000 },
      ),
  } as unknown as UpstreamClient;
  const gateway = new Gateway({ client, listTtlMs, clock: () => time.nowMs, logger, ...(maxCallers === undefined ? {} : { perCallerLists: { maxCallers } }) });
  const names = async (tokenId: string) => (await gateway.forListing('tools', tokenId)).map((t) => t.name);
  return { gateway, time, fetchedFor, state, names, logger };
}

describe('Gateway lists per caller (UPSTREAM_LISTS=per-caller)', () => {
  it.each([
    // [per-caller bound or shared, who lists, what each is listed, whose sessions the upstream was asked on]
    [undefined, ['tok_a', 'tok_b'], [['tool-of-everyone'], ['tool-of-everyone']], [undefined]],
    [8, ['tok_a', 'tok_b'], [['tool-of-tok_a'], ['tool-of-tok_b']], ['tok_a', 'tok_b']],
    [8, ['tok_a', 'tok_a', 'tok_b', 'tok_a'], [['tool-of-tok_a'], ['tool-of-tok_a'], ['tool-of-tok_b'], ['tool-of-tok_a']], ['tok_a', 'tok_b']],
  ] as const)('bound %s: callers %j are listed %j, fetched on the sessions of %j', async (maxCallers, callers, expected, fetched) => {
    const { names, fetchedFor } = gatewayOver(maxCallers);
    const got: string[][] = [];
    for (const caller of callers) got.push(await names(caller));
    expect(got).toEqual(expected);
    expect(fetchedFor).toEqual(fetched);
  });

  it("a tools/call finds its tool in the caller's own list only", async () => {
    const { gateway } = gatewayOver(8);
    expect(await gateway.tool('tool-of-tok_a', 'tok_a')).toMatchObject({ name: 'tool-of-tok_a' });
    expect(await gateway.tool('tool-of-tok_a', 'tok_b')).toBeUndefined();
  });

  it("with the upstream down, each caller gets its own last good list, never another's", async () => {
    const { names, state } = gatewayOver(8, 0);
    await names('tok_a');
    state.down = true;
    expect(await names('tok_a')).toEqual(['tool-of-tok_a']);
    expect(await names('tok_b')).toEqual([]);
  });

  it('an outage is one stale WARNING per list however many callers list, and one fresh line when it ends', async () => {
    const { names, state, logger } = gatewayOver(8, 0);
    state.down = true;
    for (const token of ['tok_a', 'tok_b', 'tok_c', 'tok_a']) await names(token);
    state.down = false;
    for (const token of ['tok_a', 'tok_b']) await names(token);
    const events = logger.entries.map((e) => e.fields?.event).filter((e) => e === 'gateway.list_stale' || e === 'gateway.list_fresh');
    expect(events).toEqual(['gateway.list_stale', 'gateway.list_fresh']);
  });

  it('keeps the lists of at most maxCallers tokens, the least recently fetched forgotten first (fresh and last good)', async () => {
    const { names, fetchedFor, state } = gatewayOver(2);
    await names('tok_a');
    await names('tok_b');
    await names('tok_c');
    // tok_a was evicted: listed again, it is fetched again; tok_c still cached.
    fetchedFor.length = 0;
    await names('tok_c');
    expect(fetchedFor).toEqual([]);
    await names('tok_a');
    expect(fetchedFor).toEqual(['tok_a']);
    // tok_b is now the oldest and gone, its last good list too: with the upstream down, it has nothing to be served.
    state.down = true;
    expect(await names('tok_b')).toEqual([]);
    expect(await names('tok_a')).toEqual(['tool-of-tok_a']);
  });

  it('property: however many tokens list, at most maxCallers have a list kept, and the most recent ones do', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 40 }), async (maxCallers, sequence) => {
        const { names, fetchedFor } = gatewayOver(maxCallers);
        const recent: string[] = [];
        for (const n of sequence) {
          const token = `tok_${n}`;
          const before = fetchedFor.length;
          await names(token);
          const wasKept = recent.includes(token);
          // A fetch exactly when the token's list was not among the kept ones.
          expect(fetchedFor.length - before).toBe(wasKept ? 0 : 1);
          // Recency moves on a fetch only: a cache hit does not make a token more recent.
          if (!wasKept) {
            recent.push(token);
            if (recent.length > maxCallers) recent.shift();
          }
        }
      }),
    );
  });
});
