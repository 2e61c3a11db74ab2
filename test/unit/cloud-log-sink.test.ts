import { PassThrough } from 'node:stream';
import { createCloudLogSink } from '../../src/logging/cloud-log-sink';
import { createServiceLogger } from '../../src/logging/create-service-logger';
import { createLogger } from '../../src/shared/logger';
import { createPrettyLogSink } from '../../src/logging/pretty-log-sink';
import { redactFields, redactText } from '../../src/logging/redact';
import { traceContextFromHeaders } from '../../src/logging/trace-context';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

function capture(): { stream: PassThrough; text: () => string; entries: () => Record<string, unknown>[] } {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  const text = (): string => chunks.join('');
  const entries = (): Record<string, unknown>[] =>
    text()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { stream, text, entries };
}

describe('createCloudLogSink', () => {
  it('writes one parseable JSON line per entry with severity, message and fields at the top level', () => {
    const out = capture();
    const logger = createLogger(createCloudLogSink({ output: out.stream }));
    logger.info('limiter ready', { backend: 'rtdb' });
    logger.warn('shared backend unavailable; answering from local windows', { backend: 'rtdb', timeoutMs: 1500 });
    logger.error('boom');
    for (const line of out.text().split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
    const entries = out.entries();
    expect(entries.map((e) => [e.severity, e.message])).toEqual([
      ['INFO', 'limiter ready'],
      ['WARNING', 'shared backend unavailable; answering from local windows'],
      ['ERROR', 'boom'],
    ]);
    expect(entries[0]).toMatchObject({ backend: 'rtdb' });
    expect(entries[1]).toMatchObject({ timeoutMs: 1500 });
  });

  it('puts httpRequest where Cloud Logging reads it and correlates the trace with the project', () => {
    const out = capture();
    const sink = createCloudLogSink({ output: out.stream, projectId: 'demo-project' });
    const trace = traceContextFromHeaders({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` });
    sink('INFO', 'POST /mcp 200', {
      httpRequest: { requestMethod: 'POST', requestUrl: '/mcp', status: 200, latency: '0.004000s' },
      ...trace,
    });
    const [entry] = out.entries();
    expect(entry).toMatchObject({
      severity: 'INFO',
      httpRequest: { requestMethod: 'POST', requestUrl: '/mcp', status: 200, latency: '0.004000s' },
      'logging.googleapis.com/trace': `projects/demo-project/traces/${TRACE_ID}`,
      'logging.googleapis.com/spanId': '00f067aa0ba902b7',
      'logging.googleapis.com/trace_sampled': true,
    });
  });

  it('takes the trace from X-Cloud-Trace-Context when there is no traceparent, converting the decimal span', () => {
    const out = capture();
    const sink = createCloudLogSink({ output: out.stream, projectId: 'demo-project' });
    sink('INFO', 'GET /healthz 200', { ...traceContextFromHeaders({ 'x-cloud-trace-context': `${TRACE_ID}/1;o=1` }) });
    expect(out.entries()[0]).toMatchObject({
      'logging.googleapis.com/trace': `projects/demo-project/traces/${TRACE_ID}`,
      'logging.googleapis.com/spanId': '0000000000000001',
      'logging.googleapis.com/trace_sampled': true,
    });
  });

  it('never writes secrets, hashes, Authorization values or credentials in URLs', () => {
    const out = capture();
    const secret = `flk_${'A'.repeat(43)}`;
    const hash = 'ab'.repeat(32);
    const sink = createCloudLogSink({ output: out.stream });
    sink('ERROR', `request with Bearer ${secret} failed against redis://:hunter2@cache:6379`, {
      authorization: `Bearer ${secret}`,
      headers: { Authorization: `Bearer ${secret}`, cookie: 'sid=1' },
      secretHash: hash,
      note: `hash was ${hash}`,
      password: 'hunter2',
      tokenId: 'tok_0123456789abcdef',
      error: new Error(`connect to redis://user:hunter2@cache failed for ${secret}`),
    });
    const text = out.text();
    for (const leaked of [secret, hash, 'hunter2', 'sid=1', 'uthorization']) expect(text).not.toContain(leaked);
    // The public id stays: it is what an operator searches the logs for.
    expect(out.entries()[0]).toMatchObject({ tokenId: 'tok_0123456789abcdef' });
  });

  it('names the log after the project when it knows one, and writes no logName (never a placeholder) when it does not', () => {
    const known = capture();
    createCloudLogSink({ output: known.stream, projectId: 'demo-project' })('INFO', 'limiter ready', {});
    expect(known.entries()).toEqual([expect.objectContaining({ message: 'limiter ready', logName: 'projects/demo-project/logs/firelimit' })]);

    for (const projectId of [undefined, '']) {
      const unknown = capture();
      const logger = createLogger(createCloudLogSink({ output: unknown.stream, projectId }));
      logger.info('limiter ready', { backend: 'memory' });
      logger.warn('token store slow', { trace: TRACE_ID });
      expect(unknown.text()).not.toContain('{{');
      expect(unknown.text()).not.toContain('undefined');
      expect(unknown.entries()).toHaveLength(2);
      for (const entry of unknown.entries()) expect(entry).not.toHaveProperty('logName');
    }
  });

  it('writes the line without its fields rather than throw when a field cannot be serialized', () => {
    const out = capture();
    const sink = createCloudLogSink({ output: out.stream, projectId: 'demo-project' });
    expect(() => sink('ERROR', 'odd field', { count: 10n })).not.toThrow();
    expect(out.entries()).toEqual([
      { severity: 'ERROR', message: 'odd field', logName: 'projects/demo-project/logs/firelimit', loggingError: 'fields could not be serialized' },
    ]);
  });

  it('keeps payload fields from overriding the entry severity or message', () => {
    const out = capture();
    createCloudLogSink({ output: out.stream })('INFO', 'real message', { severity: 'ERROR', message: 'fake' });
    expect(out.entries()[0]).toMatchObject({ severity: 'INFO', message: 'real message', field_severity: 'ERROR', field_message: 'fake' });
  });
});

describe('traceContextFromHeaders', () => {
  it('prefers traceparent over X-Cloud-Trace-Context', () => {
    const other = 'f'.repeat(31) + '1';
    expect(
      traceContextFromHeaders({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-00`, 'x-cloud-trace-context': `${other}/5;o=1` }, 'p'),
    ).toEqual({ trace: `projects/p/traces/${TRACE_ID}`, spanId: '00f067aa0ba902b7', traceSampled: false });
  });

  it('ignores malformed and all-zero trace headers', () => {
    expect(traceContextFromHeaders({ traceparent: 'garbage' })).toBeUndefined();
    expect(traceContextFromHeaders({ traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` })).toBeUndefined();
    expect(traceContextFromHeaders({ 'x-cloud-trace-context': 'not-a-trace' })).toBeUndefined();
  });

  it('leaves the trace id bare when no project id is configured', () => {
    expect(traceContextFromHeaders({ 'x-cloud-trace-context': TRACE_ID })).toEqual({ trace: TRACE_ID, spanId: undefined, traceSampled: undefined });
  });
});

describe('redaction', () => {
  it('drops sensitive keys at any depth but keeps public token fields', () => {
    expect(redactFields({ a: { b: [{ apiKey: 'x', clientSecret: 'y', ok: 1 }] }, tokenId: 'tok_1', accessToken: 'z' })).toEqual({
      a: { b: [{ ok: 1 }] },
      tokenId: 'tok_1',
    });
  });

  it('cuts a cycle at the object that repeats an ancestor, and copies an object met twice elsewhere each time', () => {
    const shared = { note: 'flk_abcdefgh' };
    const loop: Record<string, unknown> = { name: 'root', shared, again: shared };
    loop.self = loop;
    const nested: Record<string, unknown> = { inner: { back: undefined as unknown } };
    (nested.inner as Record<string, unknown>).back = nested;
    expect(redactFields({ loop, nested })).toEqual({
      loop: { name: 'root', shared: { note: 'flk_[redacted]' }, again: { note: 'flk_[redacted]' }, self: '[circular]' },
      nested: { inner: { back: '[circular]' } },
    });
  });

  it('stops at eight levels, and starts clean after a walk that threw', () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 9; i++) deep = { d: deep };
    const copy = JSON.stringify(redactFields({ deep }));
    expect(copy).toContain('"[too deep]"');
    let armed = true;
    const hostile = {
      get boom(): string {
        if (!armed) return 'calm';
        armed = false;
        throw new Error('getter');
      },
    };
    const parent = { b: hostile };
    expect(() => redactFields({ a: parent })).toThrow('getter');
    // The ancestors of the walk that threw are not taken for this one's.
    expect(redactFields({ again: parent })).toEqual({ again: { b: { boom: 'calm' } } });
  });

  it('masks secret-looking text', () => {
    expect(redactText('Authorization: Bearer abc.def')).toBe('Authorization: Bearer [redacted]');
    expect(redactText('https://u:p@host/x')).toBe('https://[redacted]@host/x');
    // A signed-in caller's JWT outside any Authorization header (an error text quoting it).
    expect(redactText('verify failed for eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJl here')).toBe('verify failed for jwt:[redacted] here');
  });

  it('masks secrets in their percent-decoded forms, in any text (an error handler logging req.path)', () => {
    const tail = 'A'.repeat(43);
    expect(redactText(`request failed at /mcp/flk%5F${tail}/x`)).toBe('request failed at /mcp/flk_[redacted]/x');
    expect(redactText(`GET /a?x=%2566lk%255F${tail} 404`)).toBe('GET /a?x=flk_[redacted] 404');
    expect(redactText(`hash=${'ab'.repeat(31)}%61%62 end`)).toBe('hash=[redacted] end');
    // A decoded run that hides nothing is left as it came, escapes and all.
    expect(redactText('GET /tools%20list?q=a%2Fb 200')).toBe('GET /tools%20list?q=a%2Fb 200');
    // A malformed escape does not stop the rest from being decoded.
    expect(redactText(`/x%ZZ/flk%5f${tail}`)).toBe('/x%ZZ/flk_[redacted]');
  });

  it('masks a hex SHA-256 glued to word characters, and longer hex runs, but not trace or span ids', () => {
    const hash = 'ab'.repeat(32);
    expect(redactText(`x=${hash}_y`)).toBe('x=[redacted]_y');
    expect(redactText(`v${hash}`)).toBe('v[redacted]');
    expect(redactText(`${hash}${hash}`)).toBe('[redacted]');
    expect(redactText(`trace ${TRACE_ID} span 00f067aa0ba902b7`)).toBe(`trace ${TRACE_ID} span 00f067aa0ba902b7`);
  });
});

