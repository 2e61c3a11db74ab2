// Mutation testing of the config files whose messages live in module-level zod schemas, static mutants
// included: `npm run mutate:knobs`. src/config/knobs.ts is nearly all schemas; src/config/limits-file.ts's
// schemas carry every LIMITS_FILE message (the main config's ignoreStatic would skip 48 of its 159 mutants).
// A static mutant re-runs every test in the jest config, so that config runs only the tests that load
// these files: test/unit/config.test.ts, limits-config.test.ts, limits-file.test.ts, tiers-from-env.test.ts.
import base from './stryker.config.mjs';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  ...base,
  jest: { ...base.jest, configFile: 'jest.stryker-knobs.config.mjs', enableFindRelatedTests: false },
  ignoreStatic: false,
  mutate: ['src/config/knobs.ts', 'src/config/limits-file.ts'],
  htmlReporter: { fileName: 'reports/mutation/knobs.html' },
};
