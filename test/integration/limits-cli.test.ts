import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../../src/cli/run-as-main';
import { runLimitsCli } from '../../src/cli/limits-cli';
import { FileTokenStore } from '../../src/tokens/file-token-store';
import { TokenService } from '../../src/tokens/token-service';

const NOW_MS = 1_700_000_000_000;
let dir: string;
let env: NodeJS.ProcessEnv;
let tokenId: string;
let revokedId: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'firelimit-limits-cli-'));
  env = { TOKENS_FILE: path.join(dir, 'tokens.json'), RATE_LIMIT_TIERS: 'pro=600' };
  const store = new FileTokenStore({ path: path.join(dir, 'tokens.json') });
  const service = new TokenService({ store, tiers: ['default', 'pro'] });
  tokenId = (await service.create({ name: 'noisy' })).token.id;
  revokedId = (await service.create({ name: 'gone' })).token.id;
  await service.revoke(revokedId);
  await store.close();
});
afterEach(() => rm(dir, { recursive: true, force: true }));

async function limits(args: string[], nowMs = NOW_MS) {
  let stdout = '';
  let stderr = '';
  const code = await runLimitsCli(args, env, { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } }, { cwd: dir, clock: () => nowMs });
  return { code, stdout, stderr };
}

const overridesFile = () => path.join(dir, 'limit-overrides.json');

