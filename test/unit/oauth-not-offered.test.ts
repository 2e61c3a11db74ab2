import { isOAuthMetadataPath, oauthNotOfferedBody } from '../../src/http/oauth-not-offered';

describe('isOAuthMetadataPath', () => {
  it.each([
    ['/.well-known/oauth-protected-resource', true],
    ['/.well-known/oauth-protected-resource/mcp', true],
    ['/.well-known/oauth-protected-resource/', true],
    ['/.well-known/oauth-authorization-server', true],
    ['/.well-known/oauth-authorization-server/mcp', true],
    ['/.well-known/openid-configuration', true],
    ['/.well-known/openid-configuration/mcp', true],
    ['/mcp/.well-known/openid-configuration', true],
    ['/mcp/.well-known/oauth-authorization-server', true],
    ['/.well-known/security.txt', false],
    ['/.well-known/oauth-protected-resourcex', false],
    ['/.well-known', false],
    ['/mcp', false],
    ['/mcp/.well-known/oauth-protected-resource', false],
    ['/developers', false],
    ['/register', false],
  ])('%s → %s', (path, expected) => {
    expect(isOAuthMetadataPath(path)).toBe(expected);
  });
});

describe('oauthNotOfferedBody', () => {
  it.each(['metadata', 'registration'] as const)('for %s names the bearer header, the /mcp URL and the token page of the given origin', (kind) => {
    const body = oauthNotOfferedBody(kind, 'https://limits.example.com');
    expect(body.error).toBe(kind === 'metadata' ? 'not_found' : 'access_denied');
    expect(body.reason).toBe('oauth_not_supported');
    expect(body.error_uri).toBe('https://limits.example.com/developers#tokens');
    expect(body.error_description).toContain('"Authorization: Bearer flk_..."');
    expect(body.error_description).toContain('https://limits.example.com/mcp');
    expect(body.error_description).toContain('https://limits.example.com/developers#tokens');
  });
});
