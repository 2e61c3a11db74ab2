import { classifyInboundRequest } from '@modelcontextprotocol/server';
import fc from 'fast-check';
import { plainLegacyRequest } from '../../src/http/mcp-protocol-check';
import { plainModernRoute } from '../../src/http/plain-modern-request';

const VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2026-07-28', ' 2026-07-28\t', '2026-07-28 ', '3\t', '2027-01-01', '', 'garbage'];
const json = fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.boolean(), fc.constant(null), fc.constant({}), fc.constant([]));
const meta = fc.oneof(
  fc.record({ 'io.modelcontextprotocol/protocolVersion': fc.oneof(fc.constantFrom(...VERSIONS), json), progressToken: fc.oneof(fc.string(), fc.integer()) }, { requiredKeys: [] }),
  json,
);
const body = fc.oneof(
  fc.record(
    { jsonrpc: fc.constant('2.0'), id: fc.oneof(fc.integer(), fc.string(), fc.constant(null)), method: fc.constantFrom('tools/call', 'tools/list', 'initialize', 'ping'), params: fc.oneof(fc.record({ _meta: meta, name: json }, { requiredKeys: [] }), json) },
    { requiredKeys: ['jsonrpc', 'method'] },
  ),
  fc.array(fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), method: fc.constant('tools/list') }), { maxLength: 2 }),
  json,
);
const headers = fc.record({ 'mcp-protocol-version': fc.constantFrom(...VERSIONS), 'mcp-method': fc.constantFrom('tools/call', 'ping'), 'mcp-name': fc.constant('whoami') }, { requiredKeys: [] });

describe('plainLegacyRequest', () => {
  it('claims only what the SDK classifier routes to the 2025 era without a refusal', () => {
    let claimed = 0;
    fc.assert(
      fc.property(headers, body, (h, b) => {
        if (!plainLegacyRequest(h, b)) return;
        claimed++;
        const outcome = classifyInboundRequest({
          httpMethod: 'POST',
          protocolVersionHeader: h['mcp-protocol-version'],
          mcpMethodHeader: h['mcp-method'],
          mcpNameHeader: h['mcp-name'],
          body: b,
        });
        expect(outcome.kind).toBe('legacy');
      }),
      { numRuns: 5000 },
    );
    // The property holds of something: a good share of the generated requests take the plain path.
    expect(claimed).toBeGreaterThan(50);
  });

  it('takes a 2025-era tools/call and leaves initialize, envelopes and 2026 headers to the classifier', () => {
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } };
    expect(plainLegacyRequest({ 'mcp-protocol-version': '2025-11-25' }, call)).toBe(true);
    expect(plainLegacyRequest({}, call)).toBe(true);
    expect(plainLegacyRequest({ 'mcp-protocol-version': '2026-07-28' }, call)).toBe(false);
    expect(plainLegacyRequest({}, { ...call, method: 'initialize' })).toBe(false);
    expect(plainLegacyRequest({}, { ...call, params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } } })).toBe(false);
    expect(plainLegacyRequest({}, [call])).toBe(false);
  });
});

const MODERN_KEYS = {
  version: 'io.modelcontextprotocol/protocolVersion',
  info: 'io.modelcontextprotocol/clientInfo',
  capabilities: 'io.modelcontextprotocol/clientCapabilities',
  logLevel: 'io.modelcontextprotocol/logLevel',
} as const;
const clientInfo = fc.oneof(
  fc.record({ name: fc.oneof(fc.constant('bench'), json), version: fc.oneof(fc.constant('1.0.0'), json), title: fc.oneof(fc.constant('Bench'), json), websiteUrl: fc.constant('not a url'), icons: json }, { requiredKeys: [] }),
  json,
);
const capabilities = fc.oneof(
  fc.record({ roots: fc.oneof(fc.record({ listChanged: fc.oneof(fc.boolean(), json) }, { requiredKeys: [] }), json), sampling: json, elicitation: json, experimental: json, extensions: json, other: json }, { requiredKeys: [] }),
  json,
);
const modernMeta = fc.record(
  {
    [MODERN_KEYS.version]: fc.oneof(fc.constantFrom(...VERSIONS), json),
    [MODERN_KEYS.info]: clientInfo,
    [MODERN_KEYS.capabilities]: capabilities,
    [MODERN_KEYS.logLevel]: fc.oneof(fc.constantFrom('info', 'loud'), json),
    progressToken: fc.oneof(fc.string(), fc.integer()),
    'example.com/foreign': json,
  },
  { requiredKeys: [MODERN_KEYS.version] },
);
const modernBody = fc.record(
  {
    jsonrpc: fc.constant('2.0'),
    id: fc.oneof(fc.integer(), fc.string(), fc.constant(null)),
    method: fc.constantFrom('tools/call', 'tools/list', 'initialize', 'server/discover'),
    params: fc.oneof(fc.record({ _meta: fc.oneof(modernMeta, json), name: json, arguments: json }, { requiredKeys: [] }), json),
    result: json,
    error: json,
  },
  { requiredKeys: ['jsonrpc', 'method', 'params'] },
);
const modernHeaders = fc.record(
  { 'mcp-protocol-version': fc.constantFrom(...VERSIONS), 'mcp-method': fc.constantFrom('tools/call', 'tools/list', ' tools/call', 'initialize'), 'mcp-name': fc.constantFrom('whoami', 'other') },
  { requiredKeys: [] },
);

