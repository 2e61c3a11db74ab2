import { Writable } from 'node:stream';
import { Entry } from '@google-cloud/logging';
import fc from 'fast-check';
import { createCloudLogSink } from '../../src/logging/cloud-log-sink';
import { createLineWriter } from '../../src/logging/line-writer';
import { redactFields, redactText } from '../../src/logging/redact';
import { qualifyTrace } from '../../src/logging/trace-context';
import type { LogFields, Severity } from '../../src/shared/logger';

const NOW_MS = Date.UTC(2026, 11, 2, 14, 30, 0, 123);

/** What the sink wrote before it built lines itself: @google-cloud/logging's Entry, as Cloud Run users have been reading it. */
function libraryLine(severity: Severity, message: string, fields: LogFields, projectId: string | undefined, insertId: string): string {
  const RESERVED = new Set(['severity', 'message', 'timestamp', 'time', 'logName', 'resource', 'insertId', 'labels']);
  const metadata: Record<string, unknown> = { severity: 'DEFAULT' };
  const payload: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(redactFields(fields))) {
    if (key === 'httpRequest' && value !== null && typeof value === 'object') metadata.httpRequest = value;
    else if (key === 'trace' && typeof value === 'string') metadata.trace = qualifyTrace(value, projectId);
    else if (key === 'spanId' && typeof value === 'string') metadata.spanId = value;
    else if (key === 'traceSampled' && typeof value === 'boolean') metadata.traceSampled = value;
    else payload[RESERVED.has(key) || key.startsWith('logging.googleapis.com/') ? `field_${key}` : key] = value;
  }
  metadata.severity = severity;
  const entry: Record<string, unknown> = new Entry({ ...metadata, timestamp: new Date(NOW_MS), insertId }, { ...payload, message: redactText(message) }).toStructuredJSON(projectId, false);
  if (projectId !== undefined) entry.logName = `projects/${projectId}/logs/firelimit`;
  return JSON.stringify(entry);
}

function sinkLines(projectId: string | undefined): { sink: ReturnType<typeof createCloudLogSink>; lines: string[] } {
  const lines: string[] = [];
  const output = new Writable({
    write: (chunk: Buffer, _encoding, done) => {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { sink: createCloudLogSink({ output, projectId, clock: () => NOW_MS, batch: false }), lines };
}

const insertIdOf = (line: string): string => (JSON.parse(line) as Record<string, string>)['logging.googleapis.com/insertId'] ?? '';

// Keys a log call could carry, Cloud Logging's own among them, and values of every JSON kind, nested.
const fieldKey = fc.constantFrom('event', 'tokenId', 'httpRequest', 'trace', 'spanId', 'traceSampled', 'rateLimit', 'message', 'severity', 'labels', 'logging.googleapis.com/x', 'note', 'count', 'aborted', 'apiKey');
// Undefined only as a field's value: inside an array the library's deep copy dropped a trailing one ([1, undefined] became [1]), where JSON writes null.
const jsonLeaf = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(''));
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small' }, jsonLeaf, fc.constant(undefined), fc.array(tie('element'), { maxLength: 3 }), fc.dictionary(fc.oneof(fieldKey, fc.string()), tie('node'), { maxKeys: 4 })),
  element: fc.oneof({ depthSize: 'small' }, jsonLeaf, fc.array(tie('element'), { maxLength: 3 }), fc.dictionary(fc.oneof(fieldKey, fc.string()), tie('node'), { maxKeys: 4 })),
})).node;
const fields = fc.dictionary(fieldKey, value, { maxKeys: 8 }) as fc.Arbitrary<LogFields>;

describe('the JSON line of the Cloud Logging sink', () => {
  it('is byte for byte the line @google-cloud/logging builds for the same entry, key order included', () => {
    fc.assert(
      fc.property(fc.constantFrom<Severity>('DEBUG', 'INFO', 'WARNING', 'ERROR'), fc.string(), fields, fc.constantFrom(undefined, 'demo-project'), (severity, message, logged, projectId) => {
        const { sink, lines } = sinkLines(projectId);
        sink(severity, message, logged);
        expect(lines).toHaveLength(1);
        const line = lines[0] as string;
        expect(line).toBe(libraryLine(severity, message, logged, projectId, insertIdOf(line)));
      }),
      { numRuns: 300 },
    );
  });

  it('is a request-log entry exactly as it was written with the library', () => {
    const { sink, lines } = sinkLines('demo-project');
    const logged: LogFields = {
      event: 'http.request',
      httpRequest: { requestMethod: 'POST', requestUrl: '/mcp', status: 200, latency: '0.001234s', userAgent: undefined, remoteIp: '203.0.113.9', protocol: 'HTTP/1.1' },
      trace: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceSampled: true,
      tokenId: 'tok_0123456789abcdef',
      rateLimit: { allowed: true, limit: 60, remaining: 59, shared: true, reason: undefined, policy: 'default' },
      aborted: undefined,
    };
    sink('INFO', 'POST /mcp 200', logged);
    expect(lines[0]).toBe(libraryLine('INFO', 'POST /mcp 200', logged, 'demo-project', insertIdOf(lines[0] as string)));
    expect(lines[0]).toMatch(/^\{"timestamp":\{"seconds":\d+,"nanos":\d+\},"severity":"INFO","httpRequest":\{"requestMethod":"POST"/);
  });

  it('gives every line a distinct insertId that sorts in the order the lines were written', () => {
    const { sink, lines } = sinkLines(undefined);
    for (let i = 0; i < 1000; i++) sink('INFO', 'x', {});
    const ids = lines.map(insertIdOf);
    expect(new Set(ids).size).toBe(1000);
    expect([...ids].sort()).toEqual(ids);
  });
});

describe('createLineWriter', () => {
  function recorder(): { output: Writable; writes: string[] } {
    const writes: string[] = [];
    return { output: new Writable({ write: (chunk: Buffer, _encoding, done) => (writes.push(chunk.toString('utf8')), done()) }), writes };
  }

  it('batched, writes the lines of one event-loop turn in one write, after the turn', async () => {
    const { output, writes } = recorder();
    const write = createLineWriter(output, { batch: true });
    write('a\n');
    write('b\n');
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual(['a\nb\n']);
    write('c\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual(['a\nb\n', 'c\n']);
  });

  it('batched, writes at once when the batch passes 64 KiB rather than hold it', () => {
    const { output, writes } = recorder();
    const write = createLineWriter(output, { batch: true });
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 64; i++) write(line);
    expect(writes).toEqual([line.repeat(64)]);
  });

  it('unbatched, writes each line as it comes', () => {
    const { output, writes } = recorder();
    const write = createLineWriter(output, { batch: false });
    write('a\n');
    write('b\n');
    expect(writes).toEqual(['a\n', 'b\n']);
  });
});
