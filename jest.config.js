// Google's client libraries (Firestore through firebase-admin) probe the GCE
// metadata server, a link-local address, when looking for credentials, even
// against an emulator. Tests only ever talk to loopback. Set here, before jest
// starts its workers, so every worker and every process they spawn inherits it.
process.env.METADATA_SERVER_DETECTION ??= 'none';

/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Integration suites start real servers; they share two cores with everything else.
  testTimeout: 60_000,
  // After a run that used node-redis' cluster client (test/integration/redis-cluster.test.ts), a
  // handle stays open and jest never exits: seen on Node 24 in CI (all 3,408 tests passed, then the
  // process sat), and on Node 20 with that file alone. Until that handle is found and closed, exit
  // when the tests are done rather than let CI hang to its time limit.
  forceExit: true,
  transform: {
    '^.+\\.ts$': ['ts-jest', {}],
    // jose ships ES modules only; jest's CommonJS runtime needs them compiled (the service loads them through require(esm)).
    '/node_modules/jose/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true }, isolatedModules: true }],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
};
