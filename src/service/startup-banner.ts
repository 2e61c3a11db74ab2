import { algorithmOf } from '../library';
import { hotKeysDescribed, type Config } from '../config/config';
import { TokenService } from '../tokens/token-service';
import type { TokenStore } from '../tokens/token-record';

export interface DevelopmentToken {
  /** Set only when a token was created just now: the one time its secret is shown. */
  readonly secret?: string;
  readonly id?: string;
  /** Live tokens that already existed. */
  readonly existing: number;
}

/**
 * The embedded default's first start: with a file token store holding no
 * live token, create one so a newcomer can call a tool straight away. Never
 * in production (NODE_ENV=production, as the Dockerfile sets), never on
 * Firestore.
 */
export async function ensureDevelopmentToken(config: Config, store: TokenStore, env: NodeJS.ProcessEnv): Promise<DevelopmentToken> {
  if (config.tokens.store !== 'file' || env.NODE_ENV === 'production') return { existing: 0 };
  const live = (await store.list()).filter((t) => t.revokedAtMs === null);
  if (live.length > 0) return { existing: live.length };
  const service = new TokenService({ store, tiers: config.rateLimit.tiers.map((t) => t.name) });
  const created = await service.create({ name: 'development' });
  return { secret: created.secret, id: created.token.id, existing: 0 };
}

/** The first lines `npm start` prints: where things are and how to get a token. */
export function startupBanner(config: Config, baseUrl: string, devToken: DevelopmentToken): string[] {
  const tier = config.rateLimit.defaultTier;
  const shared =
    config.rateLimit.backend === 'memory'
      ? 'per instance (memory backend)'
      : config.rateLimit.backend === 'sqlite'
        ? `shared by this host's processes on ${config.sqlite.path} (sqlite)`
        : `shared across instances (${config.rateLimit.backend})`;
  const lines = [
    `firelimit listening on ${baseUrl}`,
    `  MCP endpoint:    POST ${baseUrl}/mcp`,
    `  Developer page:  ${baseUrl}/developers`,
    `  Limit:           ${tier.policies.map((p) => `${p.limit} requests per ${p.windowMs / 1000} s ${algorithmOf(p) === 'fixed-window' ? '' : ` (${algorithmOf(p)})`}`).join(' + ')} per token, ${shared}`,
    `  Hot keys:        ${hotKeysDescribed(config)}`,
  ];
  if (devToken.secret !== undefined) {
    lines.push(
      '',
      `  Development token ${devToken.id} (created now; shown only this once, only its hash is stored in ${config.tokens.file}):`,
      `    ${devToken.secret}`,
      '',
      '  Try it:',
      `    curl -s ${baseUrl}/mcp -H 'Authorization: Bearer ${devToken.secret}' \\`,
      `      -H 'Content-Type: application/json' -H 'Accept: application/json' \\`,
      `      -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rate_limit_status","arguments":{}}}'`,
    );
  } else if (config.tokens.store === 'file') {
    lines.push(`  Tokens:          ${devToken.existing} live in ${config.tokens.file}; secrets are shown only when created`);
  }
  lines.push(`  New token:       npm run token -- create --name NAME [--tier TIER]`, '');
  return lines;
}
