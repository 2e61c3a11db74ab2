// Jest for mutating src/config/knobs.ts: only the config tests, which are the ones that load knobs.
import base from './jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  roots: ['<rootDir>/test/unit'],
  testMatch: ['**/config.test.ts'],
};
