import type { RequestHandler } from 'express';
import type { Config } from '../config/config';
import { baseUrlOf } from '../http/base-url';
import { clientRefusalSection } from './developers-clients';
import { upstreamSection, type UpstreamToolFact } from './developers-upstream';
import { developersFacts } from './developers-facts';
import {
  examplesSection,
  headersSection,
  refusalSection,
  sharingSection,
  summarySection,
  tokenSection,
} from './developers-sections';
import { costsSection } from './developers-costs';
import { signInSection } from './developers-sign-in';
import { DEVELOPERS_CSS, DEVELOPERS_CSS_HASH } from './developers-styles';
import { html, raw } from './html';

export interface DevelopersPageOptions {
  /** Origin the examples call, e.g. "https://svc-abc-ew.a.run.app"; escaped, never trusted. */
  readonly baseUrl: string;
  /** Instant for the example header values; default a fixed example instant, so rendering is pure. */
  readonly nowMs?: number;
  /** Gateway mode: the upstream's tools as last listed (undefined before the first list). */
  readonly upstreamTools?: readonly UpstreamToolFact[];
}

export interface DevelopersHandlerOptions {
  /** Gateway mode: the upstream's tools from the last good list, read on each render. */
  readonly upstreamTools?: () => readonly UpstreamToolFact[] | undefined;
}

/**
 * The /developers page: every figure comes from `config`, the object the
 * limiter enforces, so the page cannot drift from what is enforced. No
 * JavaScript: it must read the same in any browser, script or not.
 */
export function renderDevelopersPage(config: Config, options: DevelopersPageOptions): string {
  const f = developersFacts(config, options.baseUrl, options.nowMs);
  const d = f.defaultTier;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Developers: limits, headers and examples</title>
<meta name="description" content="${`Each API token may make ${d.limit} requests per ${d.windowSeconds} seconds. Headers, 429 handling and examples.`}">
<style>${raw(DEVELOPERS_CSS)}</style>
</head>
<body>
<main>
<header>
<h1>Using this MCP service</h1>
<p class="lede">Limits, headers and examples for <code>${f.mcpUrl}</code>. The figures on this page are read from
the configuration the service is enforcing right now.</p>
<nav aria-label="Sections"><ul>
<li><a href="#limits">Limits</a></li><li><a href="#costs">Costs</a></li><li><a href="#sharing">Instances</a></li><li><a href="#headers">Headers</a></li>
<li><a href="#429">429 and back-off</a></li><li><a href="#clients">Refusals in your client</a></li><li><a href="#sign-in">Authenticating</a></li><li><a href="#tokens">Tokens</a></li>
<li><a href="#examples">Examples</a></li>${config.upstream === undefined ? '' : html`<li><a href="#upstream">Upstream quota</a></li>`}
</ul></nav>
</header>
${summarySection(f)}
${costsSection(f.calls)}
${sharingSection(f)}
${headersSection(f)}
${refusalSection(f)}
${upstreamSection(config, options.upstreamTools)}
${clientRefusalSection(f)}
${signInSection(config.auth, f.mcpUrl)}
${tokenSection(f)}
${examplesSection(f)}
<footer><p>Liveness: <code>GET ${f.baseUrl}/healthz</code>. Endpoint: <code>POST ${f.mcpUrl}</code>.</p></footer>
</main>
</body>
</html>
`.value;
}

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src '${DEVELOPERS_CSS_HASH}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** GET /developers. */
export function createDevelopersHandler(config: Config, handlerOptions: DevelopersHandlerOptions = {}): RequestHandler {
  return function developersPage(req, res): void {
    const upstreamTools = handlerOptions.upstreamTools?.();
    const page = renderDevelopersPage(config, { baseUrl: baseUrlOf(req, config.port), nowMs: Date.now(), ...(upstreamTools === undefined ? {} : { upstreamTools }) });
    res
      .status(200)
      .set({
        'Content-Type': 'text/html; charset=utf-8',
        // The page has no script at all; this keeps it that way even if a value slipped through escaping.
        'Content-Security-Policy': CONTENT_SECURITY_POLICY,
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
        // The examples echo the Host the visitor used.
        Vary: 'Host, X-Forwarded-Proto',
        'Cache-Control': 'no-cache',
      })
      .send(page);
  };
}
