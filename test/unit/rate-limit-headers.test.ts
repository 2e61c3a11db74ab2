import fc from 'fast-check';
import type { Decision } from '../../src/library/window/decision';
import { secondsUntil, setRateLimitHeaders } from '../../src/library/express/rate-limit-headers';
import { toDecision } from '../../src/library/limiter/rate-limiter';

const W = 60_000;
/** A moment 12.5 s into a window that ends at END. */
const END = 1_700_000_040_000;
const NOW = END - 47_500;

/** A one-policy decision: the headers read its top figures, which are that policy's. */
function decision(overrides: Partial<Decision> = {}): Decision {
  const top = {
    allowed: true,
    limit: 10,
    remaining: 7,
    resetAtMs: END,
    retryAfterMs: 0,
    policyName: 'default',
    windowMs: W,
    algorithm: 'fixed-window' as const,
    ...overrides,
  };
  const { allowed, limit, remaining, resetAtMs, retryAfterMs, policyName, windowMs, algorithm } = top;
  return { shared: true, reason: 'within_limit', ...top, policies: overrides.policies ?? [{ allowed, limit, remaining, resetAtMs, retryAfterMs, policyName, windowMs, algorithm }] };
}

/** The headers one call sets, by the exact name it used. */
function headersFor(d: Decision, nowMs = NOW): Record<string, string> {
  const headers: Record<string, string> = {};
  setRateLimitHeaders({ setHeader: (name, value) => (headers[name] = value) }, d, nowMs);
  return headers;
}

