import { loadConfig, describeConfig } from './config/config';
import { ConfigError } from './config/config-error';
import { createServiceLogger } from './logging/create-service-logger';
import type { MetricsServer } from './metrics/metrics-server';
import { buildService } from './service/build-service';
import { createShutdown } from './service/graceful-shutdown';
import { listenDualStack } from './service/listen-dual-stack';
import { startMetricsListener } from './service/metrics-listener';
import { applyServerTimeouts } from './service/server-timeouts';
import { ensureDevelopmentToken, startupBanner } from './service/startup-banner';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env, { stdoutIsTty: process.stdout.isTTY === true });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG: retrying with the same environment cannot help.
    }
    throw error;
  }
  const logger = createServiceLogger(config);
  const service = await buildService(config, { logger });
  const devToken = await ensureDevelopmentToken(config, service.tokenStore, process.env);

  const { server, port, host } = await listenDualStack(service.app, config.port);
  applyServerTimeouts(server, config.http);
  const servers = [server];
  let metricsServer: MetricsServer | undefined;
  if (config.metrics.port !== undefined) {
    metricsServer = await startMetricsListener(config, service.metrics.registry, config.metrics.port);
    logger.info('metrics served', { event: 'service.metrics', port: metricsServer.port, host: metricsServer.address });
  }

  if (process.env.NODE_ENV !== 'production') {
    process.stdout.write(`${startupBanner(config, `http://localhost:${port}`, devToken).join('\n')}\n`);
  }
  logger.info('listening', { event: 'service.started', ...describeConfig(config), port, host });
  if (process.env.NODE_ENV === 'production' && config.tokens.store === 'file') {
    logger.warn('TOKEN_STORE=file in production: every instance reads its own file, so tokens differ between instances; use TOKEN_STORE=firestore', {
      event: 'service.file_token_store_in_production',
    });
  }

  // Metrics are scraped until the public listener has drained, then their listener closes too.
  const release = async (): Promise<void> => {
    await metricsServer?.close();
    await service.release();
  };
  const shutdown = createShutdown({ servers, release, logger });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void shutdown(signal));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    // Found while building the service (a cost for a tool nobody serves): still a config problem with a remedy.
    process.stderr.write(`${error.message}\n`);
    process.exit(78);
  }
  // Messages can quote URLs with credentials; the class and code are enough to act on.
  const name = error instanceof Error ? error.name : typeof error;
  const code = (error as { code?: unknown })?.code;
  process.stderr.write(`firelimit failed to start: ${name}${code === undefined ? '' : ` (${String(code)})`}\n`);
  process.exit(1);
});
