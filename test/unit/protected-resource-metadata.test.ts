import { firebaseIssuer, type AuthConfig, type TrustedIssuer } from '../../src/config/auth-issuers';
import { metadataUrlOf, protectedResourceMetadata, servesProtectedResourceMetadata } from '../../src/http/protected-resource-metadata';

const oauthIssuer = (issuer: string, scope: string | null): TrustedIssuer => ({ ...firebaseIssuer('my-project'), issuer, audience: 'https://mcp.example/mcp', scope, oauth: true, preset: undefined });

describe('protected resource metadata (RFC 9728)', () => {
  it('names the OAuth issuers and their scopes, never the Firebase preset, which runs no authorization server', () => {
    const auth: AuthConfig = { resource: undefined, issuers: [oauthIssuer('https://a.example', 'mcp'), firebaseIssuer('my-project'), oauthIssuer('https://b.example', 'tools'), oauthIssuer('https://c.example', 'mcp')] };
    expect(protectedResourceMetadata(auth, 'https://svc.example', '/mcp')).toEqual({
      resource: 'https://svc.example/mcp',
      authorization_servers: ['https://a.example', 'https://b.example', 'https://c.example'],
      scopes_supported: ['mcp', 'tools'],
      bearer_methods_supported: ['header'],
      resource_name: 'firelimit MCP',
      resource_documentation: 'https://svc.example/developers#sign-in',
    });
  });

  it('serves a configured resource as is, and only when an OAuth issuer is configured', () => {
    const auth: AuthConfig = { resource: 'https://public.example/mcp', issuers: [oauthIssuer('https://a.example', 'mcp')] };
    expect(protectedResourceMetadata(auth, 'http://10.0.0.1:8080', '/mcp').resource).toBe('https://public.example/mcp');
    expect(servesProtectedResourceMetadata(auth)).toBe(true);
    expect(servesProtectedResourceMetadata({ resource: undefined, issuers: [firebaseIssuer('my-project')] })).toBe(false);
    expect(servesProtectedResourceMetadata({ resource: undefined, issuers: [] })).toBe(false);
  });

  it.each([
    ['https://svc.example/mcp', 'https://svc.example/.well-known/oauth-protected-resource/mcp'],
    ['https://svc.example/', 'https://svc.example/.well-known/oauth-protected-resource'],
    ['http://127.0.0.1:8080/a/mcp', 'http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/mcp'],
  ])('the metadata of %s is at %s', (resource, url) => {
    expect(metadataUrlOf(resource)).toBe(url);
  });
});
