import { LOG_LEVEL_META_KEY, PROTOCOL_VERSION_META_KEY, type LoggingLevel } from '@modelcontextprotocol/server';
import { wantsLog } from '../../src/mcp/call-relay';

const modern = (least?: LoggingLevel): object => ({ [PROTOCOL_VERSION_META_KEY]: '2026-07-28', ...(least === undefined ? {} : { [LOG_LEVEL_META_KEY]: least }) });

describe('which relayed upstream log messages a caller takes', () => {
  it.each([
    ['a 2025-era request (no envelope) takes debug', undefined, 'debug', true],
    ['a 2025-era request takes emergency', undefined, 'emergency', true],
    ['an envelope without a protocol version counts as 2025-era', { [LOG_LEVEL_META_KEY]: 'error' }, 'debug', true],
    ['a 2026 request naming no level takes none, not even emergency', modern(), 'emergency', false],
    ['a 2026 request at info takes info', modern('info'), 'info', true],
    ['a 2026 request at info takes warning', modern('info'), 'warning', true],
    ['a 2026 request at info drops debug', modern('info'), 'debug', false],
    ['a 2026 request at warning drops notice', modern('warning'), 'notice', false],
    ['a 2026 request at emergency takes only emergency', modern('emergency'), 'emergency', true],
    ['a 2026 request at emergency drops alert', modern('emergency'), 'alert', false],
  ] as const)('%s', (_, envelope, level, expected) => {
    expect(wantsLog(envelope, level)).toBe(expected);
  });
});
