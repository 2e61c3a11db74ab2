import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../../src/cli/run-as-main';
import { runTokenCli } from '../../src/cli/token-cli';
import { CachedTokenVerifier } from '../../src/tokens/cached-token-verifier';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { hashSecret } from '../../src/tokens/token-secret';
import { startFirestoreTestServer, TEST_PROJECT_ID, type FirestoreTestServer } from '../support/firestore-server';

const repoRoot = path.resolve(__dirname, '..', '..');

let dir: string;
let env: NodeJS.ProcessEnv;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-cli-'));
  env = { TOKENS_FILE: path.join(dir, 'tokens.json'), RATE_LIMIT_TIERS: 'pro=600' };
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function cli(args: string[], extraEnv: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runTokenCli(args, { ...env, ...extraEnv }, { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } }, { cwd: dir });
  return { code, stdout, stderr };
}

describe('token create', () => {
  it('with --json prints exactly one JSON object holding the secret, and the store holds only its hash', async () => {
    const { code, stdout, stderr } = await cli(['create', '--name', 'ci bot', '--tier', 'pro', '--scopes', 'mcp,reports', '--json']);
    expect(code).toBe(EXIT_OK);
    expect(stderr).toBe('');
    expect(stdout.trim().split('\n')).toHaveLength(1);
    const created = JSON.parse(stdout);
    expect(Object.keys(created).sort()).toEqual(['createdAt', 'id', 'name', 'scopes', 'tier', 'token']);
    expect(created).toMatchObject({ name: 'ci bot', tier: 'pro', scopes: ['mcp', 'reports'] });
    expect(created.id).toMatch(/^tok_/);
    expect(created.token).toMatch(/^flk_/);
    const file = await readFile(env.TOKENS_FILE as string, 'utf8');
    expect(file).toContain(hashSecret(created.token));
    expect(file).not.toContain(created.token);
  });

  it('prints the secret once with a warning that it will not be shown again, and the token verifies', async () => {
    const { code, stdout } = await cli(['create', '--name', 'laptop']);
    expect(code).toBe(EXIT_OK);
    const secrets = stdout.match(/flk_[A-Za-z0-9_-]{43}/g) ?? [];
    expect(secrets).toHaveLength(1);
    expect(stdout).toMatch(/shown once/i);
    const verifier = new CachedTokenVerifier({ store: new FileTokenStore({ path: env.TOKENS_FILE as string }) });
    expect(await verifier.verify(secrets[0] as string)).toMatchObject({ name: 'laptop', tier: 'default', scopes: ['mcp'] });
  });

  it('refuses an unknown tier, naming the configured tiers, and creates nothing', async () => {
    const { code, stderr, stdout } = await cli(['create', '--name', 'x', '--tier', 'gold']);
    expect(code).toBe(EXIT_USAGE);
    expect(stderr).toContain('gold');
    expect(stderr).toContain('default, pro');
    expect(stdout).toBe('');
    expect((await cli(['list', '--json'])).stdout).toBe('{"tokens":[]}\n');
  });

  it.each([
    ['no command', []],
    ['an unknown command', ['mint']],
    ['create without --name', ['create']],
    ['an unknown flag', ['create', '--name', 'x', '--colour', 'red']],
    ['revoke without an id', ['revoke']],
    ['list with an argument', ['list', 'extra']],
    ['a flag another command takes', ['list', '--name', 'x']],
    ['a bad scope', ['create', '--name', 'x', '--scopes', 'has space']],
  ])('answers %s with usage on stderr and exit 2', async (_name, args) => {
    const { code, stdout, stderr } = await cli(args);
    expect(code).toBe(EXIT_USAGE);
    expect(stdout).toBe('');
    expect(stderr.length).toBeGreaterThan(0);
  });

  it('runs without the gateway\'s or the backend\'s configuration: a LIMITS_FILE with an upstream section, no UPSTREAM_MCP_URL, a redis backend without a URL', async () => {
    const limitsFile = path.join(dir, 'limits.json');
    await writeFile(limitsFile, JSON.stringify({ tiers: { gold: { limits: [{ limit: 5, window: '1m' }] } }, upstream: { tools: { search: { rate: '2/s' } } } }));
    const created = await cli(['create', '--name', 'laptop', '--tier', 'gold', '--json'], { LIMITS_FILE: limitsFile, RATE_LIMIT_BACKEND: 'redis', UPSTREAM_MCP_AUTHORIZATION_FILE: path.join(dir, 'missing-secret') });
    expect(created).toMatchObject({ code: EXIT_OK, stderr: '' });
    expect(JSON.parse(created.stdout)).toMatchObject({ tier: 'gold' });
  });

  it('still refuses a LIMITS_FILE it reads: its tiers name what --tier may be', async () => {
    const limitsFile = path.join(dir, 'limits.json');
    await writeFile(limitsFile, '{ "tiers": { "gold": { "limits": [{ "limit": 5, "window": "1m" }] }, "gold": { "limits": [{ "limit": 9, "window": "1m" }] } } }');
    const { code, stderr } = await cli(['list'], { LIMITS_FILE: limitsFile });
    expect(code).toBe(EXIT_FAILURE);
    expect(stderr).toContain('LIMITS_FILE: the file is not valid JSON: line 1, column 70 (tiers): "gold" is given twice in one object');
  });

  it('names the bad knob when the configuration is invalid', async () => {
    const { code, stderr } = await cli(['list'], { TOKEN_STORE: 'postgres' });
    expect(code).toBe(EXIT_FAILURE);
    expect(stderr).toContain('TOKEN_STORE');
  });
});

