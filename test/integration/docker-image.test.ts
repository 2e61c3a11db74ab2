import { execFile, spawn } from 'node:child_process';
import { chmod, chown, cp, mkdir, mkdtemp, readFile, rm, stat, symlink } from 'node:fs/promises';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * There is no Docker engine here, so this test repeats the image's steps from
 * the Dockerfile itself: each stage gets a temp dir standing for its WORKDIR,
 * COPY copies from the repo (through .dockerignore) or from another stage's
 * dir, RUN runs the commands it knows, and the runtime stage's CMD is started
 * with the stage's ENV. What the runtime stage does not COPY is not there, so
 * a file the service needs but the image does not ship fails here. The dirs
 * live under the OS temp dir, outside the repo, so Node cannot find the repo's
 * node_modules by walking up.
 */

const REPO = path.resolve(__dirname, '../..');
const run = promisify(execFile);

interface Instruction {
  readonly op: string;
  readonly args: string;
}

interface Stage {
  readonly name: string;
  readonly base: string;
  readonly steps: Instruction[];
}

/** Instructions per stage, with comments, parser directives and line continuations resolved. */
function parseDockerfile(text: string): Stage[] {
  const logical = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, op = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (op.toUpperCase() === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      stages.push({ base: m?.[1] ?? args, name: m?.[2] ?? String(stages.length), steps: [] });
    } else {
      stages.at(-1)?.steps.push({ op: op.toUpperCase(), args });
    }
  }
  return stages;
}

/** .dockerignore as Docker reads it: the last matching pattern wins, `!` re-includes, a matched directory excludes its contents. */
function dockerignore(text: string): (relPath: string) => boolean {
  const rules = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#')).map((l) => {
    const negate = l.startsWith('!');
    const pattern = path.posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, ''));
    const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*\*/g, '\0').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]').replace(/\0/g, '.*');
    return { negate, re: new RegExp(`^${source}$`) };
  });
  return (relPath) => {
    const parts = relPath.split('/');
    const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let excluded = false;
    for (const rule of rules) if (prefixes.some((p) => rule.re.test(p))) excluded = !rule.negate;
    return excluded;
  };
}

interface Emulated {
  /** Stands for the stage's WORKDIR. */
  readonly dir: string;
  readonly workdir: string;
  readonly env: Record<string, string>;
  readonly user?: string;
  readonly cmd?: string[];
}

/** Variables a child needs to reach the registry and its cache from here; nothing else leaks in from jest's environment. */
function hostEnv(): Record<string, string> {
  const keep = /^(PATH|HOME|TMPDIR|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|(HTTPS?|NO)_PROXY|npm_config_(registry|cache|userconfig))$/i;
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => keep.test(e[0]) && e[1] !== undefined));
}

/** An image path as a local one: the WORKDIR and below map to the stage's dir; nothing else is emulated. */
function local(stage: { dir: string; workdir: string }, imagePath: string): string {
  const rel = path.posix.relative(stage.workdir, path.posix.resolve(stage.workdir, imagePath));
  if (rel.startsWith('..')) throw new Error(`${imagePath} is outside WORKDIR ${stage.workdir}; extend the emulation`);
  return path.join(stage.dir, rel);
}

/**
 * One stage, step by step. Stages start together, as BuildKit starts them: a
 * COPY --from waits for that stage alone, so the runtime's `npm ci` runs
 * while the build stage compiles.
 */
