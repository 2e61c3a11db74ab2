import type http from 'node:http';
import { normalize, resolveServerValues, splitPath, type Json } from './data-tree';
import { ADMIN, ANONYMOUS, type Identity, type Namespace } from './namespace';

interface NamespaceSource {
  namespace(name: string): Namespace;
}

const RULES_PATH = '/.settings/rules.json';
/** This server only (the official emulator has no such path): the namespace's write counts, for benches. */
export const STATS_PATH = '/.firelimit/stats.json';

/**
 * The REST surface the official emulator also offers, so helpers like
 * RtdbTestServer.read work against either: `Bearer owner` (or
 * `?access_token=owner`) is the admin, anyone else is unauthenticated and goes
 * through the rules — firebase-server's REST mode skipped them.
 */
export function handleRest(source: NamespaceSource, req: http.IncomingMessage, res: http.ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const ns = source.namespace(url.searchParams.get('ns') ?? 'default');
      const who = isOwner(req, url) ? ADMIN : ANONYMOUS;
      const body = Buffer.concat(chunks).toString('utf8');
      const [status, payload] = route(ns, who, req.method ?? 'GET', url.pathname, body);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    } catch (error) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(error) }));
    }
  });
}

function isOwner(req: http.IncomingMessage, url: URL): boolean {
  return req.headers.authorization === 'Bearer owner' || url.searchParams.get('access_token') === 'owner';
}

function route(ns: Namespace, who: Identity, method: string, pathname: string, body: string): [number, unknown] {
  const denied: [number, unknown] = [401, { error: 'Permission denied' }];
  if (pathname === RULES_PATH) {
    if (!who.admin) return denied;
    if (method !== 'PUT') return [405, { error: 'only PUT is supported on rules' }];
    ns.setRules(JSON.parse(body) as object);
    return [200, { status: 'ok' }];
  }
  if (pathname === STATS_PATH) {
    if (!who.admin) return denied;
    return [200, { writes: ns.version, staleWrites: ns.staleWrites }];
  }
  if (!pathname.endsWith('.json')) return [404, { error: 'paths end in .json' }];
  const path = pathname.slice(0, -'.json'.length);
  const parts = splitPath(decodeURIComponent(path));
  const now = Date.now();
  switch (method) {
    case 'GET':
      if (!ns.check(who, 'read', path).allowed) return denied;
      return [200, ns.tree.get(parts)];
    case 'PUT':
    case 'DELETE': {
      const raw = method === 'DELETE' ? null : (JSON.parse(body) as unknown);
      const value = normalize(resolveServerValues(raw, ns.tree.get(parts), now));
      if (!ns.check(who, 'write', path, value, now).allowed) return denied;
      ns.apply(parts, new Map([['', value]]), false);
      return [200, value];
    }
    case 'PATCH': {
      const changes = new Map<string, Json>();
      for (const [rel, child] of Object.entries(JSON.parse(body) as Record<string, unknown>)) {
        changes.set(rel, normalize(resolveServerValues(child, ns.tree.get([...parts, ...splitPath(rel)]), now)));
      }
      if (!ns.check(who, 'update', path, Object.fromEntries(changes), now).allowed) return denied;
      ns.apply(parts, changes, true);
      return [200, Object.fromEntries(changes)];
    }
    default:
      return [405, { error: `${method} is not supported` }];
  }
}
