import express from 'express';
import request from 'supertest';
import { loadConfig, type Config } from '../../src/config/config';
import { createDevelopersHandler, renderDevelopersPage } from '../../src/developers/developers-page';
import { AI_SDK_OBSERVED, INSPECTOR_OBSERVED, LANGCHAIN_OBSERVED, MCP_REMOTE_OBSERVED } from '../../src/developers/developers-clients';
import { describePolicy } from '../../src/library/window/describe-policy';
import type { RateLimitPolicy } from '../../src/library/window/policy';

const BASE_URL = 'https://firelimit-abc123-ew.a.run.app';

/** The text inside the element marked data-figure="name", or undefined when the page lacks it. */
function figure(page: string, name: string): string | undefined {
  const match = new RegExp(`data-figure="${name}"[^>]*>([^<]*)<`).exec(page);
  return match?.[1];
}

function appFor(config: Config): express.Express {
  const app = express();
  app.get('/developers', createDevelopersHandler(config));
  return app;
}

describe('renderDevelopersPage', () => {
  const memory77 = loadConfig({
    RATE_LIMIT_PER_MINUTE: '77',
    RATE_LIMIT_TIERS: 'pro=600',
    AUTH_FAILURES_PER_MINUTE: '7',
    UNAUTHENTICATED_PER_MINUTE: '33',
    REFUSED_REQUESTS_PER_MINUTE: '44',
  });
  const rtdb250 = loadConfig({
    RATE_LIMIT_PER_MINUTE: '250',
    RATE_LIMIT_TIERS: 'partner=1200,free=5',
    RATE_LIMIT_BACKEND: 'rtdb',
    RATE_LIMIT_FAILURE_POLICY: 'fail-closed',
    RATE_LIMIT_TIMEOUT_MS: '900',
    FIREBASE_DATABASE_URL: 'https://demo-default-rtdb.firebaseio.com',
  });

  it('states the default limit, every tier and the window from the config it is given', () => {
    const page = renderDevelopersPage(memory77, { baseUrl: BASE_URL });
    expect(figure(page, 'limit-default')).toBe('77');
    expect(figure(page, 'window-default')).toBe('60');
    expect(figure(page, 'limit-tier-default')).toBe('77');
    expect(figure(page, 'limit-tier-pro')).toBe('600');
    expect(figure(page, 'window-tier-pro')).toBe('60');
    expect(figure(page, 'limit-auth-failures')).toBe('7');
    expect(figure(page, 'limit-unauthenticated')).toBe('33');
    expect(figure(page, 'window-unauthenticated')).toBe('60');
    expect(figure(page, 'limit-refused-requests')).toBe('44');
    expect(figure(page, 'window-refused-requests')).toBe('60');

    const other = renderDevelopersPage(rtdb250, { baseUrl: BASE_URL });
    expect(figure(other, 'limit-default')).toBe('250');
    expect(figure(other, 'limit-tier-partner')).toBe('1200');
    expect(figure(other, 'limit-tier-free')).toBe('5');
    expect(figure(other, 'limit-tier-pro')).toBeUndefined();
  });

  it('says honestly that a memory backend counts per instance', () => {
    const page = renderDevelopersPage(memory77, { baseUrl: BASE_URL });
    expect(figure(page, 'sharing')).toBe('Per instance');
    expect(page).toContain('each instance keeps its own count');
    expect(figure(page, 'failure-policy')).toBeUndefined();
  });

  it('describes a shared backend and its fail-closed outage behaviour with the configured timeout', () => {
    const page = renderDevelopersPage(rtdb250, { baseUrl: BASE_URL });
    expect(figure(page, 'sharing')).toBe('Shared');
    expect(figure(page, 'backend')).toBe('Firebase Realtime Database');
    expect(figure(page, 'failure-policy')).toBe('fail-closed');
    expect(figure(page, 'timeout-ms')).toBe('900');
    expect(page).toContain('HTTP 503');
  });

  it('describes fail-open with RATE_LIMIT_OUTAGE_SHARE=fleet (the default) as each instance admitting its share of what was left', () => {
    const config = loadConfig({ RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'redis://:hunter2@cache:6379', RATE_LIMIT_PER_MINUTE: '42' });
    const page = renderDevelopersPage(config, { baseUrl: BASE_URL });
    expect(figure(page, 'failure-policy')).toBe('fail-open');
    expect(figure(page, 'outage-share')).toBe('its share');
    expect(page).toContain('about what was left of your 42 per 60 s');
    expect(page).not.toContain('N × 42');
    expect(page).not.toContain('hunter2');
  });

  it('describes fail-open with RATE_LIMIT_OUTAGE_SHARE=instance as each instance enforcing its own window, N instances times the limit at worst', () => {
    const config = loadConfig({ RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'redis://cache:6379', RATE_LIMIT_PER_MINUTE: '42', RATE_LIMIT_OUTAGE_SHARE: 'instance' });
    const page = renderDevelopersPage(config, { baseUrl: BASE_URL });
    expect(figure(page, 'outage-share')).toBe('on its own');
    expect(page).toContain('N × 42');
  });

  it('shows header examples produced by the real header code, and the back-off rules', () => {
    const page = renderDevelopersPage(memory77, { baseUrl: BASE_URL });
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'RateLimit-Policy', 'RateLimit', 'Retry-After']) {
      expect(page).toContain(`<code>${name}</code>`);
    }
    expect(page).toContain('&quot;default&quot;;q=77;w=60');
    expect(page).toContain('draft-ietf-httpapi-ratelimit-headers-10');
    expect(page).toMatch(/Obey <code>Retry-After<\/code> first/);
    expect(page).toContain('jitter');
  });

  it('publishes a bucket as its rate per window with its burst beside it, in the headers, the 429 example and the client sentence', () => {
    const bucket = loadConfig({ RATE_LIMIT_PER_MINUTE: '2', RATE_LIMIT_ALGORITHM: 'token-bucket', RATE_LIMIT_BURST: '1' });
    const page = renderDevelopersPage(bucket, { baseUrl: BASE_URL });
    expect(page).toContain('&quot;default&quot;;q=2;w=60;burst=1');
    expect(page).not.toContain('q=1;w=60');
    expect(page).toContain('Rate limit of bursts of 1, then 2 per 60 s exceeded. Retry after <var>N</var> s.');
    expect(page).toContain('&quot;burst&quot;: 1');
    expect(page).not.toContain('Rate limit of 1 requests per 60 s');
  });

  it('says how a refusal reaches the caller in each common MCP client, with the figures of this configuration', () => {
    const page = renderDevelopersPage(memory77, { baseUrl: BASE_URL });
    expect(page).toContain('<h2 id="clients">Reading a refusal in your client</h2>');
    for (const id of ['client-sdk-2', 'client-sdk-1', 'client-mcp-remote', 'client-inspector', 'client-ai-sdk', 'client-langchain']) {
      expect(page).toContain(`id="${id}"`);
    }
    expect(page).toContain('Rate limit of 77 requests per 60 s');
    expect(page).toContain('<code>-32029</code>');
    expect(page).toContain('error.data.text');
    expect(page).toContain('<a href="#clients">');
  });

  it('names the tested versions and what the tests observed for the AI SDK, mcp-remote and LangChain', () => {
    const page = renderDevelopersPage(memory77, { baseUrl: BASE_URL });
    expect(page).toContain(`Vercel AI SDK (@ai-sdk/mcp, tested: ${AI_SDK_OBSERVED.version})`);
    expect(page).toContain(`<code>${AI_SDK_OBSERVED.errorClass}</code>`);
    expect(page).toContain('<code>statusCode</code> stays unset');
    expect(page).toContain(`mcp-remote (tested: ${MCP_REMOTE_OBSERVED.version})`);
    expect(page).toContain(`<code>${MCP_REMOTE_OBSERVED.code}</code>`);
    expect(page).toContain(`<code>${MCP_REMOTE_OBSERVED.messagePrefix}</code>`);
    expect(page).toContain(MCP_REMOTE_OBSERVED.noTokenMessage);
    expect(page).toContain(`LangChain MCP adapters (@langchain/mcp-adapters, tested: ${LANGCHAIN_OBSERVED.version})`);
    expect(page).toContain(`<code>${LANGCHAIN_OBSERVED.errorClass}</code>`);
    // The page shows the prefix with the tool's name as a placeholder; the test observed it for whoami.
    expect(page).toContain(LANGCHAIN_OBSERVED.messagePrefix.replace('whoami', '<var>name</var>'));
  });

  it('names the Inspector CLI version npm run inspector-check held it to, and what it showed for a refusal and for a token problem', () => {
    const page = renderDevelopersPage(memory77, { baseUrl: BASE_URL });
    const insp = INSPECTOR_OBSERVED;
    expect(page).toContain(`MCP Inspector CLI (@modelcontextprotocol/inspector --cli, tested: ${insp.version})`);
    expect(page).toContain(`exits with code\n<code>${insp.refusedExitCode}</code>`);
    expect(page).toContain(`"status":${insp.refusedStatus}`);
    expect(page).toContain(`${insp.refusedMessagePrefix}${insp.retrySentence}<var>N</var>s.`);
    expect(page).toContain(`followed by "${insp.bodyPrefix}" and our whole JSON-RPC body`);
    expect(page).toContain(`exits with code <code>${insp.authExitCode}</code>`);
    expect(page).toContain(insp.noTokenTerminalMessage);
    expect(page).toContain(insp.noTtyMessagePrefix);
    expect(page).toContain('<code>--stored-auth-only</code>');
    expect(page).not.toContain('tried: 2.12');
  });

  it('gives copyable curl and MCP client examples pointing at the base URL', () => {
    const page = renderDevelopersPage(memory77, { baseUrl: BASE_URL });
    expect(page).toContain(`curl -i '${BASE_URL}/mcp'`);
    expect(page).toContain("-H 'Accept: application/json' ");
    expect(page).toContain('&quot;rate_limit_status&quot;');
    expect(page).toContain(`&quot;url&quot;: &quot;${BASE_URL}/mcp&quot;`);
    expect(page).toContain('npm run token -- create --name NAME');
  });

  it('escapes a hostile base URL instead of emitting markup', () => {
    const page = renderDevelopersPage(memory77, { baseUrl: 'https://x.example/"><script>alert(1)</script>' });
    expect(page).not.toContain('<script>');
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).not.toMatch(/<script/i);
  });

  it('is a complete, script-free document readable on a phone', () => {
    const page = renderDevelopersPage(memory77, { baseUrl: BASE_URL });
    expect(page.startsWith('<!doctype html>')).toBe(true);
    expect(page).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(page).not.toMatch(/<script|javascript:|\son[a-z]+=/i);
  });
});

