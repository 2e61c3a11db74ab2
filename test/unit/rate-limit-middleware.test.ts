import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import request from 'supertest';
import type { Decision } from '../../src/library/window/decision';
import type { PolicySet, RateLimitPolicy } from '../../src/library/window/policy';
import type { ConsumeOptions, RateLimiter } from '../../src/library/limiter/rate-limiter';
import { createRateLimitMiddleware, type RateLimitMiddlewareOptions } from '../../src/library/express/rate-limit-middleware';
import { decisionOf } from '../../src/http/request-locals';
import { refusalBody, refusalStatus, writeJsonRefusal } from '../../src/library/express/refusal-body';

const W = 60_000;
const END = 1_700_000_040_000;
/** 12.5 s into the window that ends at END. */
const NOW = END - 47_500;
const policy: RateLimitPolicy = { name: 'default', limit: 10, windowMs: W };

/** A one-policy decision: its top figures are that policy's. */
function decision(overrides: Partial<Decision> = {}): Decision {
  const top = { allowed: true, limit: 10, remaining: 9, resetAtMs: END, retryAfterMs: 0, policyName: 'default', windowMs: W, algorithm: 'fixed-window' as const, ...overrides };
  const { allowed, limit, remaining, resetAtMs, retryAfterMs, policyName, windowMs, algorithm } = top;
  return { shared: true, reason: 'within_limit', ...top, policies: overrides.policies ?? [{ allowed, limit, remaining, resetAtMs, retryAfterMs, policyName, windowMs, algorithm }] };
}

const refusedByLimit = decision({ allowed: false, remaining: 0, retryAfterMs: 47_500, reason: 'limit' });
const refusedBackendDown = decision({ allowed: false, remaining: 0, retryAfterMs: 5_000, reason: 'backend_unavailable', shared: false });

/** A limiter that answers what the test says and remembers how it was asked. */
function scriptedLimiter(answer: (key: string, options: ConsumeOptions | undefined) => Promise<Decision>) {
  const calls: { key: string; options: ConsumeOptions | undefined }[] = [];
  const limiter: RateLimiter = {
    backend: 'memory',
    policies: [policy],
    failurePolicy: 'fail-open',
    consume: (key, options) => {
      calls.push({ key, options });
      return answer(key, options);
    },
    refund: async () => undefined,
    whenReady: () => Promise.resolve(true),
    close: () => Promise.resolve(),
  };
  return { limiter, calls };
}

/**
 * An app with the middleware in front of a route that answers 200 with the
 * decision it found, and an error handler that shows what reached it.
 */
function appWith(middleware: RequestHandler) {
  const app = express();
  app.get('/thing', middleware, (_req, res) => {
    res.status(200).json({ routed: true, decision: decisionOf(res) ?? null });
  });
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).json({ handlerSaw: error.message });
  });
  return app;
}

function middleware(answer: (key: string) => Promise<Decision>, options: Partial<RateLimitMiddlewareOptions> = {}) {
  const scripted = scriptedLimiter(answer);
  const handler = createRateLimitMiddleware({ limiter: scripted.limiter, key: (req) => `tok_${String(req.query.who)}`, clock: () => NOW, ...options });
  return { app: appWith(handler), calls: scripted.calls };
}

