import { loadConfig } from '../../src/config/config';
import { startupBanner } from '../../src/service/startup-banner';

const hotKeysLine = (env: NodeJS.ProcessEnv): string | undefined =>
  startupBanner(loadConfig(env, { cwd: '/srv' }), 'http://127.0.0.1:8080', { existing: 1 }).find((line) => line.trim().startsWith('Hot keys:'));

describe('the startup banner says whether hot keys lease', () => {
  const redis = { RATE_LIMIT_BACKEND: 'redis', REDIS_URL: 'redis://127.0.0.1:6379' };

  it.each([
    { name: 'the thresholds, on a shared backend by default', env: redis, want: 'leased from 200/s per instance, up to 100 units (fixed windows)' },
    { name: 'off when RATE_LIMIT_HOT_KEYS=off', env: { ...redis, RATE_LIMIT_HOT_KEYS: 'off' }, want: 'off' },
    { name: 'off on the memory backend', env: {}, want: 'off (memory backend)' },
  ])('$name', ({ env, want }) => {
    expect(hotKeysLine(env)?.replace(/^\s*Hot keys:\s*/, '')).toBe(want);
  });
});
