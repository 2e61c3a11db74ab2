import { PassThrough } from 'node:stream';
import { createServiceLogger } from '../../src/logging/create-service-logger';
import { maskKnownSecrets, secretsOfAuthorization } from '../../src/logging/known-secrets';
import type { LogFields } from '../../src/shared/logger';

describe('the upstream credential is masked by value in every log line', () => {
  const cases: readonly [string, string | undefined, string[]][] = [
    ['a bearer value and its credential', 'Bearer sk-live-0123456789', ['Bearer sk-live-0123456789', 'sk-live-0123456789']],
    ['a bare API key', 'apikey_9f8e7d6c5b', ['apikey_9f8e7d6c5b']],
    ['nothing configured', undefined, []],
    ['a value too short to mask without eating words', 'Key abc', []],
  ];
  it.each(cases)('%s', (_label, authorization, expected) => {
    expect(secretsOfAuthorization(authorization)).toEqual(expected);
  });

  it('masks the value in the message and in fields at any depth, errors included', () => {
    const written: [string, LogFields][] = [];
    const sink = maskKnownSecrets((_severity, message, fields) => written.push([message, fields]), secretsOfAuthorization('Token up-9f8e7d6c5b4a'));
    sink('ERROR', 'upstream said up-9f8e7d6c5b4a is bad', { nested: { list: ['x up-9f8e7d6c5b4a y'] }, error: new Error('auth up-9f8e7d6c5b4a') });
    expect(JSON.stringify(written)).not.toContain('up-9f8e7d6c5b4a');
    expect(JSON.stringify(written)).toContain('[redacted]');
  });

  it.each(['json', 'pretty'] as const)('the service logger (%s) never writes UPSTREAM_MCP_AUTHORIZATION', (format) => {
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const logger = createServiceLogger(
      { log: { format }, firebase: { databaseUrl: undefined, databaseUrls: [], databaseEmulatorHost: undefined, firestoreEmulatorHost: undefined, projectId: undefined }, upstream: { url: 'http://u.example/mcp', authorization: 'ApiKey zz-upstream-4242', timeoutMs: 1000, listTtlMs: 0, sessionsMax: 256, sessionIdleMs: 300000, quota: undefined, toolQuotas: new Map() } },
      { output },
    );
    logger.warn('upstream rejected ApiKey zz-upstream-4242', { detail: 'key=zz-upstream-4242' });
    expect(text).toContain('upstream rejected');
    expect(text).not.toContain('zz-upstream-4242');
  });
});
