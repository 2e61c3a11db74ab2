import type { Request, RequestHandler, Response } from 'express';
import { baseUrlOf } from './base-url';

/**
 * firelimit runs no OAuth authorization server: tokens are static API tokens
 * (`flk_...`) issued by the operator. MCP clients that get our 401 without a
 * token go looking for OAuth anyway (the MCP authorization spec tells them
 * to), and without these answers they show the user our generic 404 body as
 * a failed "Dynamic Client Registration". So the paths they probe answer with
 * what to do instead. See docs/adr/0025-oauth-discovery-answers.md.
 */

/** Why every answer here refuses: in the body, the request log and tests. */
export const OAUTH_NOT_SUPPORTED = 'oauth_not_supported';

/** Where RFC 7591 clients register when the metadata names no registration endpoint (the MCP SDK's fallback). */
export const REGISTRATION_PATH = '/register';

/**
 * The metadata documents clients probe, each at the root and with a resource
 * or issuer path inserted after it (RFC 9728 §3.1, RFC 8414 §3.1:
 * `/.well-known/oauth-protected-resource/mcp`), plus the OpenID Connect
 * Discovery 1.0 form that appends the well-known segment to a path
 * (`/mcp/.well-known/openid-configuration`).
 */
export const OAUTH_METADATA_PATHS: readonly RegExp[] = [
  /^\/\.well-known\/(?:oauth-protected-resource|oauth-authorization-server|openid-configuration)(?:\/.*)?$/,
  /^\/.+\/\.well-known\/(?:oauth-authorization-server|openid-configuration)$/,
];

export function isOAuthMetadataPath(path: string): boolean {
  return OAUTH_METADATA_PATHS.some((pattern) => pattern.test(path));
}

/**
 * An OAuth error response (RFC 6749 §5.2, RFC 7591 §3.2.2): `error` and
 * `error_description` are what OAuth clients parse and show, `error_uri` the
 * page that explains; `reason` is the same machine-readable field every other
 * firelimit refusal carries.
 */
export interface OAuthNotOfferedBody {
  readonly error: 'not_found' | 'access_denied';
  readonly error_description: string;
  readonly error_uri: string;
  readonly reason: typeof OAUTH_NOT_SUPPORTED;
}

/** What to say on a metadata path (404: no such document) or at /register (403: registration is never granted). */
export function oauthNotOfferedBody(kind: 'metadata' | 'registration', baseUrl: string, protectedResourceMetadataUrl?: string): OAuthNotOfferedBody {
  const developers = `${baseUrl}/developers#tokens`;
  const send =
    `send the header "Authorization: Bearer flk_..." on every request to ${baseUrl}/mcp ` +
    `(in an MCP client, as a static header). Tokens come from the operator of this service; see ${developers}.`;
  // With trusted OAuth issuers (ADR 0054) the way in is theirs: say where the metadata names them.
  const instead =
    protectedResourceMetadataUrl === undefined
      ? `Authenticate with an API token instead: ${send}`
      : `Sign in with an authorization server named in ${protectedResourceMetadataUrl}, or authenticate with an API token: ${send}`;
  return kind === 'metadata'
    ? {
        error: 'not_found',
        error_description: `This server runs no OAuth authorization server, so ${protectedResourceMetadataUrl === undefined ? 'there is no OAuth metadata to discover' : 'there is no authorization server metadata here'}. ${instead}`,
        error_uri: developers,
        reason: OAUTH_NOT_SUPPORTED,
      }
    : {
        error: 'access_denied',
        error_description: `This server runs no OAuth authorization server and registers no OAuth clients. ${instead}`,
        error_uri: developers,
        reason: OAUTH_NOT_SUPPORTED,
      };
}

/**
 * The handlers for the metadata paths (404) and /register (403), any method.
 * They read no body and touch no store or limiter: a constant answer costs
 * less than counting it would (the ADR says why they are not rate-limited).
 */
export function createOAuthNotOffered(options: { readonly fallbackPort: number; readonly protectedResourceMetadataUrl?: (req: Request) => string | undefined }): { metadata: RequestHandler; registration: RequestHandler } {
  const answer = (kind: 'metadata' | 'registration', status: number) =>
    function oauthNotOffered(req: Request, res: Response): void {
      res
        .status(status)
        .set({
          // The body names the Host the client used; no cache may hand it to another.
          'Cache-Control': 'no-store',
          'X-Content-Type-Options': 'nosniff',
        })
        .json(oauthNotOfferedBody(kind, baseUrlOf(req, options.fallbackPort), options.protectedResourceMetadataUrl?.(req)));
    };
  return { metadata: answer('metadata', 404), registration: answer('registration', 403) };
}
