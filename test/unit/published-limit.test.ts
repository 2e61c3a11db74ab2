import { setRateLimitHeaders } from '../../src/library/express/rate-limit-headers';
import { refusalBody } from '../../src/library/express/refusal-body';
import { createRateLimiter } from '../../src/library/limiter/create-rate-limiter';
import type { Decision } from '../../src/library/window/decision';
import type { RateLimitPolicy } from '../../src/library/window/policy';

const NOW = 1_700_000_000_000;

function headersFor(d: Decision): Record<string, string> {
  const headers: Record<string, string> = {};
  setRateLimitHeaders({ setHeader: (name, value) => (headers[name] = value) }, d, NOW);
  return headers;
}

/** The limiter's own decisions for `calls` calls at one instant, on a still clock. */
async function decisions(policy: RateLimitPolicy, calls: number): Promise<Decision[]> {
  const limiter = await createRateLimiter({ policy, clock: () => NOW });
  const out: Decision[] = [];
  for (let i = 0; i < calls; i++) out.push(await limiter.consume('tok'));
  return out;
}

describe('what a policy publishes, from real decisions', () => {
  test.each<[string, RateLimitPolicy, string, string]>([
    ['a fixed window of 10 a minute', { name: 'default', algorithm: 'fixed-window', limit: 10, windowMs: 60_000 }, '"default";q=10;w=60', 'Rate limit of 10 requests per 60 s exceeded.'],
    ['a 2-a-minute token bucket of burst 1', { name: 'default', algorithm: 'token-bucket', limit: 2, windowMs: 60_000, burst: 1 }, '"default";q=2;w=60;burst=1', 'Rate limit of bursts of 1, then 2 per 60 s exceeded.'],
    ['a token bucket of bursts of 10, one a second', { name: 'default', algorithm: 'token-bucket', limit: 60, windowMs: 60_000, burst: 10 }, '"default";q=60;w=60;burst=10', 'Rate limit of bursts of 10, then 60 per 60 s exceeded.'],
    ['a leaky bucket of bursts of 3, 30 a minute', { name: 'default', algorithm: 'leaky-bucket', limit: 30, windowMs: 60_000, burst: 3 }, '"default";q=30;w=60;burst=3', 'Rate limit of bursts of 3, then 30 per 60 s exceeded.'],
    ['a bucket whose burst is its rate (the default)', { name: 'b', algorithm: 'token-bucket', limit: 5, windowMs: 1_000 }, '"b";q=5;w=1;burst=5', 'Rate limit of bursts of 5, then 5 per 1 s exceeded.'],
  ])('%s', async (_label, policy, policyHeader, sentence) => {
    const burst = policy.burst ?? policy.limit;
    const answers = await decisions(policy, Math.min(burst, policy.limit) + 1);
    const refused = answers[answers.length - 1] as Decision;
    expect(refused.allowed).toBe(false);
    expect(headersFor(answers[0] as Decision)['RateLimit-Policy']).toBe(policyHeader);
    expect(headersFor(refused)['RateLimit-Policy']).toBe(policyHeader);
    const body = refusalBody(refused);
    expect(String(body.message)).toMatch(new RegExp(`^${sentence.replace(/[.()]/g, '\\$&')} Retry after \\d+ s\\.$`));
    expect(body.limit).toBe(policy.limit);
    expect(body.burst).toBe((policy.algorithm ?? '').endsWith('bucket') ? burst : undefined);
  });

  test('a bucket beside a window lists both, each with its own figures', async () => {
    const limiter = await createRateLimiter({
      policies: [
        { name: 'burst', algorithm: 'token-bucket', limit: 120, windowMs: 60_000, burst: 5 },
        { name: 'day', algorithm: 'fixed-window', limit: 1000, windowMs: 86_400_000 },
      ],
      clock: () => NOW,
    });
    expect(headersFor(await limiter.consume('tok'))['RateLimit-Policy']).toBe('"burst";q=120;w=60;burst=5, "day";q=1000;w=86400');
  });
});
