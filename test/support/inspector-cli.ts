import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { npxOnNode22, runCaptured, type Captured } from '../../scripts/node-22';
import { INSPECTOR_OBSERVED } from '../../src/developers/developers-clients';

/**
 * The real MCP Inspector CLI (the version /developers names), run as an
 * integrator runs it: `npx @modelcontextprotocol/inspector --cli <url>
 * --transport http ...`, on Node 22 beside it (scripts/node-22.ts). npx
 * fetches both into the npm cache once per machine; every run after that
 * takes a few seconds. Its own state (client config, OAuth) goes to a home of
 * its own, removed by `close`.
 */
export interface InspectorCli {
  /** `mcp-inspector --cli ...args`, no terminal, no stdin. */
  run(args: readonly string[]): Promise<Captured>;
  close(): void;
}

export const INSPECTOR_PACKAGE = `${INSPECTOR_OBSERVED.packageName}@${INSPECTOR_OBSERVED.version}`;

export function inspectorCli(): InspectorCli {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-inspector-cli-'));
  const home = path.join(dir, 'home');
  mkdirSync(home);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    npm_config_cache: process.env.npm_config_cache ?? path.join(os.homedir(), '.npm'),
    npm_config_loglevel: 'error',
    npm_config_update_notifier: 'false',
    MCP_INSPECTOR_SECRET_STORE: 'memory',
    BROWSER: 'false',
    DISPLAY: '',
  };
  return {
    run: (args) => runCaptured('npx', npxOnNode22([INSPECTOR_PACKAGE], ['mcp-inspector', '--cli', ...args]), env),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The Inspector's error envelope on stderr, and the result it printed on stdout (one JSON document). */
export { envelope, printedResult as parsedStdout } from '../../scripts/inspector-check-kit';
