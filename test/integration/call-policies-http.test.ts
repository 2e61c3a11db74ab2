import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig } from '../../src/config/config';
import { ConfigError } from '../../src/config/config-error';
import { buildService, type Service } from '../../src/service/build-service';
import { silentLogger } from '../../src/shared/logger';
import { TokenService } from '../../src/tokens/token-service';
import { createCapturingLogger } from '../support/capturing-logger';

/** Costs, free calls, rules and shadow limits through the whole service over HTTP (memory store, injected clock). */
const NOW_MS = 1_700_000_000_000; // 20 s into a minute window, which ends 40 s later
const ACCEPT = 'application/json, text/event-stream';
const rpc = (id: number, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method, params });
const tool = (id: number, name: string) => rpc(id, 'tools/call', { name, arguments: {} });
const INITIALIZE = rpc(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'loop', version: '1' } });
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };
const TOOLS_LIST = rpc(2, 'tools/list');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-call-policies-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function serviceWith(env: NodeJS.ProcessEnv, file?: unknown, logger = silentLogger): Promise<{ service: Service; secret: string; tokenId: string }> {
  const sub = await mkdtemp(path.join(dir, 's-'));
  const limitsFile = path.join(sub, 'limits.json');
  const config = loadConfig(
    { TOKENS_FILE: path.join(sub, 'tokens.json'), ...(file === undefined ? {} : { LIMITS_FILE: limitsFile }), ...env },
    { readFile: () => JSON.stringify(file) },
  );
  const service = await buildService(config, { logger, clock: () => NOW_MS });
  const created = await new TokenService({ store: service.tokenStore, tiers: config.rateLimit.tiers.map((t) => t.name) }).create({ name: 'caller' });
  return { service, secret: created.secret, tokenId: created.token.id };
}

function post(service: Service, secret: string, body: unknown) {
  return request(service.app).post('/mcp').set('Accept', ACCEPT).set('Authorization', `Bearer ${secret}`).set('Content-Type', 'application/json').send(JSON.stringify(body));
}

async function statusOf(service: Service, secret: string) {
  const res = await post(service, secret, tool(99, 'rate_limit_status'));
  expect(res.status).toBe(200);
  return res.body.result.structuredContent as { remaining: number; limit: number; policies: { name: string; scope?: string; remaining: number; appliesTo?: string; shadow?: boolean }[] };
}

describe('free calls', () => {
  test('a long handshake loop leaves the tier budget untouched while the free limit still holds it', async () => {
    const { service, secret } = await serviceWith({ RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_FREE_PER_MINUTE: '30' });
    try {
      // 9 handshakes of 3 messages: 27 free calls, none of the tier's 5.
      for (let i = 0; i < 9; i++) {
        for (const message of [INITIALIZE, INITIALIZED, TOOLS_LIST]) expect((await post(service, secret, message)).status).toBeLessThan(300);
      }
      const status = await statusOf(service, secret); // the 28th free call
      expect(status).toMatchObject({ limit: 5, remaining: 5 });
      expect(status.policies.find((p) => p.scope === 'free')).toMatchObject({ name: 'free', remaining: 2 });
      expect((await post(service, secret, rpc(3, 'ping'))).status).toBe(200);
      expect((await post(service, secret, rpc(4, 'ping'))).status).toBe(200);
      const refused = await post(service, secret, rpc(5, 'ping'));
      expect(refused.status).toBe(429);
      expect(refused.headers['ratelimit-policy']).toBe('"free";q=30;w=60');
      expect(refused.body.error.data).toMatchObject({ error: 'rate_limited', limit: 30 });
      // The tier's budget is whole: a paid call still passes.
      const paid = await post(service, secret, tool(6, 'whoami'));
      expect(paid.status).toBe(200);
      expect(paid.headers['x-ratelimit-remaining']).toBe('4');
    } finally {
      await service.release();
    }
  });
});

