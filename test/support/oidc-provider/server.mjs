// A real OpenID provider (oidc-provider, pinned) on loopback for the OAuth tests: dynamic client
// registration, PKCE, resource indicators (RFC 8707) issuing JWT access tokens for the resource asked for.
// Its login page is a form the test's user agent fills in (POST /interaction/:uid/login, login=<user>);
// consent is granted with the login, as a user who clicks "allow" would.
// argv[2]: JSON { "tiers": { "<user>": "<tier>" } }, put in each access token's "tier" claim.
// Prints one line {"issuer": "..."} on stdout when it listens; stops on SIGTERM.
import { createServer } from 'node:http';
import { URL, URLSearchParams } from 'node:url';
import Provider from 'oidc-provider';

const { tiers = {} } = JSON.parse(process.argv[2] ?? '{}');
let provider;

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://127.0.0.1');
    const login = /^\/interaction\/([^/]+)\/login$/.exec(url.pathname);
    if (req.method === 'POST' && login) {
      const body = new URLSearchParams(await readBody(req));
      const accountId = body.get('login');
      const details = await provider.interactionDetails(req, res);
      if (process.env.OIDC_DEBUG) process.stderr.write(`interaction ${JSON.stringify({ prompt: details.prompt, params: details.params, session: details.session })}\n`);
      const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
      // What the consent prompt says is missing, granted as the user's "allow" would.
      const missing = details.prompt.details ?? {};
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(resource, scopes.join(' '));
      // mcp is registrable (clients name it in their metadata) and is the resource server's scope too.
      if (typeof details.params.resource === 'string' && String(details.params.scope ?? '').split(' ').includes('mcp')) grant.addResourceScope(details.params.resource, 'mcp');
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
      return;
    }
    if (req.method === 'GET' && /^\/interaction\/[^/]+$/.test(url.pathname)) {
      await provider.interactionDetails(req, res);
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<form method="post" action="${url.pathname}/login"><input name="login"></form>`);
      return;
    }
    provider.callback()(req, res);
  } catch (error) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error?.message ?? error));
  }
});

function readBody(req) {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  provider = new Provider(issuer, {
    clients: [],
    cookies: { keys: ['firelimit-test-cookie-key'] },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resourceIndicator) => ({
          scope: 'mcp',
          audience: resourceIndicator,
          accessTokenTTL: 3600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    jwks: { keys: [JSON.parse(process.env.OIDC_TEST_SIGNING_JWKS ?? 'null')].filter(Boolean) },
    enabledJWA: { idTokenSigningAlgValues: ['ES256'] },
    clientDefaults: { grant_types: ['authorization_code'], id_token_signed_response_alg: 'ES256', response_types: ['code'], token_endpoint_auth_method: 'none' },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    extraTokenClaims: (_ctx, token) => (token.kind === 'AccessToken' && tiers[token.accountId] ? { tier: tiers[token.accountId] } : undefined),
    scopes: ['openid', 'offline_access', 'mcp'],
    pkce: { required: () => true },
  });
  provider.on('server_error', (_ctx, error) => process.stderr.write(`oidc server_error: ${error.stack}\n`));
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