describe('limits set / list / unset', () => {
  test('set --token with --json prints one JSON value; list --json shows it; the file sits beside TOKENS_FILE', async () => {
    const set = await limits(['set', '--token', tokenId, '--per-minute', '10', '--algorithm', 'token-bucket', '--burst', '3', '--expires', '24h', '--json']);
    expect(set).toMatchObject({ code: EXIT_OK, stderr: '' });
    expect(set.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(set.stdout)).toEqual({
      override: `token=${tokenId}`,
      target: { tokenId },
      algorithm: 'token-bucket',
      perMinute: 10,
      burst: 3,
      shadow: false,
      setAt: new Date(NOW_MS).toISOString(),
      expiresAt: new Date(NOW_MS + 86_400_000).toISOString(),
    });
    const list = await limits(['list', '--json']);
    expect(JSON.parse(list.stdout).overrides).toHaveLength(1);
    expect(JSON.parse(await readFile(overridesFile(), 'utf8')).overrides[0]).toMatchObject({ id: `token=${tokenId}`, limit: 10 });
  });

  test('set --tier, --tool alone and --token with --tool are three targets; setting one again replaces it', async () => {
    expect((await limits(['set', '--tier', 'pro', '--per-minute', '50'])).code).toBe(EXIT_OK);
    expect((await limits(['set', '--tool', 'whoami', '--per-minute', '5', '--shadow'])).code).toBe(EXIT_OK);
    expect((await limits(['set', '--token', tokenId, '--tool', 'whoami', '--per-minute', '2'])).code).toBe(EXIT_OK);
    expect((await limits(['set', '--token', tokenId, '--tool', 'whoami', '--per-minute', '3'])).code).toBe(EXIT_OK);
    const listed = JSON.parse((await limits(['list', '--json'])).stdout).overrides as { override: string; perMinute: number; shadow: boolean }[];
    expect(listed.map((o) => [o.override, o.perMinute, o.shadow])).toEqual([
      ['tier=pro', 50, false],
      ['tool=whoami', 5, true],
      [`token=${tokenId};tool=whoami`, 3, false],
    ]);
    expect((await limits(['list'])).stdout).toContain('tool=whoami: 5 a minute (fixed-window), shadow');
  });

  test('unset removes one override; unsetting a missing one fails with a clear message', async () => {
    await limits(['set', '--token', tokenId, '--per-minute', '10']);
    expect(await limits(['unset', '--token', tokenId, '--json'])).toMatchObject({ code: EXIT_OK, stdout: `${JSON.stringify({ override: `token=${tokenId}`, removed: true })}\n` });
    expect(await limits(['unset', '--token', tokenId])).toMatchObject({ code: EXIT_FAILURE, stderr: `No override for token=${tokenId}.\n` });
  });

  test('an override with --expires vanishes from list by itself', async () => {
    await limits(['set', '--token', tokenId, '--per-minute', '10', '--expires', '30s']);
    expect(JSON.parse((await limits(['list', '--json'], NOW_MS + 29_999)).stdout).overrides).toHaveLength(1);
    expect(JSON.parse((await limits(['list', '--json'], NOW_MS + 30_000)).stdout).overrides).toEqual([]);
  });

  test.each([
    ['an unknown token', () => ['set', '--token', 'tok_nosuchtoken00000', '--per-minute', '10'], /^No token with id "tok_nosuchtoken00000"/],
    ['a revoked token', () => ['set', '--token', revokedId, '--per-minute', '10'], /is revoked/],
    ['a negative figure', () => ['set', '--token', tokenId, '--per-minute=-5'], /^--per-minute "-5" must be a whole number of at least 1/],
    ['a negative figure as a separate word', () => ['set', '--token', tokenId, '--per-minute', '-5'], /argument is ambiguous|must be a whole number/],
    ['a zero figure', () => ['set', '--token', tokenId, '--per-minute', '0'], /^--per-minute "0" must be a whole number of at least 1/],
    ['an unknown algorithm', () => ['set', '--token', tokenId, '--per-minute', '10', '--algorithm', 'gcra'], /^Unknown algorithm "gcra"; use one of fixed-window/],
    ['a burst on a window', () => ['set', '--token', tokenId, '--per-minute', '10', '--burst', '2'], /^--burst is for token-bucket and leaky-bucket only/],
    ['an unknown tier', () => ['set', '--tier', 'gold', '--per-minute', '10'], /^No tier is named "gold"; tiers: default, pro/],
    ['an unknown tool', () => ['set', '--tool', 'serch', '--per-minute', '10'], /^No tool is named "serch"; tools served: rate_limit_status, whoami/],
    ['a bad expiry', () => ['set', '--token', tokenId, '--per-minute', '10', '--expires', 'tomorrow'], /^--expires "tomorrow" is not a duration/],
    ['token and tier at once', () => ['set', '--token', tokenId, '--tier', 'pro', '--per-minute', '10'], /^Give --token or --tier, not both/],
    ['no figure', () => ['set', '--token', tokenId], /^set needs --per-minute N/],
    ['no target', () => ['set', '--per-minute', '10'], /^set needs --token ID, --tier NAME or --tool NAME/],
    ['an issuer nobody configured', () => ['set', '--issuer', 'https://idp.example', '--subject', 'u1', '--per-minute', '10'], /^No trusted issuer is "https:\/\/idp.example"; none is configured \(AUTH_ISSUERS_FILE, FIREBASE_AUTH_PROJECT_ID\)/],
    ['an issuer without a subject', () => ['set', '--issuer', 'https://idp.example', '--per-minute', '10'], /^--issuer and --subject go together/],
    ['a token and an issuer at once', () => ['set', '--token', tokenId, '--issuer', 'https://idp.example', '--subject', 'u1', '--per-minute', '10'], /^Give --token or --issuer with --subject, not both/],
  ])('%s is a clear error and writes nothing', async (_name, args, message) => {
    const result = await limits(args());
    expect(result.code).toBe(EXIT_USAGE);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
    await expect(readFile(overridesFile(), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('limits set refuses, before writing, what the service could not load', () => {
  test('an expiry past the longest accepted (99999999d once wrote a record that stopped every instance)', async () => {
    const result = await limits(['set', '--token', tokenId, '--per-minute', '5', '--expires', '99999999d']);
    expect(result).toEqual({
      code: EXIT_USAGE,
      stdout: '',
      stderr: expect.stringMatching(/^--expires "99999999d" is longer than the longest accepted, 3650d; leave --expires out for an override that lasts until unset\.\n/),
    });
    await expect(readFile(overridesFile(), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test('the longest expiry is accepted', async () => {
    const result = await limits(['set', '--token', tokenId, '--per-minute', '5', '--expires', '3650d', '--json']);
    expect(result.code).toBe(EXIT_OK);
    expect(JSON.parse(result.stdout).expiresAt).toBe(new Date(NOW_MS + 3650 * 86_400_000).toISOString());
  });

  test('a record the service\'s own check refuses (an expiry no Date can show, from a clock near its end) is named and not written', async () => {
    const result = await limits(['set', '--token', tokenId, '--per-minute', '5', '--expires', '1h'], 8_640_000_000_000_000 - 1000);
    expect(result.code).toBe(EXIT_USAGE);
    expect(result.stderr).toMatch(/^The service could not load this override: expiresAtMs: .*; nothing was written\.\n/);
    await expect(readFile(overridesFile(), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test('a write that would take the file past the size the service reads is refused and writes nothing', async () => {
    const { MAX_OVERRIDES_FILE_BYTES } = await import('../../src/tokens/file-override-store');
    const filler = { id: 'tier=filler', target: { tier: 'filler' }, padding: 'x'.repeat(MAX_OVERRIDES_FILE_BYTES - 200) };
    const text = JSON.stringify({ version: 1, overrides: [filler] });
    await writeFile(overridesFile(), text);
    const result = await limits(['set', '--token', tokenId, '--per-minute', '5']);
    expect(result.code).toBe(EXIT_FAILURE);
    expect(result.stderr).toMatch(new RegExp(`^limits set failed: ${escape(overridesFile())} would be \\d+ bytes, more than the ${MAX_OVERRIDES_FILE_BYTES} bytes the service reads .*nothing was written`));
    expect(await readFile(overridesFile(), 'utf8')).toBe(text);
  });
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

describe('an overrides file the service cannot read, or a record in it, as the command line says it', () => {
  test('a half-written file: set names the file, the line and column, and the remedy, and changes nothing', async () => {
    const text = '{ "version": 1, "overrides": [\n  { "id": "token=tok_x", "target": {';
    await writeFile(overridesFile(), text);
    const result = await limits(['set', '--token', tokenId, '--per-minute', '5']);
    expect(result).toEqual({
      code: EXIT_FAILURE,
      stdout: '',
      stderr: `limits set failed: ${overridesFile()} is not valid JSON: line 2, column 37 (overrides[0].target): the text ends before the JSON does (is the file cut short?); fix it there, or move the file away to start with no overrides (npm run limits -- set writes a new one)\n`,
    });
    expect(await readFile(overridesFile(), 'utf8')).toBe(text);
  });

  test('a record the service skips: list shows the others and names it on stderr; set keeps it; unset of its target removes it', async () => {
    const bad = { id: 'tier=pro', target: { tier: 'pro' }, algorithm: 'fixed-window', limit: 5, windowMs: 60_000, shadow: false, setAtMs: NOW_MS, expiresAtMs: 9e15 };
    await writeFile(overridesFile(), JSON.stringify({ version: 1, overrides: [bad] }));
    expect((await limits(['set', '--token', tokenId, '--per-minute', '5'])).code).toBe(EXIT_OK);
    const listed = await limits(['list', '--json']);
    expect(listed.code).toBe(EXIT_OK);
    expect(JSON.parse(listed.stdout)).toEqual({
      overrides: [expect.objectContaining({ override: `token=${tokenId}` })],
      skipped: [{ where: `${overridesFile()} overrides[1]`, problem: expect.stringContaining('expiresAtMs') }],
    });
    expect(listed.stderr).toMatch(/^Skipped, the service cannot load it: .*overrides\[1\]: expiresAtMs: .*Set it again \(limits set\), remove it \(limits unset\) or correct it there\.\n$/);
    expect(await limits(['unset', '--tier', 'pro'])).toMatchObject({ code: EXIT_OK, stdout: 'Removed the override for tier=pro.\n' });
    expect(JSON.parse(await readFile(overridesFile(), 'utf8')).overrides.map((o: { id: string }) => o.id)).toEqual([`token=${tokenId}`]);
  });
});

describe('limits set --tool in gateway mode', () => {
  test('with UPSTREAM_MCP_URL set, an upstream tool name is accepted, and the output says it was not checked against the upstream', async () => {
    env = { ...env, UPSTREAM_MCP_URL: 'http://127.0.0.1:3000/mcp' };
    const human = await limits(['set', '--tool', 'get-sum', '--per-minute', '5']);
    expect(human).toMatchObject({ code: EXIT_OK, stderr: '' });
    expect(human.stdout).toContain('"get-sum" is taken as an upstream tool (UPSTREAM_MCP_URL is set): this command cannot ask the upstream, so check the name against its tools/list.');
    const json = await limits(['set', '--token', tokenId, '--tool', 'get-sum', '--per-minute', '3', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ override: `token=${tokenId};tool=get-sum`, upstreamTool: true });
    expect((await limits(['set', '--tool', 'whoami', '--per-minute', '3', '--json'])).stdout).not.toContain('upstreamTool');
    expect(await limits(['unset', '--tool', 'get-sum'])).toMatchObject({ code: EXIT_OK });
  });

  test('with UPSTREAM_MCP_URL set, a name that cannot be a tool is still refused', async () => {
    env = { ...env, UPSTREAM_MCP_URL: 'http://127.0.0.1:3000/mcp' };
    const result = await limits(['set', '--tool', 'has space', '--per-minute', '5']);
    expect(result.code).toBe(EXIT_USAGE);
    expect(result.stderr).toMatch(/^--tool "has space" is not a tool name \(1-128 of A-Z a-z 0-9 _ - \.\)\./);
  });

  test('without it, an unknown tool says how to name an upstream one', async () => {
    const result = await limits(['set', '--tool', 'get-sum', '--per-minute', '5']);
    expect(result.stderr).toMatch(/^No tool is named "get-sum"; tools served: rate_limit_status, whoami\. For an upstream tool \(a gateway\), run this with UPSTREAM_MCP_URL set as the service has it\./);
  });

  test('a LIMITS_FILE with an upstream section does not need UPSTREAM_MCP_URL to run the command', async () => {
    const limitsFile = path.join(dir, 'limits.json');
    await writeFile(limitsFile, JSON.stringify({ upstream: { tools: { 'get-sum': { rate: '2/s' } } } }));
    env = { ...env, LIMITS_FILE: limitsFile };
    expect(await limits(['list'])).toMatchObject({ code: EXIT_OK, stdout: 'No limit overrides in force.\n' });
  });
});