describe('costs per tool', () => {
  test('RATE_LIMIT_TOOL_COSTS prices a tool; a batch costs the sum of its messages; a batch no window can hold is 413 and charges nothing', async () => {
    const { service, secret } = await serviceWith({ RATE_LIMIT_PER_MINUTE: '10', RATE_LIMIT_TOOL_COSTS: 'whoami=3' });
    try {
      expect((await post(service, secret, tool(1, 'whoami'))).headers['x-ratelimit-remaining']).toBe('7');
      const batch = await post(service, secret, [tool(2, 'whoami'), rpc(3, 'resources/read', { uri: 'firelimit://limits' }), rpc(4, 'ping')]);
      expect(batch.status).toBe(200);
      expect(batch.headers['x-ratelimit-remaining']).toBe('3');
      const tooBig = await post(service, secret, [tool(5, 'whoami'), tool(6, 'whoami'), tool(7, 'whoami'), tool(8, 'whoami')]);
      expect(tooBig.status).toBe(413);
      expect(tooBig.body.error.data).toMatchObject({ reason: 'cost_exceeds_limit', cost: 12, limit: 10 });
      expect((await statusOf(service, secret)).remaining).toBe(3);
      const over = await post(service, secret, [tool(9, 'whoami'), tool(10, 'whoami')]);
      expect(over.status).toBe(429);
      expect((await statusOf(service, secret)).remaining).toBe(3);
    } finally {
      await service.release();
    }
  });

  test('a cost for a tool nobody serves stops the boot with the fix', async () => {
    await expect(serviceWith({ RATE_LIMIT_TOOL_COSTS: 'serch=5' })).rejects.toThrow(ConfigError);
    await expect(serviceWith({ RATE_LIMIT_TOOL_COSTS: 'serch=5' })).rejects.toThrow(/RATE_LIMIT_TOOL_COSTS: no tool is named "serch" \(tools served: rate_limit_status, whoami\)\n {4}fix: name one of the tools served/);
  });
});

describe('per-tool limits from rules', () => {
  const file = {
    rules: [{ name: 'whoami-per-minute', match: { tool: 'whoami' }, cost: 2, limits: [{ limit: 3, window: '1m' }] }],
  };

  test('a rule holds a tool to its own figure in calls on top of the tier, all or nothing: a refused call spends neither', async () => {
    const { service, secret } = await serviceWith({ RATE_LIMIT_PER_MINUTE: '100' }, file);
    try {
      for (let i = 1; i <= 3; i++) expect((await post(service, secret, tool(i, 'whoami'))).status).toBe(200);
      const refused = await post(service, secret, tool(4, 'whoami'));
      expect(refused.status).toBe(429);
      expect(refused.headers['ratelimit-policy']).toBe('"default";q=100;w=60, "whoami-per-minute";q=3;w=60');
      expect(refused.headers['retry-after']).toBe('40');
      const status = await statusOf(service, secret);
      // 3 calls at 2 units each; the refused one was refunded from the tier.
      expect(status).toMatchObject({ limit: 100, remaining: 94 });
      expect(status.policies.find((p) => p.scope === 'rule')).toMatchObject({ name: 'whoami-per-minute', remaining: 0, appliesTo: 'whoami-per-minute / whoami' });
      // Other tools are not held by it.
      expect((await post(service, secret, rpc(5, 'resources/read', { uri: 'firelimit://limits' }))).status).toBe(200);
    } finally {
      await service.release();
    }
  });

  test('when the tier refuses, the rule is not spent either', async () => {
    const { service, secret } = await serviceWith({ RATE_LIMIT_PER_MINUTE: '4' }, file);
    try {
      expect((await post(service, secret, tool(1, 'whoami'))).status).toBe(200);
      expect((await post(service, secret, tool(2, 'whoami'))).status).toBe(200);
      expect((await post(service, secret, tool(3, 'whoami'))).status).toBe(429);
      const status = await statusOf(service, secret);
      expect(status.remaining).toBe(0);
      expect(status.policies.find((p) => p.scope === 'rule')?.remaining).toBe(1);
    } finally {
      await service.release();
    }
  });
});

describe('shadow rules', () => {
  test('a shadow limit never refuses; what it would have refused is counted and logged', async () => {
    const captured = createCapturingLogger();
    const { service, secret, tokenId } = await serviceWith(
      { RATE_LIMIT_PER_MINUTE: '100' },
      { rules: [{ name: 'try-whoami', match: { tool: 'whoami' }, limits: [{ limit: 2, window: '1m' }], shadow: true }] },
      captured,
    );
    try {
      for (let i = 1; i <= 5; i++) expect((await post(service, secret, tool(i, 'whoami'))).status).toBe(200);
      const metric = await service.metrics.registry.getSingleMetricAsString('firelimit_shadow_refusals_total');
      expect(metric).toContain('firelimit_shadow_refusals_total{scope="rule",tier="default",tool="whoami",rule="try-whoami"} 3');
      expect(metric).not.toContain(tokenId);
      const logged = captured.entries.filter((e) => e.fields.event === 'ratelimit.shadow_refusal');
      expect(logged).toHaveLength(3);
      expect(logged[0]?.fields).toMatchObject({ tokenId, rule: 'try-whoami', tool: 'whoami', limit: 2, scope: 'rule' });
      expect(JSON.stringify(captured.entries)).not.toContain(secret);
      // Shadow policies are reported, not part of the enforced headers.
      const res = await post(service, secret, tool(6, 'whoami'));
      expect(res.headers['ratelimit-policy']).toBe('"default";q=100;w=60');
      expect((await statusOf(service, secret)).policies.find((p) => p.scope === 'rule')).toMatchObject({ shadow: true });
    } finally {
      await service.release();
    }
  });
});
