/**
 * Child-process entry of the RTDB test server. It runs in its own process so
 * tests can SIGSTOP it (a hung backend) or kill it (an outage) while the
 * firebase-admin client under test keeps running.
 *
 * Config arrives in RTDB_TEST_SERVER_CONFIG ({port, rules}); readiness and
 * failures go back over the IPC channel.
 */
import { WireServer } from './wire-server';

interface Config {
  port: number;
  rules?: object;
}

export type ServerMessage = { type: 'ready'; port: number } | { type: 'error'; code?: string; message: string };

function report(message: ServerMessage): void {
  process.send?.(message);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.env.RTDB_TEST_SERVER_CONFIG ?? '{"port":0}') as Config;
  let host = `127.0.0.1:${config.port}`;
  // The handshake names this host; clients that honour it must come back here, not to a made-up name.
  const server = new WireServer(config.rules, () => host);
  const port = await server.listen(config.port, '127.0.0.1');
  host = `127.0.0.1:${port}`;
  report({ type: 'ready', port });
}

// The parent going away (even by SIGKILL) closes the IPC channel: never outlive it.
process.on('disconnect', () => process.exit(0));

main().catch((error: NodeJS.ErrnoException) => {
  report({ type: 'error', code: error.code, message: String(error) });
  process.exit(1);
});
