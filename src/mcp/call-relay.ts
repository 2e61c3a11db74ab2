import { LOG_LEVEL_META_KEY, PROTOCOL_VERSION_META_KEY, type LoggingLevel, type ProgressToken, type ServerContext } from '@modelcontextprotocol/server';
import type { CallRelay } from '../gateway/gateway';

/**
 * What of the upstream's news about a forwarded tools/call goes back to the
 * caller (docs/adr/0038-relaying-upstream-notifications.md). Only a call
 * that carries `_meta.progressToken` asked for news: its upstream progress
 * comes back under the caller's own token (the upstream saw the gateway
 * client's), and the upstream's log messages for that call come along. A
 * call without one asks the upstream for nothing and gets a plain answer.
 * From 2026-07-28 a request names the least log level it wants in its
 * envelope, or gets no log messages (as the SDK's own ctx.mcpReq.log does);
 * a 2025-era caller gets them all, since a level set with logging/setLevel
 * cannot be remembered by a stateless server.
 * Each notification is sent on the request's own stream (ctx.mcpReq.notify),
 * the only one a stateless server has; a caller who cannot read a stream
 * never gets this far with a token (./related-stream progressIfStreamed).
 */
export function callRelayOf(ctx: ServerContext): CallRelay {
  const progressToken = ctx.mcpReq._meta?.progressToken as ProgressToken | undefined;
  if (progressToken === undefined) return {};
  const send = (notification: Parameters<ServerContext['mcpReq']['notify']>[0]): void => {
    // A caller gone or a stream refused must not fail the call it was told about.
    void ctx.mcpReq.notify(notification).catch(() => undefined);
  };
  return {
    onprogress: ({ progress, total, message }) => {
      send({ method: 'notifications/progress', params: { progressToken, progress, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) } });
    },
    onlog: ({ level, logger, data }) => {
      if (!wantsLog(ctx.mcpReq.envelope, level)) return;
      send({ method: 'notifications/message', params: { level, data, ...(logger === undefined ? {} : { logger }) } });
    },
  };
}

/** Least severe first, as the spec orders them. */
const SEVERITY: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/**
 * Whether a caller whose request carried `envelope` takes a log message at
 * `level`: a 2025-era request (no envelope) takes every level; a 2026-era one
 * those at or above the level it names, none when it names none.
 */
export function wantsLog(envelope: object | undefined, level: LoggingLevel): boolean {
  const keys = envelope as Readonly<Record<string, unknown>> | undefined;
  if (keys?.[PROTOCOL_VERSION_META_KEY] === undefined) return true;
  const least = keys[LOG_LEVEL_META_KEY] as LoggingLevel | undefined;
  return least !== undefined && SEVERITY.indexOf(level) >= SEVERITY.indexOf(least);
}
