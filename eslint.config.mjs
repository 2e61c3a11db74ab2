import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layering (docs/adr/0011-layering.md): each folder of src/ may import
 * only the folders listed for it. Lower layers never import higher ones, so
 * the pure core stays free of adapters and the wiring stays in service/.
 */
const LAYERS = {
  shared: [],
  limiter: ['shared'],
  policies: ['shared', 'limiter'],
  config: ['shared', 'limiter', 'policies'],
  tokens: ['shared', 'limiter', 'policies', 'config'],
  http: ['shared', 'limiter', 'policies', 'config', 'tokens'],
  gateway: ['shared', 'limiter', 'config'],
  mcp: ['shared', 'limiter', 'policies', 'config', 'tokens', 'http', 'gateway'],
  logging: ['shared', 'limiter', 'config', 'http'],
  metrics: ['shared', 'limiter', 'policies', 'http', 'gateway'],
  developers: ['shared', 'limiter', 'policies', 'config', 'http'],
  cli: ['shared', 'limiter', 'policies', 'config', 'tokens', 'service'],
  service: ['shared', 'limiter', 'policies', 'config', 'tokens', 'http', 'mcp', 'logging', 'metrics', 'developers', 'gateway'],
};
/** Adapters beside http/ read what the pipeline leaves (request-locals, refusal bodies), never a middleware itself. */
const NO_MIDDLEWARE = ['mcp', 'logging', 'developers', 'metrics'];

const layering = Object.entries(LAYERS).map(([folder, allowed]) => {
  const forbidden = Object.keys(LAYERS).filter((other) => other !== folder && !allowed.includes(other));
  const patterns = [
    { group: forbidden.flatMap((f) => [`../${f}/*`, `../../${f}/*`, `../../../${f}/*`]), message: `src/${folder} may import only ${allowed.length ? allowed.join(', ') : 'nothing else in src'} (docs/adr/0011-layering.md)` },
  ];
  if (NO_MIDDLEWARE.includes(folder)) {
    patterns.push({ group: ['../http/*-middleware', '../../http/*-middleware'], message: 'read request locals and refusal bodies from their own modules, not from a middleware file' });
  }
  return { files: [`src/${folder}/**/*.ts`], rules: { 'no-restricted-imports': ['error', { patterns }] } };
});

/**
 * The upstream quota's pure core (src/limiter/upstream/) is the scheduler, its
 * policy, state and port: the stores import it, never the other way round, and
 * it touches no backend client (docs/adr/0031-upstream-quota-cursor.md).
 */
const upstreamCore = {
  files: ['src/limiter/upstream/**/*.ts'],
  rules: {
    'no-restricted-imports': ['error', { patterns: [
      ...layering.find((entry) => entry.files[0] === 'src/limiter/**/*.ts').rules['no-restricted-imports'][1].patterns,
      { group: ['../stores/*', '../stores/**', 'firebase-admin', 'firebase-admin/*', 'redis'], message: 'src/limiter/upstream is the pure core of the upstream quota: stores import it, it imports no store or backend client' },
    ] }],
  },
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.firelimit/', '.stryker-tmp/', 'reports/'] },
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
    files: ['src/limiter/algorithms/**/*.ts', 'src/limiter/upstream/**/*.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'decisions take nowMs; never read the clock here' }],
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date']", message: 'decisions take nowMs; never read the clock here' }],
    },
  },
  ...layering,
  upstreamCore,
);