async function emulateStage(stage: Stage, root: string, stages: Map<string, Promise<Emulated>>, ignored: (rel: string) => boolean): Promise<Emulated> {
  const dir = path.join(root, stage.name);
  await mkdir(dir, { recursive: true });
  const env: Record<string, string> = {};
  let workdir: string | undefined;
  let user: string | undefined;
  let cmd: string[] | undefined;
  const here = () => ({ dir, workdir: workdir ?? '/' });
  for (const { op, args } of stage.steps) {
    switch (op) {
      case 'WORKDIR':
        if (workdir !== undefined) throw new Error(`stage ${stage.name}: a second WORKDIR is not emulated`);
        workdir = path.posix.resolve('/', args);
        break;
      case 'ENV':
        for (const m of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) env[m[1] as string] = (m[2] as string).replace(/^"|"$/g, '');
        break;
      case 'USER':
        user = args;
        break;
      case 'CMD':
        cmd = JSON.parse(args) as string[]; // exec form: the only form in which SIGTERM reaches node itself
        break;
      case 'EXPOSE':
        break;
      case 'COPY': {
        const words = args.split(/\s+/);
        const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
        const paths = words.filter((w) => !w.startsWith('--'));
        const dest = paths.pop() as string;
        const other = from === undefined ? undefined : await stages.get(from);
        if (from !== undefined && other === undefined) throw new Error(`COPY --from=${from}: no stage of that name`);
        for (const source of paths) {
          if (other !== undefined) {
            await copyInto(local(other, source), local(here(), dest), dest);
          } else {
            if (ignored(path.posix.normalize(source))) throw new Error(`COPY ${source}: excluded by .dockerignore`);
            const keep = (abs: string) => !ignored(path.relative(REPO, abs).split(path.sep).join('/'));
            await copyInto(path.join(REPO, source), local(here(), dest), dest, keep);
          }
        }
        break;
      }
      case 'RUN':
        for (const command of args.split('&&').map((c) => c.trim())) await emulateRun(command, local(here(), '.'), env);
        break;
      default:
        throw new Error(`Dockerfile instruction ${op} is not emulated; extend docker-image.test.ts`);
    }
  }
  return { ...here(), env, user, cmd };
}

/** Docker's COPY: a directory's contents go into dest; a file goes into dest/ or becomes dest. */
async function copyInto(source: string, target: string, dest: string, filter?: (abs: string) => boolean): Promise<void> {
  const isDir = (await stat(source)).isDirectory();
  const into = isDir || dest.endsWith('/') || dest === '.' ? target : path.dirname(target);
  const to = isDir ? target : dest.endsWith('/') || dest === '.' ? path.join(into, path.basename(source)) : target;
  await mkdir(into, { recursive: true });
  await cp(source, to, { recursive: true, filter });
}

