import { classifyInboundRequest } from '@modelcontextprotocol/server';
import fc from 'fast-check';
import { stripOws } from '../../src/http/header-ows';

describe('stripOws', () => {
  it.each([
    ['2026-07-28', '2026-07-28'],
    [' 2026-07-28', '2026-07-28'],
    ['2026-07-28\t', '2026-07-28'],
    ['\t \t2026-07-28 \t', '2026-07-28'],
    ['a b', 'a b'],
    ['   ', ''],
    ['', ''],
    ['\n2026\r', '\n2026\r'],
  ])('takes the spaces and tabs off both ends of %j, nothing else', (value, stripped) => {
    expect(stripOws(value)).toBe(stripped);
  });

  it('answers the value itself when there is nothing to strip', () => {
    const value = 'tools/call';
    expect(stripOws(value)).toBe(value);
  });

  it("agrees with the SDK classifier's own stripping: a header equal to the body's revision after stripping is no mismatch", () => {
    const ows = fc.constantFrom('', ' ', '\t', ' \t');
    fc.assert(
      fc.property(ows, ows, fc.constantFrom('2026-07-28', '2027-01-01'), (before, after, revision) => {
        const header = `${before}${revision}${after}`;
        const _meta = { 'io.modelcontextprotocol/protocolVersion': revision, 'io.modelcontextprotocol/clientInfo': { name: 'a', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
        const outcome = classifyInboundRequest({ httpMethod: 'POST', protocolVersionHeader: header, mcpMethodHeader: 'tools/call', body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', _meta } } });
        expect(outcome.kind === 'reject' && outcome.cell === 'header-body-version-mismatch').toBe(stripOws(header) !== revision);
      }),
    );
  });
});
