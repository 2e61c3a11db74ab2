import type { CallTarget } from '../../src/policies/call-target';
import { defaultCostOf, isChatter } from '../../src/policies/free-calls';

describe('defaultCostOf: chatter and the free tools cost 0, other calls 1', () => {
  test.each<[string, CallTarget, number]>([
    ['a client response', { method: '(response)' }, 0],
    ['any notification', { method: 'notifications/progress' }, 0],
    ['initialize', { method: 'initialize' }, 0],
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