describe('createRateLimitMiddleware', () => {
  it('lets an allowed request through to the route, with the decision in res.locals and the headers set', async () => {
    const allowed = decision({ remaining: 7 });
    const { app, calls } = middleware(() => Promise.resolve(allowed));
    const res = await request(app).get('/thing?who=alice');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ routed: true, decision: allowed });
    expect(calls).toEqual([{ key: 'tok_alice', options: { policies: undefined, cost: undefined } }]);
    expect(res.headers).toMatchObject({
      'x-ratelimit-limit': '10',
      'x-ratelimit-remaining': '7',
      'x-ratelimit-reset': String(END / 1000),
      'ratelimit-policy': '"default";q=10;w=60',
      ratelimit: '"default";r=7;t=48',
    });
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('refuses with 429, Retry-After and a JSON body the client can act on, without reaching the route', async () => {
    const { app } = middleware(() => Promise.resolve(refusedByLimit));
    const res = await request(app).get('/thing?who=bob');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('48');
    expect(res.headers.ratelimit).toBe('"default";r=0;t=48');
    expect(res.body).toEqual(refusalBody(refusedByLimit));
    expect(res.body.routed).toBeUndefined();
  });

  it('refuses with 503 when a fail-closed backend is down', async () => {
    const { app } = middleware(() => Promise.resolve(refusedBackendDown));
    const res = await request(app).get('/thing?who=carol');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body).toMatchObject({ error: 'backend_unavailable', retryAfterSeconds: 5 });
  });

  it('asks the limiter with the policies and cost the options pick for this request', async () => {
    const pro: PolicySet = [
      { name: 'pro-burst', algorithm: 'token-bucket', limit: 10, windowMs: 1_000, burst: 20 },
      { name: 'pro', limit: 100, windowMs: W },
    ];
    const seen: string[] = [];
    const { app, calls } = middleware(() => Promise.resolve(decision()), {
      policies: (req) => {
        seen.push(`policies:${String(req.query.who)}`);
        return pro;
      },
      cost: (req) => {
        seen.push(`cost:${String(req.query.who)}`);
        return 3;
      },
    });
    await request(app).get('/thing?who=dave').expect(200);
    expect(calls).toEqual([{ key: 'tok_dave', options: { policies: pro, cost: 3 } }]);
    expect(seen).toEqual(['policies:dave', 'cost:dave']);
  });

  it('hands a refusal to a custom refusal writer with the decision, and sets the headers first', async () => {
    const written: Decision[] = [];
    const { app } = middleware(() => Promise.resolve(refusedByLimit), {
      refuse: (_req, res, d) => {
        written.push(d);
        res.status(429).json({ custom: true, sawRetryAfter: res.getHeader('Retry-After') ?? null, sawLocals: decisionOf(res) ?? null });
      },
    });
    const res = await request(app).get('/thing?who=erin');
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ custom: true, sawRetryAfter: '48', sawLocals: refusedByLimit });
    expect(written).toEqual([refusedByLimit]);
  });

  it('computes the headers relative seconds from the injected clock', async () => {
    const { app } = middleware(() => Promise.resolve(decision()), { clock: () => END - 3_000 });
    const res = await request(app).get('/thing?who=frank');
    expect(res.headers.ratelimit).toBe('"default";r=9;t=3');
  });

  it('defaults the clock to Date.now', async () => {
    const resetAtMs = Date.now() + 3_600_000;
    const scripted = scriptedLimiter(() => Promise.resolve(decision({ resetAtMs })));
    const app = appWith(createRateLimitMiddleware({ limiter: scripted.limiter, key: () => 'k' }));
    const res = await request(app).get('/thing');
    const t = Number(/;t=(\d+)$/.exec(String(res.headers.ratelimit))?.[1]);
    // Within a minute of an hour: the clock is the wall clock, not 0 or a fixed value.
    expect(t).toBeGreaterThan(3_540);
    expect(t).toBeLessThanOrEqual(3_600);
  });

  it('passes a limiter that throws synchronously (a bad key) to the error handler, not to the route', async () => {
    const { app } = middleware(() => {
      throw new Error('bad key');
    });
    const res = await request(app).get('/thing?who=gina');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ handlerSaw: 'bad key' });
  });

  it('passes a key function that throws to the error handler', async () => {
    const { app } = middleware(() => Promise.resolve(decision()), {
      key: () => {
        throw new Error('no token');
      },
    });
    const res = await request(app).get('/thing');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ handlerSaw: 'no token' });
  });

  it('passes a limiter whose promise rejects to the error handler, with no rate-limit headers', async () => {
    const { app } = middleware(() => Promise.reject(new Error('store exploded')));
    const res = await request(app).get('/thing?who=hank');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ handlerSaw: 'store exploded' });
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });
});

