import type { CallTarget } from '../../src/library/mcp/call-target';
import { defaultCostOf } from '../../src/policies/free-calls';
import { isChatter } from '../../src/library/mcp/chatter';

describe('defaultCostOf: chatter and the free tools cost 0, other calls 1', () => {
  test.each<[string, CallTarget, number]>([
    ['a client response', { method: '(response)' }, 0],
    ['any notification', { method: 'notifications/progress' }, 0],
    ['initialize', { method: 'initialize' }, 0],
    ['server/discover (the 2026-07-28 handshake)', { method: 'server/discover' }, 0],
    ['logging/setLevel (sent at connect)', { method: 'logging/setLevel' }, 0],
    ['prompts/list', { method: 'prompts/list' }, 0],
    ['rate_limit_status', { method: 'tools/call', tool: 'rate_limit_status' }, 0],
    ['another tool', { method: 'tools/call', tool: 'search' }, 1],
    ['a tool call naming no tool', { method: 'tools/call' }, 1],
    ['a method that only starts like a notification', { method: 'notificationsX' }, 1],
    ['a method that extends a chatter method', { method: 'initialize/extra' }, 1],
    ['resources/read', { method: 'resources/read' }, 1],
  ])('%s costs %d', (_name, target, cost) => {
    expect(defaultCostOf(target)).toBe(cost);
    expect(isChatter(target)).toBe(cost === 0 && target.method !== 'tools/call');
  });
});

describe('defaultCostOf with the methods the server answers', () => {
  const served: ReadonlySet<string> = new Set(['initialize', 'server/discover', 'ping', 'tools/list', 'tools/call', 'resources/read']);
  test.each<[string, CallTarget, number]>([
    ['a served tool call', { method: 'tools/call', tool: 'search' }, 1],
    ['served resources/read', { method: 'resources/read' }, 1],
    ['prompts/get, not served (-32601)', { method: 'prompts/get' }, 0],
    ['a made-up method (-32601)', { method: 'foo/bar' }, 0],
    ['completion/complete, not served', { method: 'completion/complete' }, 0],
  ])('%s costs %d', (_name, target, cost) => {
    expect(defaultCostOf(target, served)).toBe(cost);
  });

  test('without the set, every method is priced as served', () => {
    expect(defaultCostOf({ method: 'foo/bar' })).toBe(1);
  });
});