describe('createPrettyLogSink and createServiceLogger', () => {
  it('writes a readable line for a terminal, redacted the same way', () => {
    const out = capture();
    const sink = createPrettyLogSink({ output: out.stream, color: false, clock: () => Date.UTC(2026, 0, 1, 12, 34, 56, 789) });
    sink('WARNING', 'POST /mcp 200', { httpRequest: { latency: '0.002000s', remoteIp: '203.0.113.9' }, tokenId: 'tok_1', rateLimit: { shared: false, reason: 'local_fallback' }, token: 'flk_x' });
    expect(out.text()).toBe('12:34:56.789 WARNING POST /mcp 200  2.0ms ip=203.0.113.9 tokenId=tok_1 rateLimit.shared=false rateLimit.reason=local_fallback\n');
  });

  it('picks JSON or pretty output from config.log.format', () => {
    const json = capture();
    createServiceLogger({ log: { format: 'json' }, firebase: { projectId: undefined } as never }, { output: json.stream }).info('hello');
    expect(json.entries()[0]).toMatchObject({ severity: 'INFO', message: 'hello' });
    const pretty = capture();
    createServiceLogger({ log: { format: 'pretty' }, firebase: { projectId: undefined } as never }, { output: pretty.stream }).info('hello');
    expect(pretty.text()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {4}hello\n$/);
  });
});
