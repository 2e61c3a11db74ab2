import { readFileSync } from 'node:fs';
import path from 'node:path';

// targaryen ships no types; this is the slice of its API the checks use.
interface RuleResult {
  readonly allowed: boolean;
}
interface RulesDatabase {
  as(auth: object | null): RulesDatabase;
  read(path: string): RuleResult;
  write(path: string, value: unknown): RuleResult;
  update(path: string, patch: Record<string, unknown>): RuleResult;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const targaryen = require('targaryen') as { database(rules: object, data: unknown): RulesDatabase };

const rules = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'database.rules.json'), 'utf8')) as object;

/** A fresh evaluator per check: targaryen's as(null) keeps the previous auth. */
function asClient(auth: object | null): RulesDatabase {
  return targaryen.database(rules, { rateLimits: { tok_abc: { '29933': 7 } } }).as(auth);
}

const clients = [
  { who: 'an unauthenticated client', auth: null },
  { who: 'a signed-in user', auth: { uid: 'u1' } },
  { who: 'a user whose uid equals the token id', auth: { uid: 'tok_abc' } },
  { who: 'a user with an admin-looking claim', auth: { uid: 'u2', admin: true, token: { admin: true } } },
];

const paths = [
  '/',
  '/rateLimits',
  '/rateLimits/tok_abc',
  '/rateLimits/tok_abc/29933',
  '/rateLimits/tok_abc/e',
  '/authFailures',
  '/authFailures/addr:1',
  '/authFailures/addr:1/e',
  '/upstreamQuota',
  '/upstreamQuota/upstream',
  '/sweeperLeases',
  '/sweeperLeases/rateLimits',
  '/fleetHeartbeats',
  '/fleetHeartbeats/rateLimits',
  '/fleetHeartbeats/rateLimits/host-1-abc',
  '/anything/else',
];

describe('database.rules.json keeps every client out (only the Admin SDK, which bypasses rules, writes)', () => {
  describe.each(clients)('$who', ({ auth }) => {
    it.each(paths)('cannot read %s', (p) => {
      expect(asClient(auth).read(p).allowed).toBe(false);
    });

    it.each(paths)('cannot write %s', (p) => {
      expect(asClient(auth).write(p, { '29934': 0 }).allowed).toBe(false);
    });

    it('cannot reset a counter with a multi-path update', () => {
      expect(asClient(auth).update('/', { 'rateLimits/tok_abc/29933': 0 }).allowed).toBe(false);
    });

    it('cannot delete a counter', () => {
      expect(asClient(auth).write('/rateLimits/tok_abc', null).allowed).toBe(false);
    });

    it("cannot push a counter's expiry into the future", () => {
      expect(asClient(auth).write('/rateLimits/tok_abc/e', 9_999_999_999_999).allowed).toBe(false);
    });
  });
});

describe('database.rules.json indexes e on every root the limiter writes', () => {
  // Without it the sweeper's orderByChild('e') query is answered with the whole root (docs/adr/0008).
  const inner = (rules as { rules: Record<string, { '.indexOn'?: unknown }> }).rules;
  it.each(['rateLimits', 'authFailures'])('%s has .indexOn ["e"]', (root) => {
    expect(inner[root]?.['.indexOn']).toEqual(['e']);
  });
});
