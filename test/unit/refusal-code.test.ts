import { eraOfHeaders, ModernRefusalCode, refusalCode } from '../../src/library/express/refusal-code';
import { JsonRpcCode } from '../../src/library/express/json-rpc-error';

describe('refusalCode', () => {
  test.each([
    ['legacy', 'rate_limited', -32029],
    ['legacy', 'backend_unavailable', -32053],
    ['modern', 'rate_limited', 429],
    ['modern', 'backend_unavailable', 503],
  ] as const)('%s era, %s: %d', (era, kind, code) => {
    expect(refusalCode(era, kind)).toBe(code);
  });

  test('2026-07-28 codes stay outside JSON-RPC -32768..-32000 (so outside the spec-reserved -32020..-32099) and apart from the 2025 ones', () => {
    for (const code of Object.values(ModernRefusalCode)) {
      expect(code >= -32768 && code <= -32000).toBe(false);
      expect(Object.values(JsonRpcCode)).not.toContain(code);
    }
  });
});

describe('eraOfHeaders', () => {
  test.each<[string, Record<string, string | string[]>, 'modern' | 'legacy']>([
    ['no MCP-Protocol-Version', {}, 'legacy'],
    ['a 2025 revision', { 'mcp-protocol-version': '2025-11-25' }, 'legacy'],
    ['2026-07-28', { 'mcp-protocol-version': '2026-07-28' }, 'modern'],
    ['2026-07-28 with blanks', { 'mcp-protocol-version': ' 2026-07-28 ' }, 'modern'],
    ['a later revision', { 'mcp-protocol-version': '2027-03-01' }, 'modern'],
    ['a repeated header, first one counts', { 'mcp-protocol-version': ['2026-07-28', '2025-06-18'] }, 'modern'],
    ['not a date (sorts after 2026 as text)', { 'mcp-protocol-version': 'zzzz' }, 'legacy'],
    ['empty', { 'mcp-protocol-version': '' }, 'legacy'],
  ])('%s: %s', (_label, headers, era) => {
    expect(eraOfHeaders(headers)).toBe(era);
  });
});
