// Mutation testing of src/config/knobs.ts, static mutants included: `npm run mutate:knobs`.
// Its code is module-level (the knob schemas), so every mutant is static and re-runs every test in its
// jest config; that config runs only test/unit/config.test.ts, where each knob's parsing is tested.
import base from './stryker.config.mjs';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  ...base,
  jest: { ...base.jest, configFile: 'jest.stryker-knobs.config.mjs', enableFindRelatedTests: false },
  ignoreStatic: false,
  mutate: ['src/config/knobs.ts'],
  htmlReporter: { fileName: 'reports/mutation/knobs.html' },
};
