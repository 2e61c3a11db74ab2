import { safeRequestUrl } from '../../src/logging/request-log-middleware';

describe('safeRequestUrl asked again for the same URL', () => {
  it('masks a secret every time it is asked, not only the first', () => {
    const url = `/mcp?token=flk_${'S'.repeat(43)}&page=2`;
    expect([safeRequestUrl(url), safeRequestUrl(url), safeRequestUrl(url)]).toEqual(['/mcp?page=2', '/mcp?page=2', '/mcp?page=2']);
    const inPath = `/mcp/flk_${'S'.repeat(43)}`;
    expect([safeRequestUrl(inPath), safeRequestUrl(inPath)]).toEqual(['/mcp/flk_[redacted]', '/mcp/flk_[redacted]']);
  });

  it('gives a URL that holds nothing to mask back as it came', () => {
    expect([safeRequestUrl('/mcp'), safeRequestUrl('/mcp'), safeRequestUrl('/mcp?page=2')]).toEqual(['/mcp', '/mcp', '/mcp?page=2']);
  });
});
