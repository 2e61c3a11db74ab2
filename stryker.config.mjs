// Mutation testing of the pure core and the HTTP helpers: `npm run mutate`.
// How to run it, what it covers and the scores: docs/testing.md.

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'jest',
  jest: {
    projectType: 'custom',
    // test/unit only: integration suites start servers and emulators.
    configFile: 'jest.stryker.config.mjs',
    // Each mutant runs only the test files that import its source file.
    enableFindRelatedTests: true,
  },
  coverageAnalysis: 'perTest',
  // A static mutant (module-level code, e.g. knobs.ts's schemas) re-runs every unit test; here they were 7 %
  // of the mutants and 63 % of the time. This run skips them; stryker.knobs.config.mjs measures knobs.ts with
  // its static mutants, running only its own tests: `npm run mutate:knobs`.
  ignoreStatic: true,
  // The typescript checker is off by default: it type-checks the whole program
  // (src, test and bench) and took a 34-mutant file from ~15 s to 6 min on our
  // two shared cores. Without it a mutant that would not compile still runs
  // (ts-jest only transpiles) and is killed or survives on behaviour.
  // Opt in with `npm run mutate -- --checkers typescript`.
  checkers: [],
  tsconfigFile: 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  mutate: [
    // The algorithms (what was src/library/window/): the rest of window/ is listed below by name.
    'src/library/window/{algorithm,algorithms,fixed-window,sliding-window,sliding-log,token-bucket,leaky-bucket}.ts',
    'src/policies/*.ts',
    'src/library/schedule/*.ts',
    'src/library/window/decide-set.ts',
    'src/library/limiter/refusal-cache.ts',
    'src/library/window/policy-choice.ts',
    'src/library/window/describe-policy.ts',
    'src/library/limiter/outage-guard.ts',
    'src/library/limiter/outage-ledger.ts',
    'src/library/limiter/rate-limiter.ts',
    'src/library/limiter/outage-fallback.ts',
    'src/library/window/key.ts',
    'src/library/window/policy.ts',
    'src/library/memory/memory-store.ts',
    'src/library/quota/upstream-guarded-store.ts',
    'src/library/express/rate-limit-headers.ts',
    'src/library/express/rate-limit-middleware.ts',
    'src/http/client-address.ts',
    'src/http/host-validation.ts',
    'src/http/response-head-hook.ts',
    'src/library/express/json-rpc-error.ts',
    'src/http/json-structure-scan.ts',
    'src/library/express/refusal-body.ts',
    'src/config/tiers-from-env.ts',
    'src/config/upstream-section.ts',
    'src/config/upstream-rate.ts',
    'src/gateway/upstream-quota-gate.ts',
    'src/library/limiter/contention.ts',
    'src/library/limiter/wait-budget.ts',
    'src/library/support/rendezvous.ts',
    'src/http/sign-in-budget.ts',
    'src/shared/strict-json.ts',
    'src/mcp/retry-words.ts',
    'src/gateway/reservation-id.ts',
    'src/library/limiter/sharded-guard.ts',
    'src/library/backends/rtdb/rtdb-sweep-lease.ts',
    'src/library/backends/redis/cluster-slot.ts',
    'src/library/support/load-peer.ts',
    'src/library/express/mcp-refusal-writer.ts',
    'src/library/schedule/upstream-view.ts',
    // ADR 0066 and 0067 (upstream-outage-share.ts is in the schedule/ glob above).
    'src/library/window/hot-key-lease.ts',
    'src/library/limiter/outage-share.ts',
    'src/library/limiter/fleet-estimate.ts',
  ],
  // The machine is shared; raise with `--concurrency 2` when it is not.
  concurrency: 1,
  timeoutMS: 10_000,
  thresholds: { high: 90, low: 85, break: 85 },
  reporters: ['clear-text', 'html', 'progress'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  clearTextReporter: { allowColor: false, logTests: false },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
};
