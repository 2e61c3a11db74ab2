import { Client, StreamableHTTPClientTransport, UnauthorizedError, type OAuthClientMetadata, type OAuthClientProvider, type OAuthDiscoveryState, type StoredOAuthClientInformation, type StoredOAuthTokens } from '@modelcontextprotocol/client';

export const REDIRECT_URI = 'http://127.0.0.1:1/oauth/callback';

/**
 * The MCP SDK's OAuth client provider, kept in memory as a desktop MCP host
 * keeps it on disk: the registered client, the PKCE verifier, the tokens,
 * and the discovery state (SEP-2352: the SDK then checks on the callback leg
 * that the code goes back to the authorization server the user approved).
 * `redirectToAuthorization` only records the URL; the test's user agent
 * (signInAs) then plays the browser.
 */
export class InMemoryOAuthClient implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  private client: StoredOAuthClientInformation | undefined;
  private saved: StoredOAuthTokens | undefined;
  private verifier = '';
  private discovery: OAuthDiscoveryState | undefined;
  registrations = 0;

  get redirectUrl(): string {
    return REDIRECT_URI;
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'firelimit OAuth test', redirect_uris: [REDIRECT_URI], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', application_type: 'native' } as OAuthClientMetadata;
  }

  clientInformation(): StoredOAuthClientInformation | undefined {
    return this.client;
  }

  saveClientInformation(info: StoredOAuthClientInformation): void {
    this.registrations++;
    this.client = info;
  }

  tokens(): StoredOAuthTokens | undefined {
    return this.saved;
  }

  saveTokens(tokens: StoredOAuthTokens): void {
    this.saved = tokens;
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }
}

/**
 * A browser signing `user` in: follows the provider's redirects with its
 * cookies, fills in the login form, and returns the query the provider
 * redirected back to the client with (code, state, iss).
 */
export async function signInAs(authorizationUrl: URL, user: string): Promise<URLSearchParams> {
  const jar = new Map<string, string>();
  let url = authorizationUrl.href;
  let form: string | undefined;
  const hops: string[] = [];
  for (let hop = 0; hop < 12; hop++) {
    const res = await fetch(url, {
      method: form === undefined ? 'GET' : 'POST',
      redirect: 'manual',
      body: form,
      headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '), ...(form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
    });
    for (const cookie of res.headers.getSetCookie()) {
      const pair = cookie.split(';')[0] as string;
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const location = res.headers.get('location');
    hops.push(`${form === undefined ? 'GET' : 'POST'} ${url} -> ${res.status} ${location ?? ''}`);
    if (res.status === 200 && /\/interaction\/[^/]+$/.test(new URL(url).pathname)) {
      await res.arrayBuffer();
      url = `${url}/login`;
      form = new URLSearchParams({ login: user }).toString();
      continue;
    }
    const text = await res.text();
    if (location === null) throw new Error(`sign-in stopped at HTTP ${res.status} ${url}: ${text.slice(0, 300)}`);
    const next = new URL(location, url);
    if (next.href.startsWith(REDIRECT_URI)) return next.searchParams;
    url = next.href;
    form = undefined;
  }
  throw new Error(`sign-in did not come back to the client:\n${hops.join('\n')}`);
}

/**
 * An access token for the resource at `mcpUrl`, as an MCP host gets one with
 * the SDK 2.x client: RFC 9728 discovery, registration, PKCE, `user`'s
 * sign-in at the provider. For handing to a client that takes only a static
 * header (the Inspector CLI).
 */
export async function accessTokenFor(mcpUrl: URL, user: string): Promise<string> {
  const oauth = new InMemoryOAuthClient();
  const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: oauth });
  const refused = await new Client({ name: 'token-fetcher', version: '1.0.0' }).connect(transport).catch((error: unknown) => error);
  if (!(refused instanceof UnauthorizedError)) throw refused instanceof Error ? refused : new Error(`expected a 401 from ${mcpUrl.href} first`);
  await transport.finishAuth(await signInAs(oauth.authorizationUrl as URL, user));
  const token = oauth.tokens()?.access_token;
  if (token === undefined) throw new Error('the OAuth flow ended without an access token');
  return token;
}
