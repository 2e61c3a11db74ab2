import type { Request, RequestHandler, Response } from 'express';
import type { AuthConfig } from '../config/auth-issuers';
import { baseUrlOf } from './base-url';

/** RFC 9728 §3: the document's well-known name; a resource with a path puts it after this. */
export const PROTECTED_RESOURCE_WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** The protected resource metadata of RFC 9728 §2, as firelimit serves it. */
export interface ProtectedResourceMetadata {
  readonly resource: string;
  readonly authorization_servers: readonly string[];
  readonly scopes_supported: readonly string[];
  readonly bearer_methods_supported: readonly ['header'];
  readonly resource_name: string;
  readonly resource_documentation: string;
}

/** Whether to serve metadata at all: only issuers that run an OAuth authorization server (not the Firebase preset) can be named in it. */
export function servesProtectedResourceMetadata(auth: AuthConfig): boolean {
  return auth.issuers.some((issuer) => issuer.oauth);
}

/**
 * The resource identifier: the configured one, else `<origin>/mcp` as the
 * client reached us (RFC 9728 §3.3: clients check that it names the URL they
 * called, so behind a proxy that rewrites the host, set `resource`).
 */
export function resourceOf(auth: AuthConfig, baseUrl: string, mcpPath: string): string {
  return auth.resource ?? `${baseUrl}${mcpPath}`;
}

/** Where the metadata of `resource` lives (RFC 9728 §3.1: the well-known segment between the origin and the path). */
export function metadataUrlOf(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === '/' ? '' : url.pathname;
  return `${url.origin}${PROTECTED_RESOURCE_WELL_KNOWN}${path}`;
}

/** Pure: the document for this deployment, from the configuration and the origin the client used. */
export function protectedResourceMetadata(auth: AuthConfig, baseUrl: string, mcpPath: string): ProtectedResourceMetadata {
  const oauth = auth.issuers.filter((issuer) => issuer.oauth);
  const scopes = [...new Set(oauth.flatMap((issuer) => (issuer.scope === null ? [] : [issuer.scope])))];
  return {
    resource: resourceOf(auth, baseUrl, mcpPath),
    authorization_servers: oauth.map((issuer) => issuer.issuer),
    scopes_supported: scopes,
    bearer_methods_supported: ['header'],
    resource_name: 'firelimit MCP',
    resource_documentation: `${baseUrl}/developers#sign-in`,
  };
}

/**
 * GET (and HEAD) of the metadata, at the root and with the resource's path
 * after the well-known segment. Like the answers of ADR 0025: no store, no
 * limiter, no body read; unlike them, readable cross-origin (RFC 9728 allows
 * browser-based clients to fetch it) and cacheable for a short while only
 * when the resource is configured (else it names the Host the client used).
 */
export function createProtectedResourceMetadataHandler(options: { readonly auth: AuthConfig; readonly fallbackPort: number; readonly mcpPath: string }): RequestHandler {
  return function protectedResource(req: Request, res: Response): void {
    res
      .status(200)
      .set({
        'Cache-Control': options.auth.resource === undefined ? 'no-store' : 'public, max-age=300',
        'Access-Control-Allow-Origin': '*',
        'X-Content-Type-Options': 'nosniff',
      })
      .json(protectedResourceMetadata(options.auth, baseUrlOf(req, options.fallbackPort), options.mcpPath));
  };
}