describe('token list and revoke', () => {
  it('lists tokens without secrets or hashes, and revoke marks one revoked', async () => {
    const a = JSON.parse((await cli(['create', '--name', 'a', '--json'])).stdout);
    const b = JSON.parse((await cli(['create', '--name', 'b', '--json'])).stdout);

    const revoked = await cli(['revoke', a.id, '--json']);
    expect(revoked.code).toBe(EXIT_OK);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ id: a.id, revoked: true });

    const listed = await cli(['list', '--json']);
    const { tokens } = JSON.parse(listed.stdout);
    expect(tokens.map((t: { id: string }) => t.id)).toEqual([a.id, b.id]);
    expect(tokens[0].revokedAt).toEqual(expect.any(String));
    expect(tokens[1].revokedAt).toBeNull();

    const human = await cli(['list']);
    for (const output of [listed.stdout, human.stdout]) {
      for (const secret of [a.token, b.token]) {
        expect(output).not.toContain(secret);
        expect(output).not.toContain(hashSecret(secret));
      }
    }
    expect(human.stdout).toMatch(new RegExp(`${a.id}.*revoked`));
    expect(human.stdout).toMatch(new RegExp(`${b.id}.*active`));
  });

  it('revoking an unknown id fails with exit 1 and says so', async () => {
    const { code, stderr, stdout } = await cli(['revoke', 'tok_doesnotexist0000', '--json']);
    expect(code).toBe(EXIT_FAILURE);
    expect(stderr).toContain('tok_doesnotexist0000');
    expect(JSON.parse(stdout)).toEqual({ id: 'tok_doesnotexist0000', revoked: false, error: 'not_found' });
  });

  it('update changes the tier and scopes', async () => {
    const a = JSON.parse((await cli(['create', '--name', 'a', '--json'])).stdout);
    const { code, stdout } = await cli(['update', a.id, '--tier', 'pro', '--scopes', 'mcp,x', '--json']);
    expect(code).toBe(EXIT_OK);
    expect(JSON.parse(stdout)).toMatchObject({ id: a.id, tier: 'pro', scopes: ['mcp', 'x'], updated: true });
  });
});

describe('token CLI on the Firestore store', () => {
  let server: FirestoreTestServer;
  beforeAll(async () => {
    server = await startFirestoreTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('creates, lists and revokes with TOKEN_STORE=firestore', async () => {
    const fsEnv = { TOKEN_STORE: 'firestore', GOOGLE_CLOUD_PROJECT: TEST_PROJECT_ID, FIRESTORE_EMULATOR_HOST: server.host };
    const created = await cli(['create', '--name', 'fs', '--json'], fsEnv);
    expect(created.code).toBe(EXIT_OK);
    const { id } = JSON.parse(created.stdout);
    const listed = JSON.parse((await cli(['list', '--json'], fsEnv)).stdout);
    expect(listed.tokens.map((t: { id: string }) => t.id)).toContain(id);
    expect((await cli(['revoke', id], fsEnv)).code).toBe(EXIT_OK);
  });
});

describe('token CLI as a real process', () => {
  it('create --json prints one JSON object on stdout and exits 0', async () => {
    const { stdout } = await promisify(execFile)(
      path.join(repoRoot, 'node_modules', '.bin', 'tsx'),
      [path.join(repoRoot, 'src', 'cli', 'token-cli.ts'), 'create', '--json', '--name', 'subprocess'],
      { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME, TOKENS_FILE: 'nested/tokens.json' }, timeout: 60_000 },
    );
    const created = JSON.parse(stdout);
    expect(created).toMatchObject({ name: 'subprocess', tier: 'default', scopes: ['mcp'] });
    // TOKENS_FILE resolves against the working directory, where the server would look too.
    const store = new FileTokenStore({ path: path.join(dir, 'nested', 'tokens.json') });
    expect(await store.get(created.id)).toMatchObject({ name: 'subprocess', secretHash: hashSecret(created.token) });
  });
});

describe('token CLI through npm, as the README tells scripts to call it', () => {
  it('npm run --silent token -- create --json prints one JSON object on stdout and nothing else', async () => {
    const tokensFile = path.join(dir, 'tokens.json');
    const { stdout } = await promisify(execFile)('npm', ['run', '--silent', 'token', '--', 'create', '--name', 'via npm', '--json'], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TOKENS_FILE: tokensFile },
      timeout: 60_000,
    });
    expect(stdout.endsWith('}\n')).toBe(true);
    const created = JSON.parse(stdout);
    expect(created).toMatchObject({ name: 'via npm', tier: 'default' });
    expect(await new FileTokenStore({ path: tokensFile }).get(created.id)).toMatchObject({ secretHash: hashSecret(created.token) });
  });
});
