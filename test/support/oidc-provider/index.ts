import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** A real OpenID provider (oidc-provider, ES modules only, so in its own process) on loopback. */
export interface OidcProvider {
  readonly issuer: string;
  stop(): Promise<void>;
}

export async function startOidcProvider(options: { readonly tiers?: Readonly<Record<string, string>> } = {}): Promise<OidcProvider> {
  const signingKey = { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }), kid: 'test-es256', alg: 'ES256', use: 'sig' };
  const child: ChildProcess = spawn(process.execPath, [path.join(__dirname, 'server.mjs'), JSON.stringify({ tiers: options.tiers ?? {} })], {
    env: { ...process.env, OIDC_TEST_SIGNING_JWKS: JSON.stringify(signingKey), NODE_NO_WARNINGS: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    if (process.env.OIDC_DEBUG) process.stderr.write(chunk);
  });
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`oidc-provider did not start within 15 s: ${stderr}`)), 15_000);
    child.once('exit', (code) => reject(new Error(`oidc-provider exited (${code}): ${stderr}`)));
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { issuer: string }).issuer);
    });
  });
  return {
    issuer,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
