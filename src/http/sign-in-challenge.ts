import type { Request } from 'express';
import type { Config } from '../config/config';
import { baseUrlOf } from './base-url';
import { metadataUrlOf, resourceOf, servesProtectedResourceMetadata } from './protected-resource-metadata';

/** The /mcp path, as create-app mounts it (http/ cannot import service/). */
const MCP_PATH = '/mcp';

/**
 * What a 401 tells a caller when issuers are configured: where the RFC 9728
 * metadata is (OAuth issuers only; the Firebase preset runs no authorization
 * server a client could discover), and the two ways to authenticate.
 * Undefined without issuers: the 401 stays as ADR 0025 left it.
 */
export function signInOf(config: Config): { resourceMetadataUrl: (req: Request) => string | undefined; missingTokenMessage: string } | undefined {
  const { auth } = config;
  if (auth.issuers.length === 0) return undefined;
  const names = auth.issuers.map((issuer) => (issuer.preset === 'firebase' ? `Firebase Authentication ID tokens of project ${issuer.audience}` : issuer.issuer)).join(', ');
  const serves = servesProtectedResourceMetadata(auth);
  return {
    resourceMetadataUrl: serves ? (req) => metadataUrlOf(resourceOf(auth, baseUrlOf(req, config.port), MCP_PATH)) : () => undefined,
    missingTokenMessage:
      `Authentication required: send Authorization: Bearer with a token signed by a trusted issuer (${names})` +
      `${serves ? ', obtained through OAuth (see the resource_metadata in WWW-Authenticate)' : ''}, or a flk_ token from the operator of this service (see /developers).`,
  };
}
