import type { Response } from 'express';
import { progressIfStreamed, RelatedStream } from '../../src/mcp/related-stream';

const call = (meta?: Record<string, unknown>) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'count', ...(meta === undefined ? {} : { _meta: meta }) } });
const BOTH = 'application/json, text/event-stream';

describe('which POSTs may be answered as a stream of related notifications', () => {
  it.each([
    ['one request with a progress token, Accept listing both', call({ progressToken: 'p' }), BOTH, true],
    ['a numeric progress token', call({ progressToken: 0 }), BOTH, true],
    ['text/event-stream with a parameter', call({ progressToken: 'p' }), 'application/json, text/event-stream;q=0.5', true],
    ['text/event-stream alone, any case', call({ progressToken: 'p' }), 'Text/Event-Stream', true],
    ['no progress token', call(), BOTH, false],
    ['_meta without a progress token', call({ other: 1 }), BOTH, false],
    ['Accept: application/json only', call({ progressToken: 'p' }), 'application/json', false],
    ['Accept: */* (a stream was not asked for)', call({ progressToken: 'p' }), '*/*', false],
    ['no Accept', call({ progressToken: 'p' }), undefined, false],
    ['a type that only starts like it', call({ progressToken: 'p' }), 'application/json, text/event-streams', false],
    ['a batch, even of requests with tokens', [call({ progressToken: 'p' })], BOTH, false],
    ['no body', undefined, BOTH, false],
  ] as const)('%s', (_, body, accept, streams) => {
    expect(RelatedStream.for({} as Response, progressIfStreamed(body, accept)) !== undefined).toBe(streams);
  });

  it('a caller that cannot read a stream loses only the progress token, in a copy', () => {
    const body = call({ progressToken: 'p', 'io.modelcontextprotocol/protocolVersion': '2026-07-28' });
    const seen = progressIfStreamed(body, 'application/json');
    expect(seen).toEqual({ ...body, params: { ...body.params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    expect(body.params._meta).toEqual({ progressToken: 'p', 'io.modelcontextprotocol/protocolVersion': '2026-07-28' });
    expect(progressIfStreamed(body, BOTH)).toBe(body);
  });
});

describe('a related stream', () => {
  function fakeResponse() {
    const written: string[] = [];
    const headers = new Map<string, string>();
    let ended = false;
    const res = {
      destroyed: false,
      statusCode: 0,
      setHeader: (name: string, value: string) => void headers.set(name.toLowerCase(), value),
      flushHeaders: () => undefined,
      // The stream listens for drain (backpressure) and close (its memory bound is released).
      on: () => res,
      write: (chunk: string) => void written.push(chunk),
      end: (chunk: string) => void (written.push(chunk), (ended = true)),
    };
    return { res: res as unknown as Response, written, headers, ended: () => ended };
  }

  it('stays JSON when nothing was said before the answer', () => {
    const fake = fakeResponse();
    const stream = RelatedStream.for(fake.res, call({ progressToken: 'p' }))!;
    expect(stream.finish({ jsonrpc: '2.0', id: 1, result: {} })).toBe(false);
    expect(fake.written).toEqual([]);
  });

  it('opens on the first notification and ends with the answer as the last event', () => {
    const fake = fakeResponse();
    const stream = RelatedStream.for(fake.res, call({ progressToken: 'p' }))!;
    stream.sink({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } });
    expect(stream.finish({ jsonrpc: '2.0', id: 1, result: {} })).toBe(true);
    expect(fake.headers.get('content-type')).toBe('text/event-stream');
    expect(fake.written).toEqual([
      'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}\n\n',
      'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n',
    ]);
    expect(fake.ended()).toBe(true);
  });
});
