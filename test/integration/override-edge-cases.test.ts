import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { runLimitsCli } from '../../src/cli/limits-cli';
import { EXIT_OK } from '../../src/cli/run-as-main';
import { loadConfig } from '../../src/config/config';
import { buildService, type Service } from '../../src/service/build-service';
import { createCapturingLogger } from '../support/capturing-logger';
import { TokenService } from '../../src/tokens/token-service';

/** docs/adr/0028: what an override does to what was already spent, to a revoked token, and beside another override. */
const clock = { nowMs: 1_700_000_000_000 }; // 20 s into a minute window
const ACCEPT = 'application/json, text/event-stream';
const whoami = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } };

let dir: string;
let env: NodeJS.ProcessEnv;
let service: Service;
let tokens: TokenService;
const captured = createCapturingLogger();

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-override-edges-'));
  env = { TOKENS_FILE: path.join(dir, 'tokens.json'), RATE_LIMIT_PER_MINUTE: '10' };
  service = await buildService(loadConfig(env), { logger: captured, clock: () => clock.nowMs });
  tokens = new TokenService({ store: service.tokenStore, tiers: ['default'] });
});
afterEach(async () => {
  await service.release();
  await rm(dir, { recursive: true, force: true });
});

async function limits(...args: string[]): Promise<void> {
  const sink = { write: () => true };
  expect(await runLimitsCli(args, env, { stdout: sink, stderr: sink }, { cwd: dir, clock: () => clock.nowMs })).toBe(EXIT_OK);
  await service.overrides.refresh();
}

const call = (secret: string, body: unknown = whoami) =>
  request(service.app).post('/mcp').set('Accept', ACCEPT).set('Authorization', `Bearer ${secret}`).set('Content-Type', 'application/json').send(JSON.stringify(body));

test('an override with the same algorithm and window keeps what was spent: a lower figure refuses at once, and unset gives the tier back its own count', async () => {
  const { secret, token } = await tokens.create({ name: 'noisy' });
  for (let i = 0; i < 5; i++) expect((await call(secret)).status).toBe(200);
  await limits('set', '--token', token.id, '--per-minute', '3');
  const refused = await call(secret);
  expect(refused.status).toBe(429);
  expect(refused.headers['x-ratelimit-limit']).toBe('3');
  await limits('unset', '--token', token.id);
  const back = await call(secret);
  expect(back.status).toBe(200);
  expect(back.headers['x-ratelimit-remaining']).toBe('4');
  expect(captured.entries.filter((e) => e.fields.event === 'ratelimit.override_set' || e.fields.event === 'ratelimit.override_removed').map((e) => e.fields.event)).toEqual([
    'ratelimit.override_set',
    'ratelimit.override_removed',
  ]);
});

test('an override with another algorithm counts on its own from its first call', async () => {
  const { secret, token } = await tokens.create({ name: 'bucket' });
  for (let i = 0; i < 5; i++) expect((await call(secret)).status).toBe(200);
  await limits('set', '--token', token.id, '--per-minute', '6', '--algorithm', 'token-bucket', '--burst', '2');
  expect((await call(secret)).headers['x-ratelimit-remaining']).toBe('1');
  expect((await call(secret)).status).toBe(200);
  expect((await call(secret)).status).toBe(429);
});

test('an override for a token that is later revoked does nothing: the token is refused before any limit, and the override stays listed until unset or expiry', async () => {
  const { secret, token } = await tokens.create({ name: 'revoked later' });
  await limits('set', '--token', token.id, '--per-minute', '1000', '--expires', '1h');
  expect((await call(secret)).headers['x-ratelimit-limit']).toBe('1000');
  await tokens.revoke(token.id);
  clock.nowMs += 30_001; // past TOKEN_CACHE_TTL_MS
  expect((await call(secret)).status).toBe(401);
  let listed = '';
  await runLimitsCli(['list', '--json'], env, { stdout: { write: (s: string) => (listed += s) }, stderr: { write: () => true } }, { cwd: dir, clock: () => clock.nowMs });
  expect(JSON.parse(listed).overrides).toHaveLength(1);
});

test('two overrides on one call: the token one beats the tier one for the same scope, and a tool override applies beside it, all or nothing', async () => {
  const { secret, token } = await tokens.create({ name: 'both' });
  await limits('set', '--tier', 'default', '--per-minute', '50');
  await limits('set', '--token', token.id, '--per-minute', '20');
  await limits('set', '--tool', 'whoami', '--per-minute', '2');
  const first = await call(secret);
  expect(first.headers['ratelimit-policy']).toBe('"override";q=20;w=60, "override-whoami";q=2;w=60');
  expect((await call(secret)).status).toBe(200);
  const refused = await call(secret);
  expect(refused.status).toBe(429);
  // The refused whoami spent nothing of the token's 20: two calls are counted, not three.
  const read = await call(secret, { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri: 'firelimit://limits' } });
  expect(read.headers['x-ratelimit-remaining']).toBe('17');
});

test('a shadow override never refuses; what it would have refused is counted with config labels only, and logged', async () => {
  const { secret, token } = await tokens.create({ name: 'trial' });
  await limits('set', '--token', token.id, '--per-minute', '2', '--shadow');
  for (let i = 0; i < 4; i++) expect((await call(secret)).status).toBe(200);
  const metric = await service.metrics.registry.getSingleMetricAsString('firelimit_shadow_refusals_total');
  expect(metric).toContain('firelimit_shadow_refusals_total{scope="tier",tier="default",tool="whoami",rule=""} 2');
  expect(metric).not.toContain(token.id);
  const charges = await service.metrics.registry.getSingleMetricAsString('firelimit_charges_total');
  expect(charges).toContain('firelimit_charges_total{scope="tier",tier="default",tool="whoami",rule="",shadow="false",result="allowed"} 4');
  expect(charges).not.toContain(token.id);
  expect(captured.entries.filter((e) => e.fields.event === 'ratelimit.shadow_refusal' && e.fields.tokenId === token.id)).toHaveLength(2);
});