describe('createDevelopersHandler', () => {
  const config = loadConfig({ RATE_LIMIT_PER_MINUTE: '88' });

  it('serves HTML whose examples use the forwarded protocol and the Host header', async () => {
    const res = await request(appFor(config))
      .get('/developers')
      .set('Host', 'svc-xyz.a.run.app')
      .set('X-Forwarded-Proto', 'https');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.text).toContain('https://svc-xyz.a.run.app/mcp');
    expect(figure(res.text, 'limit-default')).toBe('88');
  });

  it('falls back to localhost when the Host header is not a host name', async () => {
    const res = await request(appFor(config)).get('/developers').set('Host', 'evil"><b>x');
    expect(res.status).toBe(200);
    expect(res.text).toContain(`http://localhost:${config.port}/mcp`);
    expect(res.text).not.toContain('<b>x');
  });
});

describe('renderDevelopersPage: costs, free calls and rules', () => {
  it('lists the free methods and tools, the free limit, every tool cost and every rule from the same config the charges use', () => {
    const config = loadConfig(
      { RATE_LIMIT_FREE_PER_MINUTE: '321', RATE_LIMIT_TOOL_COSTS: 'whoami=4', LIMITS_FILE: 'l.json' },
      {
        readFile: () =>
          JSON.stringify({
            rules: [
              { name: 'whoami-per-minute', match: { tool: 'whoami' }, limits: [{ limit: 9, window: '1m' }] },
              { name: 'try-reads', match: { method: 'resources/read' }, limits: [{ algorithm: 'token-bucket', limit: 30, window: '1m', burst: 5 }], shadow: true },
            ],
          }),
      },
    );
    const page = renderDevelopersPage(config, { baseUrl: BASE_URL });
    expect(figure(page, 'free-limit')).toBe('321');
    expect(figure(page, 'cost-whoami')).toBe('4');
    const ruleLimit = config.rateLimit.calls.rules[0]?.limits?.[0];
    expect(ruleLimit).toMatchObject({ limit: 9, windowMs: 60_000 });
    expect(figure(page, 'rule-limit-whoami-per-minute-whoami-per-minute')).toBe(describePolicy(ruleLimit as RateLimitPolicy).words);
    expect(page).toContain('<code>try-reads</code> (shadow: reported, not enforced)');
    for (const method of ['initialize', 'ping', 'tools/list', 'notifications/*', 'resources/templates/list', 'prompts/list']) expect(page).toContain(`<code>${method}</code>`);
    expect(page).toContain('<code>rate_limit_status</code>');
  });
});
