import { ConfigError } from '../../src/config/config-error';
import { loadConfig } from '../../src/config/config';
import { FIREBASE_JWKS_URL } from '../../src/config/auth-issuers';

const load = (file: unknown, extra: NodeJS.ProcessEnv = {}) =>
  loadConfig({ AUTH_ISSUERS_FILE: 'issuers.json', RATE_LIMIT_TIERS: 'pro=600', ...extra }, { cwd: '/x', readFile: () => (typeof file === 'string' ? file : JSON.stringify(file)) });

function problemOf(file: unknown, extra: NodeJS.ProcessEnv = {}): string {
  try {
    load(file, extra);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.knob}: ${p.problem}`).join('\n');
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('AUTH_ISSUERS_FILE and FIREBASE_AUTH_PROJECT_ID', () => {
  it('without either, no issuers: a static-token deployment', () => {
    expect(loadConfig({}).auth).toEqual({ issuers: [], resource: undefined });
  });

  it('FIREBASE_AUTH_PROJECT_ID is the preset: securetoken issuer, the project as audience, Google keys, RS256, no scope needed', () => {
    expect(loadConfig({ FIREBASE_AUTH_PROJECT_ID: 'my-project' }).auth.issuers).toEqual([
      expect.objectContaining({ issuer: 'https://securetoken.google.com/my-project', audience: 'my-project', jwksUrl: FIREBASE_JWKS_URL, algorithms: ['RS256'], scope: null, oauth: false, preset: 'firebase' }),
    ]);
  });

  it('an OAuth issuer takes the resource as its audience and defaults the rest', () => {
    const { auth } = load({ resource: 'https://mcp.example.com/mcp', issuers: [{ issuer: 'https://idp.example.com', tierClaim: 'plan', defaultTier: 'pro' }] });
    expect(auth.resource).toBe('https://mcp.example.com/mcp');
    expect(auth.issuers[0]).toEqual({
      issuer: 'https://idp.example.com', audience: 'https://mcp.example.com/mcp', jwksUrl: undefined, algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'], tierClaim: 'plan', defaultTier: 'pro',
      scope: 'mcp', clockToleranceMs: 30_000, jwksMaxAgeMs: 600_000, jwksCooldownMs: 30_000, oauth: true, preset: undefined,
    });
  });

  it.each<[string, unknown, RegExp]>([
    ['not JSON', '{', /^AUTH_ISSUERS_FILE: the file is not JSON$/],
    ['an HMAC algorithm', { resource: 'https://a.example/mcp', issuers: [{ issuer: 'https://idp.example.com', algorithms: ['HS256'] }] }, /issuers\.0\.algorithms\.0: expected asymmetric algorithms only/],
    ['alg none', { resource: 'https://a.example/mcp', issuers: [{ issuer: 'https://idp.example.com', algorithms: ['none'] }] }, /expected asymmetric algorithms only/],
    ['an http issuer off loopback', { resource: 'https://a.example/mcp', issuers: [{ issuer: 'http://idp.example.com' }] }, /issuers\.0\.issuer: expected an issuer URL: an https:\/\/ URL/],
    ['no audience and no resource', { issuers: [{ issuer: 'https://idp.example.com' }] }, /issuers\.0\.audience: no audience, and no top-level "resource"/],
    ['an unknown field', { resource: 'https://a.example/mcp', issuers: [{ issuer: 'https://idp.example.com', audiance: 'x' }] }, /issuers\.0/],
    ['no issuers', { issuers: [] }, /issuers/],
    ['a default tier that is not configured', { resource: 'https://a.example/mcp', issuers: [{ issuer: 'https://idp.example.com', defaultTier: 'gold' }] }, /defaultTier "gold", which is not a tier \(tiers: default, pro\)/],
    ['the same issuer twice', { resource: 'https://a.example/mcp', issuers: [{ issuer: 'https://idp.example.com' }, { issuer: 'https://idp.example.com' }] }, /is configured twice/],
    ['a clock tolerance over five minutes', { resource: 'https://a.example/mcp', issuers: [{ issuer: 'https://idp.example.com', clockToleranceMs: 600_000 }] }, /clockToleranceMs: expected at most 300000 ms/],
    ['a cooldown under a second (a flood could hammer the issuer)', { issuers: [{ preset: 'firebase', projectId: 'my-project', jwksCooldownMs: 10 }] }, /jwksCooldownMs/],
  ])('refuses %s, naming the knob and the field', (_name, file, expected) => {
    expect(problemOf(file)).toMatch(expected);
  });

  it('refuses a malformed FIREBASE_AUTH_PROJECT_ID and the preset configured twice', () => {
    expect(() => loadConfig({ FIREBASE_AUTH_PROJECT_ID: 'My Project' })).toThrow(/FIREBASE_AUTH_PROJECT_ID: expected a Firebase project id/);
    expect(problemOf({ issuers: [{ preset: 'firebase', projectId: 'my-project' }] }, { FIREBASE_AUTH_PROJECT_ID: 'my-project' })).toMatch(/FIREBASE_AUTH_PROJECT_ID: the issuer https:\/\/securetoken.google.com\/my-project is configured twice/);
  });

  it('an unreadable file stops the boot', () => {
    expect(() => loadConfig({ AUTH_ISSUERS_FILE: '/nonexistent/issuers.json' })).toThrow(/AUTH_ISSUERS_FILE: the file cannot be read/);
  });
});
