import { classifyInboundRequest } from '@modelcontextprotocol/server';
import fc from 'fast-check';
import { plainLegacyRequest } from '../../src/http/mcp-protocol-check';

const VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2026-07-28', ' 2026-07-28\t', '2027-01-01', '', 'garbage'];
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
