import { GATEWAY_CAPABILITIES, OWN_CAPABILITIES } from '../../src/mcp/build-mcp-server';
import { servedMethodsOf } from '../../src/mcp/served-methods';

test('our own server answers the handshakes, tools and resources, and nothing of prompts, logging or completions', () => {
  expect([...servedMethodsOf(OWN_CAPABILITIES)].sort()).toEqual(
    ['initialize', 'ping', 'resources/list', 'resources/read', 'resources/templates/list', 'server/discover', 'tools/call', 'tools/list'].sort(),
  );
});

test('in front of an upstream it answers prompts and logging/setLevel too', () => {
  const served = servedMethodsOf(GATEWAY_CAPABILITIES);
  for (const method of ['prompts/list', 'prompts/get', 'logging/setLevel', 'tools/call', 'resources/read']) expect(served.has(method)).toBe(true);
  expect(served.has('completion/complete')).toBe(false);
});

test.each([
  [{ completions: {} }, 'completion/complete', true],
  [{ resources: { subscribe: true } }, 'resources/subscribe', true],
  [{ resources: {} }, 'resources/subscribe', false],
  [{}, 'tools/call', false],
])('capabilities %j: %s served = %p', (capabilities, method, served) => {
  expect(servedMethodsOf(capabilities).has(method)).toBe(served);
});
