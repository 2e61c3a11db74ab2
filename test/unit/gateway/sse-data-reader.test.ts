import fc from 'fast-check';
import { SseDataReader } from '../../../src/gateway/sse-data-reader';

function dataOf(chunks: readonly string[]): string[] {
  const seen: string[] = [];
  const reader = new SseDataReader((data) => seen.push(data));
  for (const chunk of chunks) reader.push(chunk);
  return seen;
}

describe('SseDataReader: the data of each event of a text/event-stream', () => {
  it.each([
    ['one event', ['data: {"a":1}\n\n'], ['{"a":1}']],
    ['an event name and id are skipped', ['event: message\nid: 7\ndata: x\n\n'], ['x']],
    ['two data lines are joined with a newline', ['data: a\ndata: b\n\n'], ['a\nb']],
    ['no space after the colon', ['data:x\n\n'], ['x']],
    ['only the first space is dropped', ['data:  x\n\n'], [' x']],
    ['a bare "data" line is an empty line of data', ['data\ndata: x\n\n'], ['\nx']],
    ['comments are skipped, and an event of comments only is none', [': ping\n\n: still here\n\ndata: y\n\n'], ['y']],
    ['CRLF line ends', ['data: a\r\n\r\ndata: b\r\n\r\n'], ['a', 'b']],
    ['CR line ends', ['data: a\r\rdata: b\r\r'], ['a', 'b']],
    ['a CRLF split across chunks is one line end', ['data: a\r', '\n\r', '\n'], ['a']],
    ['a line split across chunks', ['da', 'ta: {"a"', ':1}\n', '\n'], ['{"a":1}']],
    ['an event without its blank line is not yet complete', ['data: x\n'], []],
    ['blank lines between events complete nothing', ['\n\n\ndata: x\n\n\n'], ['x']],
  ])('%s', (_name, chunks, expected) => {
    expect(dataOf(chunks)).toEqual(expected);
  });

  it('however the stream is cut into chunks, the same data come out, in order', () => {
    const payload = fc.string({ maxLength: 30 }).map((s) => s.replace(/[\r\n]/g, ' '));
    const lineEnd = fc.constantFrom('\n', '\r\n', '\r');
    fc.assert(
      fc.property(fc.array(fc.tuple(payload, lineEnd), { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 10 }), (events, cuts) => {
        const stream = events.map(([data, end]) => `data: ${data}${end}${end}`).join('');
        const at = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
        const chunks: string[] = [];
        let from = 0;
        for (const to of at) {
          chunks.push(stream.slice(from, to));
          from = to;
        }
        chunks.push(stream.slice(from));
        expect(dataOf(chunks)).toEqual(dataOf([stream]));
        expect(dataOf([stream])).toEqual(events.map(([data]) => data));
      }),
    );
  });
});
