import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layering (docs/adr/0011-layering.md): each folder of src/ may import
 * only the folders listed for it. Lower layers never import higher ones, so
 * the pure core stays free of adapters and the wiring stays in service/.
 * library/ is the package `firelimit` (docs/adr/0059-the-library-and-its-entries.md):
 * it imports only shared/, and everything else reaches it only through its
 * entries (library/index.ts, library/express, library/quota).
 */
const LAYERS = {
  shared: [],
  library: ['shared'],
  policies: ['shared', 'library'],
  config: ['shared', 'library', 'policies'],
  tokens: ['shared', 'library', 'policies', 'config'],
  http: ['shared', 'library', 'policies', 'config', 'tokens'],
  gateway: ['shared', 'library', 'config'],
  mcp: ['shared', 'library', 'policies', 'config', 'tokens', 'http', 'gateway'],
  logging: ['shared', 'library', 'config', 'http'],
  metrics: ['shared', 'library', 'policies', 'http', 'gateway'],
  developers: ['shared', 'library', 'policies', 'config', 'http'],
  cli: ['shared', 'library', 'policies', 'config', 'tokens', 'service'],
  service: ['shared', 'library', 'policies', 'config', 'tokens', 'http', 'mcp', 'logging', 'metrics', 'developers', 'gateway'],
};
/** Adapters beside http/ read what the pipeline leaves (request-locals, refusal bodies), never a middleware itself. */
const NO_MIDDLEWARE = ['mcp', 'logging', 'developers', 'metrics'];
/** The library's entries, as `exports` in package.json names them: `firelimit`, `firelimit/express`, `firelimit/quota`, `firelimit/mcp`. */
const LIBRARY_ENTRY = { regex: '^(\\.\\./)+library/(?!(express|quota|mcp)$).*$', message: 'import the library only through its entries: ../library, ../library/express, ../library/quota, ../library/mcp (src/library/index.ts says why)' };
/** What only the service installs: the library (and so the package a user installs) must never load it. */
const SERVICE_ONLY = ['@google-cloud/logging', '@modelcontextprotocol/*', 'prom-client', 'zod', 'jose', 'undici', 'firebase-admin/app'];

const layerPatterns = (folder) => {
  const allowed = LAYERS[folder];
  const forbidden = Object.keys(LAYERS).filter((other) => other !== folder && !allowed.includes(other));
  const patterns = [
    { group: forbidden.flatMap((f) => [`../${f}/*`, `../../${f}/*`, `../../../${f}/*`, `../../../../${f}/*`]), message: `src/${folder} may import only ${allowed.length ? allowed.join(', ') : 'nothing else in src'} (docs/adr/0011-layering.md)` },
  ];
  if (folder !== 'library' && allowed.includes('library')) patterns.push(LIBRARY_ENTRY);
  if (NO_MIDDLEWARE.includes(folder)) {
    patterns.push({ group: ['../http/*-middleware', '../../http/*-middleware'], message: 'read request locals and refusal bodies from their own modules, not from a middleware file' });
  }
  return patterns;
};
const restrict = (files, patterns) => ({ files, rules: { 'no-restricted-imports': ['error', { patterns }] } });
const layering = Object.keys(LAYERS).map((folder) => restrict([`src/${folder}/**/*.ts`], layerPatterns(folder)));

/**
 * Inside the library, by role (ADR 0059): window/ is the pure decision core
 * and schedule/ the upstream scheduler's; neither touches a store, a backend
 * client or Express. Only backends/redis loads `redis`; nothing in the library
 * loads what only the service installs; only express/ knows Express.
 */
const libraryBase = [
  ...layerPatterns('library'),
  { group: SERVICE_ONLY, message: 'the library must not load a service-only dependency: a user installing firelimit does not have it' },
];
/** A bare package name: a gitignore-style group would also match a relative path with that folder in it. */
const pkg = (name, message) => ({ regex: `^${name}$`, message });
const PURE_CORE_BANS = ['../memory/*', '../backends/*', '../backends/**', '../quota/*', '../express/*', '../support/*', 'firebase-admin', 'firebase-admin/*'];
const REDIS_ONLY_THERE = pkg('redis', 'only src/library/backends/redis loads redis');
const EXPRESS_ONLY_THERE = pkg('express', 'only src/library/express knows Express');
const libraryRoles = [
  restrict(['src/library/**/*.ts'], [...libraryBase, REDIS_ONLY_THERE, EXPRESS_ONLY_THERE]),
  restrict(['src/library/backends/redis/**/*.ts'], [...libraryBase, EXPRESS_ONLY_THERE]),
  restrict(['src/library/express/**/*.ts'], [...libraryBase, REDIS_ONLY_THERE, { group: ['../backends/*', '../backends/**'], message: 'the middleware works on any store; it never reaches into one' }]),
  restrict(['src/library/window/**/*.ts'], [...libraryBase, REDIS_ONLY_THERE, EXPRESS_ONLY_THERE, { group: [...PURE_CORE_BANS, '../limiter/*', '../schedule/*'], message: 'src/library/window is the pure decision core: it imports nothing of the library but itself' }]),
  restrict(['src/library/schedule/**/*.ts'], [...libraryBase, REDIS_ONLY_THERE, EXPRESS_ONLY_THERE, { group: PURE_CORE_BANS, message: 'src/library/schedule is the pure core of the upstream quota: stores import it, it imports no store or backend client (docs/adr/0031-upstream-quota-cursor.md)' }]),
];

export default tseslint.config(
  { ignores: ['dist/', 'packages/*/dist/', 'node_modules/', 'coverage/', '.firelimit/', '.stryker-tmp/', 'reports/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', require: 'readonly', module: 'writable', __dirname: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // The decision core must stay clock-free: time is injected.
      'no-restricted-properties': 'off',
    },
  },
  {
    files: ['src/library/window/**/*.ts', 'src/library/schedule/**/*.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'decisions take nowMs; never read the clock here' }],
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date']", message: 'decisions take nowMs; never read the clock here' }],
    },
  },
  ...layering,
  ...libraryRoles,
  // The CommonJS example is what a CommonJS user writes.
  { files: ['examples/**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
