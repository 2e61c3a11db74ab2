// A route limited per caller, shared across instances on Redis (memory when REDIS_URL is unset).
// CommonJS; app.mjs is the same in ESM, app.ts in TypeScript. PORT=0 picks a free port.
const express = require('express');
const { createMemoryStore, createRateLimiter, createRedisStore } = require('firelimit');
const { createRateLimitMiddleware } = require('firelimit/express');

async function main() {
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
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