describe('setRateLimitHeaders', () => {
  it('sets the x-ratelimit trio and the IETF RateLimit-Policy and RateLimit fields, and no Retry-After, on an allowed answer', () => {
    expect(headersFor(decision())).toEqual({
      'x-ratelimit-limit': '10',
      'x-ratelimit-remaining': '7',
      'x-ratelimit-reset': String(END / 1000),
      'RateLimit-Policy': '"default";q=10;w=60',
      RateLimit: '"default";r=7;t=48',
    });
  });

  it('adds Retry-After in whole seconds on a refusal', () => {
    const headers = headersFor(decision({ allowed: false, remaining: 0, retryAfterMs: 47_500, reason: 'limit' }));
    expect(headers).toEqual({
      'x-ratelimit-limit': '10',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(END / 1000),
      'RateLimit-Policy': '"default";q=10;w=60',
      RateLimit: '"default";r=0;t=48',
      'Retry-After': '48',
    });
  });

  it.each([
    { name: 'an allowed answer within the limit', d: { allowed: true, retryAfterMs: 0, reason: 'within_limit' as const }, retryAfter: undefined },
    { name: 'an allowed answer from the local fallback', d: { allowed: true, retryAfterMs: 0, reason: 'local_fallback' as const, shared: false }, retryAfter: undefined },
    { name: 'an allowed answer that spent the last unit', d: { allowed: true, remaining: 0, retryAfterMs: 0 }, retryAfter: undefined },
    { name: 'a refusal by the limit', d: { allowed: false, remaining: 0, retryAfterMs: 1_000, reason: 'limit' as const }, retryAfter: '1' },
    { name: 'a refusal a moment before the window ends', d: { allowed: false, remaining: 0, retryAfterMs: 1, reason: 'limit' as const }, retryAfter: '1' },
    { name: 'a refusal with 1.001 s left (rounded up, never early)', d: { allowed: false, remaining: 0, retryAfterMs: 1_001, reason: 'limit' as const }, retryAfter: '2' },
    { name: 'a fail-closed refusal while the backend is down', d: { allowed: false, remaining: 3, retryAfterMs: 5_000, reason: 'backend_unavailable' as const }, retryAfter: '5' },
  ])('Retry-After on $name: $retryAfter', ({ d, retryAfter }) => {
    expect(headersFor(decision(d))['Retry-After']).toBe(retryAfter);
  });

  it.each([
    { name: 'mid-window, rounded up to the next second', resetAtMs: END, nowMs: END - 47_500, t: 48, reset: END / 1000 },
    { name: 'exactly on a second', resetAtMs: END, nowMs: END - 3_000, t: 3, reset: END / 1000 },
    { name: 'one millisecond before the reset', resetAtMs: END, nowMs: END - 1, t: 1, reset: END / 1000 },
    { name: 'at the reset itself', resetAtMs: END, nowMs: END, t: 0, reset: END / 1000 },
    { name: 'after the reset (a decision read late), never negative', resetAtMs: END, nowMs: END + 5_000, t: 0, reset: END / 1000 },
    { name: 'a reset that is not on a whole second', resetAtMs: END + 250, nowMs: END - 1_000, t: 2, reset: END / 1000 + 1 },
  ])('RateLimit t= and x-ratelimit-reset $name', ({ resetAtMs, nowMs, t, reset }) => {
    const headers = headersFor(decision({ resetAtMs, remaining: 4, policyName: 'free' }), nowMs);
    expect(headers.RateLimit).toBe(`"free";r=4;t=${t}`);
    expect(headers['x-ratelimit-reset']).toBe(String(reset));
  });

  it.each([
    { windowMs: 1_000, w: 1 },
    { windowMs: 60_000, w: 60 },
    { windowMs: 3_600_000, w: 3600 },
    { windowMs: 1_400, w: 1 },
    { windowMs: 1_500, w: 2 },
  ])('RateLimit-Policy states the window of $windowMs ms as w=$w', ({ windowMs, w }) => {
    expect(headersFor(decision({ policyName: `w${windowMs}`, windowMs, limit: 3 }))['RateLimit-Policy']).toBe(`"w${windowMs}";q=3;w=${w}`);
  });

  it('publishes the new limit when a policy changes its limit under the same name', () => {
    const name = 'reconfigured-limit';
    expect(headersFor(decision({ policyName: name, limit: 10, remaining: 9 }))).toMatchObject({ 'x-ratelimit-limit': '10', 'RateLimit-Policy': `"${name}";q=10;w=60` });
    expect(headersFor(decision({ policyName: name, limit: 25, remaining: 24 }))).toMatchObject({ 'x-ratelimit-limit': '25', 'RateLimit-Policy': `"${name}";q=25;w=60` });
    expect(headersFor(decision({ policyName: name, limit: 10, remaining: 9 }))).toMatchObject({ 'x-ratelimit-limit': '10', 'RateLimit-Policy': `"${name}";q=10;w=60` });
  });

  it('publishes the new window when a policy changes its window under the same name', () => {
    const name = 'reconfigured-window';
    expect(headersFor(decision({ policyName: name, windowMs: 60_000 }))['RateLimit-Policy']).toBe(`"${name}";q=10;w=60`);
    expect(headersFor(decision({ policyName: name, windowMs: 3_600_000 }))['RateLimit-Policy']).toBe(`"${name}";q=10;w=3600`);
  });

  it('lists every policy of a decision held to several, and reports the binding one (least left) in RateLimit and x-ratelimit', () => {
    const burst = { name: 'burst', limit: 5, windowMs: 1_000 };
    const minute = { name: 'minute', limit: 100, windowMs: W };
    const d = toDecision(
      {
        allowed: true,
        decisions: [
          { allowed: true, limit: 5, remaining: 4, resetAtMs: NOW + 1_000, retryAfterMs: 0 },
          { allowed: true, limit: 100, remaining: 2, resetAtMs: END, retryAfterMs: 0 },
        ],
      },
      [burst, minute],
      true,
    );
    expect(headersFor(d)).toEqual({
      'x-ratelimit-limit': '100',
      'x-ratelimit-remaining': '2',
      'x-ratelimit-reset': String(END / 1000),
      'RateLimit-Policy': '"burst";q=5;w=1, "minute";q=100;w=60',
      RateLimit: '"minute";r=2;t=48',
    });
  });

  it('keeps two policies apart: each answer carries its own policy name and numbers', () => {
    const free = headersFor(decision({ policyName: 'free', limit: 5, remaining: 1 }));
    const pro = headersFor(decision({ policyName: 'pro', limit: 500, remaining: 499, windowMs: 3_600_000 }));
    expect(free).toMatchObject({ 'x-ratelimit-limit': '5', 'RateLimit-Policy': '"free";q=5;w=60', RateLimit: '"free";r=1;t=48' });
    expect(pro).toMatchObject({ 'x-ratelimit-limit': '500', 'RateLimit-Policy': '"pro";q=500;w=3600', RateLimit: '"pro";r=499;t=48' });
  });

  // Names drawn from a few, so the same name comes back with other numbers.
  const decisionArb = fc
    .record({
      policyName: fc.constantFrom('prop-a', 'prop-b', 'prop-c'),
      limit: fc.integer({ min: 1, max: 1_000 }),
      windowMs: fc.integer({ min: 1_000, max: 86_400_000 }),
      spent: fc.integer({ min: 0, max: 1_000 }),
      allowed: fc.boolean(),
      resetInMs: fc.integer({ min: -10_000, max: 86_400_000 }),
      retryAfterMs: fc.integer({ min: 1, max: 86_400_000 }),
    })
    .map(({ policyName, limit, windowMs, spent, allowed, resetInMs, retryAfterMs }) => ({
      nowMs: NOW,
      d: decision({
        policyName,
        limit,
        windowMs,
        remaining: Math.max(0, limit - spent),
        allowed,
        resetAtMs: NOW + resetInMs,
        retryAfterMs: allowed ? 0 : retryAfterMs,
        reason: allowed ? 'within_limit' : 'limit',
      }),
    }));

  it('every answer, in any order of policies whose numbers change, carries exactly its own numbers', () => {
    fc.assert(
      fc.property(fc.array(decisionArb, { minLength: 1, maxLength: 30 }), (answers) => {
        for (const { d, nowMs } of answers) {
          const headers = headersFor(d, nowMs);
          const t = Math.max(0, Math.ceil((d.resetAtMs - nowMs) / 1000));
          expect(headers['x-ratelimit-limit']).toBe(String(d.limit));
          expect(headers['x-ratelimit-remaining']).toBe(String(d.remaining));
          expect(headers['x-ratelimit-reset']).toBe(String(Math.ceil(d.resetAtMs / 1000)));
          expect(headers['RateLimit-Policy']).toBe(`"${d.policyName}";q=${d.limit};w=${Math.round(d.windowMs / 1000)}`);
          expect(headers.RateLimit).toBe(`"${d.policyName}";r=${d.remaining};t=${t}`);
        }
      }),
    );
  });

  it('Retry-After is present exactly on refusals, and a client that obeys it never comes back before retryAfterMs', () => {
    fc.assert(
      fc.property(decisionArb, ({ d, nowMs }) => {
        const retryAfter = headersFor(d, nowMs)['Retry-After'];
        if (d.allowed) {
          expect(retryAfter).toBeUndefined();
        } else {
          expect(retryAfter).toMatch(/^[1-9][0-9]*$/);
          expect(Number(retryAfter) * 1000).toBeGreaterThanOrEqual(d.retryAfterMs);
          expect(Number(retryAfter) * 1000 - d.retryAfterMs).toBeLessThan(1000);
        }
      }),
    );
  });

  it('RateLimit t= is the whole seconds to the reset, rounded up and never negative', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 42 }), fc.integer({ min: -100_000, max: 100_000_000 }), (nowMs, resetInMs) => {
        const rate = headersFor(decision({ resetAtMs: nowMs + resetInMs, remaining: 2, policyName: 'prop-t' }), nowMs).RateLimit;
        const t = Number(/;t=(\d+)$/.exec(rate ?? '')?.[1]);
        expect(t).toBeGreaterThanOrEqual(0);
        expect(t * 1000).toBeGreaterThanOrEqual(resetInMs);
        if (resetInMs > 0) expect(t * 1000 - resetInMs).toBeLessThan(1000);
        else expect(t).toBe(0);
      }),
    );
  });
});

describe('secondsUntil', () => {
  it.each([
    { ms: 0, seconds: 1 },
    { ms: -5_000, seconds: 1 },
    { ms: 1, seconds: 1 },
    { ms: 999, seconds: 1 },
    { ms: 1_000, seconds: 1 },
    { ms: 1_001, seconds: 2 },
    { ms: 59_000, seconds: 59 },
    { ms: 3_600_000, seconds: 3_600 },
  ])('$ms ms is $seconds s (whole seconds, at least 1, rounded up)', ({ ms, seconds }) => {
    expect(secondsUntil(ms)).toBe(seconds);
  });

  it('never tells a client to come back earlier than asked, nor a second or more later', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 40 }), (ms) => {
        const s = secondsUntil(ms);
        expect(Number.isInteger(s)).toBe(true);
        expect(s * 1000).toBeGreaterThanOrEqual(ms);
        expect(s * 1000 - ms).toBeLessThan(1000);
      }),
    );
  });
});
