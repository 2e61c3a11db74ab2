// The ESM twin of app.cjs.
import express from 'express';
import { createMemoryStore, createRateLimiter, createRedisStore } from 'firelimit';
import { createRateLimitMiddleware } from 'firelimit/express';

const store = process.env.REDIS_URL ? await createRedisStore({ url: process.env.REDIS_URL }) : createMemoryStore();
const limiter = await createRateLimiter({
  store,
  policy: { name: 'per-caller', algorithm: 'sliding-log', limit: Number(process.env.LIMIT ?? 3), windowMs: 60_000 },
});
const app = express();
const limit = createRateLimitMiddleware({ limiter, key: (req) => req.get('x-caller') ?? req.ip ?? 'unknown' });
app.get('/hello', limit, (_req, res) => res.json({ hello: 'world' }));
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => console.log(`listening on ${server.address().port}`));
process.on('SIGTERM', () => server.close(() => void limiter.close()));
