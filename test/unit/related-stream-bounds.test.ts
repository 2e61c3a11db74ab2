import { Writable } from 'node:stream';
import type { Response } from 'express';
import { pipeBoundedStream, relayedUnreadBytes, RelatedStream, type RelayBounds } from '../../src/mcp/related-stream';

/** A response whose client reads only when told: each write waits until `read()` takes it (a socket that is never drained). */
function stalledResponse(): { res: Response; read: () => void; written: string[] } {
  const waiting: (() => void)[] = [];
  const written: string[] = [];
  const writable = new Writable({
    highWaterMark: 16,
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString());
      waiting.push(done);
    },
  });
  const res = Object.assign(writable, { statusCode: 0, setHeader: () => undefined, flushHeaders: () => undefined }) as unknown as Response;
  return { res, written, read: () => waiting.splice(0).forEach((done) => done()) };
}

const BODY = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'count', _meta: { progressToken: 'p' } } };
const progress = (n: number, pad = '') => ({ jsonrpc: '2.0' as const, method: 'notifications/progress', params: { progressToken: 'p', progress: n, message: pad } });
const log = (n: number) => ({ jsonrpc: '2.0' as const, method: 'notifications/message', params: { level: 'info', data: n } });

const BOUNDS: RelayBounds = { backpressureBytes: 200, callBytes: 4096, instanceBytes: 1 << 20, stallMs: 50 };

describe('a relayed stream whose caller does not read it is bounded', () => {
  it('under backpressure keeps only the latest progress and drops log messages; the latest arrives once the caller reads', () => {
    const { res, read, written } = stalledResponse();
    const stream = RelatedStream.for(res, BODY, BOUNDS) as RelatedStream;
    for (let n = 0; n < 1000; n++) {
      stream.sink(progress(n));
      stream.sink(log(n));
    }
    expect(res.writableLength).toBeLessThan(BOUNDS.backpressureBytes + 200);
    expect(stream.dropped).toBeGreaterThan(900);
    read();
    read();
    expect(written.at(-1)).toContain('"progress":999');
    expect(stream.finish({ jsonrpc: '2.0', id: 1, result: {} })).toBe(true);
    res.destroy();
  });

  it('a caller that never reads is cut after stallMs: the connection closes (a refusal that cancels the call), no hang', async () => {
    const { res } = stalledResponse();
    const why: string[] = [];
    const stream = RelatedStream.for(res, BODY, BOUNDS, (reason) => why.push(reason)) as RelatedStream;
    for (let n = 0; n < 50; n++) stream.sink(progress(n));
    await new Promise((resolve) => setTimeout(resolve, BOUNDS.stallMs + 30));
    expect(res.destroyed).toBe(true);
    expect(why).toEqual([expect.stringContaining('did not read its stream for 50 ms')]);
    expect(stream.finish({ jsonrpc: '2.0', id: 1, result: {} })).toBe(true);
  });

  it('one notification larger than the per-call bound cuts the stream instead of buffering it', () => {
    const { res } = stalledResponse();
    const why: string[] = [];
    const stream = RelatedStream.for(res, BODY, BOUNDS, (reason) => why.push(reason)) as RelatedStream;
    stream.sink(progress(1, 'x'.repeat(10_000)));
    expect(res.destroyed).toBe(true);
    expect(why).toEqual([expect.stringContaining('per-call bound')]);
  });

  it('the streams of the instance together stay under the per-instance bound, and what they hold is given back when they close', () => {
    const before = relayedUnreadBytes();
    const bounds: RelayBounds = { backpressureBytes: 1 << 20, callBytes: 1 << 20, instanceBytes: before + 3000, stallMs: 10_000 };
    const responses = [stalledResponse(), stalledResponse(), stalledResponse()];
    const cuts: string[] = [];
    const streams = responses.map(({ res }) => RelatedStream.for(res, BODY, bounds, (reason) => cuts.push(reason)) as RelatedStream);
    for (let n = 0; n < 40; n++) for (const stream of streams) stream.sink(progress(n, 'y'.repeat(40)));
    expect(relayedUnreadBytes() - before).toBeLessThanOrEqual(3000);
    expect(cuts.some((reason) => reason.includes('per-instance bound'))).toBe(true);
    for (const { res } of responses) res.destroy();
    return new Promise<void>((resolve) => setImmediate(() => {
      expect(relayedUnreadBytes()).toBe(before);
      resolve();
    }));
  });
});

/** An SDK stream that never ends: an upstream reporting progress as fast as it can. */
async function* endless(chunkBytes: number): AsyncGenerator<Uint8Array> {
  const chunk = new Uint8Array(chunkBytes).fill(120);
  for (;;) {
    yield chunk;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('the 2026-07-28 stream from the SDK entry, passed on under the same bounds', () => {
  it('an endless stream to a caller that never reads is cut at the per-call bound plus the answer cap, and the pipe ends', async () => {
    const { res } = stalledResponse();
    const why: string[] = [];
    await pipeBoundedStream(res, endless(512), 2048, { backpressureBytes: 1 << 20, callBytes: 4096, instanceBytes: 1 << 30, stallMs: 60_000 }, (reason) => why.push(reason));
    expect(res.destroyed).toBe(true);
    expect(why).toEqual([expect.stringContaining('per-call bound')]);
  });

  it('a caller that stops reading is cut after stallMs, however little is waiting', async () => {
    const { res } = stalledResponse();
    const why: string[] = [];
    await pipeBoundedStream(res, endless(64), 1 << 20, { backpressureBytes: 100, callBytes: 1 << 20, instanceBytes: 1 << 30, stallMs: 50 }, (reason) => why.push(reason));
    expect(why).toEqual([expect.stringContaining('for 50 ms')]);
  });

  it('a caller that reads gets the whole stream, ended', async () => {
    const chunks: string[] = [];
    const res = Object.assign(new Writable({ write: (chunk: Buffer, _e, done) => { chunks.push(chunk.toString()); done(); } }), { statusCode: 0, setHeader: () => undefined, flushHeaders: () => undefined }) as unknown as Response;
    async function* three(): AsyncGenerator<Uint8Array> {
      for (const text of ['a', 'b', 'c']) yield new TextEncoder().encode(text);
    }
    await pipeBoundedStream(res, three(), 1024, { backpressureBytes: 10, callBytes: 100, instanceBytes: 1 << 30, stallMs: 50 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(chunks.join('')).toBe('abc');
    expect(res.writableEnded).toBe(true);
  });
});
