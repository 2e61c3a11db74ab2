// Jest for mutating src/config/knobs.ts and limits-file.ts: only the config tests, the ones that load them.
import base from './jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  roots: ['<rootDir>/test/unit'],
  testMatch: ['**/config.test.ts', '**/limits-config.test.ts', '**/limits-file.test.ts', '**/tiers-from-env.test.ts'],
};
