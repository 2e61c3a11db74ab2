// The TypeScript twin of app.cjs: it must pass the user's `tsc --strict` with module nodenext.
import type { AddressInfo } from 'node:net';
import express, { type Request } from 'express';
import { createMemoryStore, createRateLimiter, createRedisStore, type Decision, type RateLimitPolicy } from 'firelimit';
import { createRateLimitMiddleware } from 'firelimit/express';

const policy: RateLimitPolicy = { name: 'per-caller', algorithm: 'sliding-log', limit: Number(process.env.LIMIT ?? 3), windowMs: 60_000 };
const store = process.env.REDIS_URL ? await createRedisStore({ url: process.env.REDIS_URL }) : createMemoryStore();
const limiter = await createRateLimiter({ store, policy });
const app = express();
const limit = createRateLimitMiddleware({ limiter, key: (req: Request) => req.get('x-caller') ?? req.ip ?? 'unknown' });
app.get('/hello', limit, (_req, res) => {
  const decision = res.locals.rateLimit as Decision;
  res.json({ hello: 'world', remaining: decision.remaining });
});
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => console.log(`listening on ${(server.address() as AddressInfo).port}`));
process.on('SIGTERM', () => server.close(() => void limiter.close()));
