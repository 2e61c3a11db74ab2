import fc from 'fast-check';
import { createJsonRpcPricing } from '../../src/library/mcp/json-rpc-pricing';
import { CHATTER_METHODS } from '../../src/library/mcp/chatter';
import { MAX_CALL_COST } from '../../src/library/mcp/tool-costs';
import { fcNumRuns } from '../support/fc-num-runs';

const call = (name: string, id = 1) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
const request = (method: string, id = 1) => ({ jsonrpc: '2.0', id, method });
const price = createJsonRpcPricing({ toolCosts: { search: 5, free_tool: 0 } });

describe('createJsonRpcPricing: the price of a JSON-RPC body', () => {
  test.each<[string, unknown, number]>([
    ['a tool with a cost of its own', call('search'), 5],
    ['a tool priced 0', call('free_tool'), 0],
    ['a tool not listed: the default', call('whoami'), 1],
    ['another request: the default', request('resources/read'), 1],
    ['initialize is chatter: free', request('initialize'), 0],
    ['tools/list is chatter', request('tools/list'), 0],
    ['a notification is chatter', { jsonrpc: '2.0', method: 'notifications/initialized' }, 0],
    ["a client's response (no method) is chatter", { jsonrpc: '2.0', id: 3, result: {} }, 0],
    ['a batch pays for each of its messages', [call('search', 1), call('whoami', 2), request('ping', 3)], 6],
    ['tools/call without a tool name: the default', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }, 1],
    ['an empty batch costs nothing', [], 0],
  ])('%s', (_name, body, cost) => {
    expect(price(body)).toBe(cost);
  });

  test('options: chatter and the default can be priced; a Map works as the table', () => {
    const strict = createJsonRpcPricing({ toolCosts: new Map([['search', 3]]), defaultCost: 2, chatterCost: 1 });
    expect([strict(call('search')), strict(call('other')), strict(request('ping')), strict(request('prompts/get'))]).toEqual([3, 2, 1, 2]);
  });

  test.each<[string, Parameters<typeof createJsonRpcPricing>[0], RegExp]>([
    ['a negative cost', { defaultCost: -1 }, /defaultCost must be a whole number from 0 to 1000000, got -1/],
    ['a fractional cost', { chatterCost: 0.5 }, /chatterCost must be a whole number/],
    ['a cost past the most one call may cost', { toolCosts: { search: MAX_CALL_COST + 1 } }, /toolCosts.search must be a whole number/],
    ['a tool name MCP does not allow', { toolCosts: { 'not a tool': 1 } }, /"not a tool" is not an MCP tool name/],
  ])('refused at startup: %s', (_name, options, message) => {
    expect(() => createJsonRpcPricing(options)).toThrow(message);
  });

  test('property: a batch costs the sum of its messages, capped at the most one call may cost', () => {
    const message = fc.oneof(fc.constantFrom(...CHATTER_METHODS.filter((m) => !m.endsWith('*'))).map((m) => request(m)), fc.constantFrom('search', 'free_tool', 'whoami').map((t) => call(t)), fc.constant(request('resources/read')));
    fc.assert(
      fc.property(fc.array(message, { maxLength: 30 }), (batch) => {
        expect(price(batch)).toBe(Math.min(MAX_CALL_COST, batch.reduce((sum, one) => sum + price(one), 0)));
      }),
      { numRuns: fcNumRuns(200) },
    );
  });
});
