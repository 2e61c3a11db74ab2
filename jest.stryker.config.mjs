// Jest as Stryker runs it: the unit tests only. Integration suites start real
// servers and emulators; run once per mutant they would take hours on two cores.
import base from './jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  roots: ['<rootDir>/test/unit'],
};