/** Mostly the plain value, sometimes any other: requests near the plain case, where a wrong claim would hide. */
function mostly<T, U>(plain: T, other: fc.Arbitrary<U>): fc.Arbitrary<T | U> {
  return fc.oneof({ arbitrary: fc.constant(plain) as fc.Arbitrary<T | U>, weight: 4 }, { arbitrary: other, weight: 1 });
}
const rareExtras = (extras: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<Record<string, unknown>> =>
  fc.oneof({ arbitrary: fc.constant({}), weight: 4 }, { arbitrary: extras, weight: 1 });
const nearPlainMeta = fc
  .tuple(
    fc.record({
      [MODERN_KEYS.version]: mostly('2026-07-28', fc.oneof(fc.constantFrom(...VERSIONS), json)),
      [MODERN_KEYS.info]: mostly({ name: 'bench', version: '1.0.0' }, clientInfo),
      [MODERN_KEYS.capabilities]: mostly({}, capabilities),
    }),
    rareExtras(fc.record({ [MODERN_KEYS.logLevel]: fc.constantFrom('info', 'loud'), progressToken: fc.integer(), 'example.com/foreign': json }, { requiredKeys: [] })),
  )
  .map(([base, extras]) => ({ ...base, ...extras }));
const nearPlainExchange = fc
  .tuple(
    fc.record({ jsonrpc: mostly('2.0', json), id: mostly(1, fc.oneof(fc.string(), fc.constant(null), fc.double())), method: fc.constantFrom('tools/call', 'tools/list', 'initialize', 'tools/call ', '\ttools/list') }),
    nearPlainMeta,
    rareExtras(fc.record({ result: json, error: json }, { requiredKeys: [] })),
  )
  .chain(([envelope, meta, extras]) =>
    fc.tuple(
      fc.record(
        { 'mcp-protocol-version': mostly(String(meta[MODERN_KEYS.version]), fc.constantFrom(...VERSIONS)), 'mcp-method': mostly(envelope.method, fc.constantFrom('tools/call', ' tools/call')), 'mcp-name': fc.constant('whoami') },
        { requiredKeys: ['mcp-protocol-version', 'mcp-method'] },
      ),
      fc.constant({ ...envelope, ...extras, params: { name: 'whoami', _meta: meta } }),
    ),
  );

describe('plainModernRoute', () => {
  it("answers only with the SDK classifier's own route", () => {
    let claimed = 0;
    fc.assert(
      fc.property(fc.oneof(fc.tuple(modernHeaders, fc.oneof(modernBody, body)), nearPlainExchange), ([h, b]) => {
        const route = plainModernRoute(h, b);
        if (route === undefined) return;
        claimed++;
        const outcome = classifyInboundRequest({
          httpMethod: 'POST',
          protocolVersionHeader: h['mcp-protocol-version'],
          mcpMethodHeader: h['mcp-method'],
          mcpNameHeader: h['mcp-name'],
          body: b,
        });
        expect(route).toEqual(outcome);
      }),
      { numRuns: 20000 },
    );
    // The property holds of something: some of the generated requests take the plain path.
    expect(claimed).toBeGreaterThan(200);
  });

  it('takes a plain 2026-era tools/call and leaves the rest to the classifier', () => {
    const _meta = { [MODERN_KEYS.version]: '2026-07-28', [MODERN_KEYS.info]: { name: 'bench', version: '1.0.0' }, [MODERN_KEYS.capabilities]: {} };
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta } };
    const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'whoami' };
    expect(plainModernRoute(headers, call)).toEqual({ kind: 'modern', messageKind: 'request', message: call, classification: { era: 'modern', revision: '2026-07-28' } });
    expect(plainModernRoute({ ...headers, 'mcp-method': 'tools/list' }, call)).toBeUndefined();
    expect(plainModernRoute({ ...headers, 'mcp-protocol-version': '2025-11-25' }, call)).toBeUndefined();
    expect(plainModernRoute(headers, { ...call, params: { ...call.params, _meta: { ..._meta, [MODERN_KEYS.capabilities]: { roots: {} } } } })).toBeUndefined();
    expect(plainModernRoute(headers, { ...call, params: { ...call.params, _meta: { ..._meta, [MODERN_KEYS.info]: { name: 'bench' } } } })).toBeUndefined();
    expect(plainModernRoute(headers, [call])).toBeUndefined();
  });

  // Found by the property above in CI (seed 188579112, path "16354:1:2:2:1:2:3"): the classifier strips
  // the header's spaces and tabs, so header and envelope both "3 " disagree there and the SDK refuses.
  it.each([
    ['a revision ending in a space', '3 ', 'tools/call'],
    ['a revision ending in a tab', '2027-01-01\t', 'tools/call'],
    ['a method ending in a space', '2026-07-28', 'tools/call '],
    ['a method opening with a tab', '2026-07-28', '\ttools/list'],
  ])('leaves %s, equal in header and body, to the classifier, which refuses it', (_case, revision, method) => {
    const _meta = { [MODERN_KEYS.version]: revision, [MODERN_KEYS.info]: { name: 'bench', version: '1.0.0' }, [MODERN_KEYS.capabilities]: {} };
    const call = { jsonrpc: '2.0', id: 1, method, params: { name: 'whoami', _meta } };
    const headers = { 'mcp-protocol-version': revision, 'mcp-method': method };
    expect(plainModernRoute(headers, call)).toBeUndefined();
    const outcome = classifyInboundRequest({ httpMethod: 'POST', protocolVersionHeader: revision, mcpMethodHeader: method, body: call });
    expect(outcome.kind).toBe('reject');
  });
});