describe('createRateLimitMiddleware with a limiter that decides synchronously', () => {
  /** scriptedLimiter plus a consumeSync answering `sync`; consume answers `later`. */
  function syncMiddleware(sync: (key: string) => Decision | undefined, later: Decision = decision({ remaining: 1 })) {
    const scripted = scriptedLimiter(() => Promise.resolve(later));
    const syncCalls: { key: string; options: ConsumeOptions | undefined }[] = [];
    const limiter: RateLimiter = {
      ...scripted.limiter,
      consumeSync: (key, options) => {
        syncCalls.push({ key, options });
        return sync(key);
      },
    };
    const handler = createRateLimitMiddleware({ limiter, key: (req) => `tok_${String(req.query.who)}`, cost: () => 2, clock: () => NOW });
    return { app: appWith(handler), calls: scripted.calls, syncCalls };
  }

  it('answers from consumeSync without calling consume, with the decision in res.locals and the headers set', async () => {
    const allowed = decision({ remaining: 5 });
    const { app, calls, syncCalls } = syncMiddleware(() => allowed);
    const res = await request(app).get('/thing?who=ivy');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ routed: true, decision: allowed });
    expect(res.headers['x-ratelimit-remaining']).toBe('5');
    expect(syncCalls).toEqual([{ key: 'tok_ivy', options: { policies: undefined, cost: 2 } }]);
    expect(calls).toEqual([]);
  });

  it('refuses from consumeSync with 429 and Retry-After', async () => {
    const { app, calls } = syncMiddleware(() => refusedByLimit);
    const res = await request(app).get('/thing?who=jo');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('48');
    expect(res.body).toEqual(refusalBody(refusedByLimit));
    expect(calls).toEqual([]);
  });

  it('falls back to consume, asked once with the same key and options, when consumeSync cannot decide', async () => {
    const { app, calls, syncCalls } = syncMiddleware(() => undefined);
    const res = await request(app).get('/thing?who=kim');
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-remaining']).toBe('1');
    expect(calls).toEqual([{ key: 'tok_kim', options: { policies: undefined, cost: 2 } }]);
    expect(calls[0]?.options).toBe(syncCalls[0]?.options);
  });

  it('passes a consumeSync that throws (a bad key) to the error handler, and never calls consume', async () => {
    const { app, calls } = syncMiddleware(() => {
      throw new Error('bad key');
    });
    const res = await request(app).get('/thing?who=lee');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ handlerSaw: 'bad key' });
    expect(calls).toEqual([]);
  });
});

describe('decisionOf', () => {
  it('is undefined before the middleware ran', () => {
    expect(decisionOf({ locals: {} } as Response)).toBeUndefined();
  });
});

describe('refusalStatus', () => {
  it.each([
    { reason: 'limit' as const, status: 429 },
    { reason: 'backend_unavailable' as const, status: 503 },
    { reason: 'local_fallback' as const, status: 429 },
    { reason: 'within_limit' as const, status: 429 },
  ])('a refusal for reason $reason is $status', ({ reason, status }) => {
    expect(refusalStatus(decision({ allowed: false, reason }))).toBe(status);
  });
});

describe('refusalBody', () => {
  it('says which limit was exceeded, for how long, and when to come back', () => {
    expect(refusalBody(refusedByLimit)).toEqual({
      error: 'rate_limited',
      reason: 'limit',
      message: 'Rate limit of 10 requests per 60 s exceeded. Retry after 48 s.',
      limit: 10,
      windowSeconds: 60,
      retryAfterSeconds: 48,
      resetAt: new Date(END).toISOString(),
    });
  });

  it('says the backend is unavailable, not that a limit was hit, when fail-closed refuses', () => {
    expect(refusalBody(refusedBackendDown)).toEqual({
      error: 'backend_unavailable',
      reason: 'backend_unavailable',
      message: 'The rate-limit backend is unavailable and this service refuses requests it cannot count. Retry after 5 s.',
      retryAfterSeconds: 5,
    });
  });

  it.each([
    { windowMs: 1_000, retryAfterMs: 1, seconds: 1, retry: 1 },
    { windowMs: 1_500, retryAfterMs: 1_001, seconds: 2, retry: 2 },
    { windowMs: 3_600_000, retryAfterMs: 3_599_000, seconds: 3_600, retry: 3_599 },
  ])('rounds a $windowMs ms window to $seconds s and $retryAfterMs ms to retry after $retry s', ({ windowMs, retryAfterMs, seconds, retry }) => {
    const body = refusalBody(decision({ allowed: false, reason: 'limit', limit: 4, windowMs, retryAfterMs }));
    expect(body).toMatchObject({ windowSeconds: seconds, retryAfterSeconds: retry, message: `Rate limit of 4 requests per ${seconds} s exceeded. Retry after ${retry} s.` });
  });
});

describe('writeJsonRefusal', () => {
  it.each([
    { d: refusedByLimit, status: 429 },
    { d: refusedBackendDown, status: 503 },
  ])('writes status $status and the refusal body', ({ d, status }) => {
    const written: { status?: number; body?: unknown } = {};
    const res = {
      status(code: number) {
        written.status = code;
        return this;
      },
      json(body: unknown) {
        written.body = body;
        return this;
      },
    };
    writeJsonRefusal({} as Request, res as unknown as Response, d);
    expect(written).toEqual({ status, body: refusalBody(d) });
  });
});