async function emulateRun(command: string, cwd: string, stageEnv: Record<string, string>): Promise<void> {
  const argv = command.split(/\s+/);
  const env = { ...hostEnv(), ...stageEnv };
  if (argv[0] === 'npm' && argv[1] === 'ci' && !argv.includes('--omit=dev')) {
    // Instead of the build stage's full `npm ci`: the repo's installed node_modules, linked. Same lockfile, minutes saved.
    await symlink(path.join(REPO, 'node_modules'), path.join(cwd, 'node_modules'), 'dir');
  } else if (argv[0] === 'npm' && argv[1] === 'ci') {
    // The real production install; --prefer-offline lets the local npm cache answer what it can.
    await run('npm', [...argv.slice(1), '--prefer-offline'], { cwd, env, maxBuffer: 16 << 20 });
  } else if (argv[0] === 'npm' && argv[1] === 'cache') {
    // `npm cache clean` only shrinks the image layer; nothing to check here.
  } else if (argv[0] === 'mkdir' && argv[1] === '-p' && argv.length === 3) {
    await mkdir(path.join(cwd, argv[2] as string), { recursive: true });
  } else if (argv[0] === 'chown' && argv[1] === 'node:node' && argv.length === 3) {
    // uid/gid 1000 is `node` in the official node images; only root can chown (as in the build).
    if (process.getuid?.() === 0) await chown(path.join(cwd, argv[2] as string), 1000, 1000);
  } else if (argv[0] === 'npm' && argv[1] === 'run') {
    await run('npm', argv.slice(1), { cwd, env, maxBuffer: 16 << 20 });
  } else {
    throw new Error(`RUN ${command}: not emulated; extend docker-image.test.ts`);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function request(port: number, method: string, urlPath: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status?: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the Docker image, emulated step by step from the Dockerfile', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'firelimit-image-'));
    await chmod(root, 0o755); // the runtime user must be able to reach its files, as in the image
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  test('builds, runs as USER node with production dependencies only, answers /healthz and a tool call, and exits 0 on SIGTERM', async () => {
    const stages = parseDockerfile(await readFile(path.join(REPO, 'Dockerfile'), 'utf8'));
    const ignored = dockerignore(await readFile(path.join(REPO, '.dockerignore'), 'utf8').catch(() => ''));
    const runtimeStage = stages.at(-1) as Stage;
    expect(runtimeStage.steps.filter((s) => s.op === 'USER').at(-1)?.args).toBe('node');

    const emulated = new Map<string, Promise<Emulated>>();
    for (const stage of stages) emulated.set(stage.name, emulateStage(stage, root, emulated, ignored));
    // Every stage must succeed, as in `docker build`, not only the ones the runtime copies from.
    const [image] = await Promise.all([emulated.get(runtimeStage.name) as Promise<Emulated>, ...emulated.values()]);
    expect(image.user).toBe('node');

    expect(image.env.NODE_ENV).toBe('production');
    expect(image.cmd).toEqual(['node', 'dist/src/server.js']);
    const cliPath = path.join(image.dir, 'dist/src/cli/token-cli.js');
    await expect(stat(cliPath).then(() => true, () => false)).resolves.toBe(true);
    // Only production dependencies: the dev toolchain must not be what makes the service start.
    await expect(stat(path.join(image.dir, 'node_modules/typescript')).then(() => true, () => false)).resolves.toBe(false);
    await expect(stat(path.join(image.dir, 'node_modules/tsx')).then(() => true, () => false)).resolves.toBe(false);

    // USER node (uid 1000 in the node images): when this test runs as root, drop to it as the container would.
    const asNode = process.getuid?.() === 0 ? { uid: 1000, gid: 1000 } : {};
    const data = path.join(root, 'data');
    await mkdir(data);
    if ('uid' in asNode) await chown(data, 1000, 1000);
    const port = await freePort();
    // TOKENS_FILE left at its default: the image must make .firelimit/ writable for USER node.
    const env = { PATH: process.env.PATH ?? '', HOME: data, ...image.env, PORT: String(port) };

    const created = await run(process.execPath, [cliPath, 'create', '--name', 'docker-test', '--json'], { cwd: image.dir, env, ...asNode });
    const { id, token } = JSON.parse(created.stdout) as { id: string; token: string };

    const [command, ...args] = image.cmd as string[];
    const server = spawn(command === 'node' ? process.execPath : (command as string), args, { cwd: image.dir, env, stdio: ['ignore', 'pipe', 'pipe'], ...asNode });
    let logs = '';
    server.stdout.setEncoding('utf8').on('data', (c: string) => (logs += c));
    server.stderr.setEncoding('utf8').on('data', (c: string) => (logs += c));
    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    try {
      let health: number | undefined;
      for (const startedAt = Date.now(); health !== 200 && Date.now() - startedAt < 30_000; ) {
        if (server.exitCode !== null) throw new Error(`the image's CMD exited (${server.exitCode}):\n${logs}`);
        health = await request(port, 'GET', '/healthz').then((r) => r.status, () => undefined);
        if (health !== 200) await new Promise((resolve) => setTimeout(resolve, 100)); // paces polling only
      }
      expect(health).toBe(200);

      // A paid call (rate_limit_status is free, ADR 0027), so the headers show the tier's budget spent by one.
      const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
      const res = await request(port, 'POST', '/mcp', {
        Host: `localhost:${port}`,
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      }, call);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.text)).toMatchObject({ jsonrpc: '2.0', id: 1, result: { structuredContent: { tokenId: id, tier: 'default' } } });
      expect(res.headers).toMatchObject({ 'x-ratelimit-limit': '120', 'x-ratelimit-remaining': '119', ratelimit: expect.stringMatching(/^"default";r=119;t=\d+$/) });
      // NODE_ENV=production: no development token, no banner with a secret on stdout.
      expect(logs).not.toContain('Development token');

      server.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(logs).toContain('"event":"service.stopped"');
    } finally {
      if (server.exitCode === null) server.kill('SIGKILL');
    }
  }, 180_000);
});
