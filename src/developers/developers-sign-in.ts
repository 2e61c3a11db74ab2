import type { AuthConfig } from '../config/auth-issuers';
import { metadataUrlOf } from '../http/protected-resource-metadata';
import { html, type SafeHtml } from './html';

/**
 * How to authenticate: an operator's `flk_` token always; with issuers
 * configured, a token from one of them too, and limits that follow the
 * signed-in user. Every name comes from the configuration the verifier uses.
 */
export function signInSection(auth: AuthConfig, mcpUrl: string): SafeHtml {
  const oauth = auth.issuers.filter((issuer) => issuer.oauth);
  const firebase = auth.issuers.filter((issuer) => issuer.preset === 'firebase');
  if (auth.issuers.length === 0) {
    return html`<section aria-labelledby="sign-in">
<h2 id="sign-in">How to authenticate</h2>
<p>Send <code>Authorization: Bearer flk_...</code> on every request, with a token from the operator of this service
(<a href="#tokens">below</a>). This deployment runs no OAuth sign-in: an MCP client that looks for one is told so.</p>
</section>`;
  }
  const resource = auth.resource ?? mcpUrl;
  return html`<section aria-labelledby="sign-in">
<h2 id="sign-in">How to authenticate</h2>
<p>Two ways, on every request as <code>Authorization: Bearer &lt;token&gt;</code>:</p>
<ul>
<li><strong>An API token</strong> (<code>flk_...</code>) from the operator of this service (<a href="#tokens">below</a>); its limits are the token's.</li>
<li><strong>A token from a trusted issuer</strong>, signed in as yourself:<ul>
${oauth.map((issuer) => html`<li>OAuth access tokens from <code>${issuer.issuer}</code> for the resource <code>${issuer.audience}</code>${issuer.scope === null ? '' : html` with the scope <code>${issuer.scope}</code>`}</li>`)}
${firebase.map((issuer) => html`<li>Firebase Authentication ID tokens of the project <code>${issuer.audience}</code> (<code>getIdToken()</code> in the Firebase SDK)</li>`)}
</ul></li>
</ul>
${oauth.length === 0
    ? ''
    : html`<p>An MCP client that speaks OAuth finds the issuer by itself: a request without a token is answered 401 with
<code>WWW-Authenticate: Bearer resource_metadata="…"</code>, pointing at
<code>${metadataUrlOf(resource)}</code> (RFC 9728),
which names the authorization server; the client registers, signs you in and sends the access token.</p>`}
<p><strong>Limits follow the signed-in user</strong>, not the address you call from: every token of one user spends that
user's counters (whoami shows the id, <code>sub_...</code>, derived from the issuer and your user id, never from the token),
and your tier comes from a claim the issuer sets. A token that is expired, for another audience, or signed by an unknown
key is refused with 401, and counts as a failed sign-in from your address, as a wrong API token does.</p>
</section>`;
}
