/**
 * The `data` of each event of a text/event-stream, fed in chunks as they
 * arrive (the WHATWG event-stream grammar: lines end in CRLF, LF or CR, an
 * empty line ends an event, `data:` lines of one event are joined with a
 * newline, comments and other fields are skipped). Only the data matters to
 * a forwarded call: event names and ids are not read, since a forwarded call
 * is never resumed (it is retried on a new session or fails).
 */
export class SseDataReader {
  /** The text after the last line end seen, waiting for the rest of its line. */
  private partial = '';
  /** The data lines of the event being read. */
  private data: string[] = [];
  /** A chunk ended in CR: an LF at the start of the next one belongs to that line end. */
  private afterCr = false;

  constructor(private readonly onData: (data: string) => void) {}

  /** Reads `text`; calls onData for each event it completes. */
  push(text: string): void {
    let start = 0;
    if (this.afterCr && text.charCodeAt(0) === 10) start = 1;
    this.afterCr = false;
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code !== 10 && code !== 13) continue;
      const line = this.partial + text.slice(start, i);
      this.partial = '';
      if (code === 13) {
        if (i + 1 === text.length) this.afterCr = true;
        else if (text.charCodeAt(i + 1) === 10) i += 1;
      }
      start = i + 1;
      this.line(line);
    }
    this.partial += text.slice(start);
  }

  /** The text buffered for an unfinished line: what the answer's byte bound must count too. */
  get bufferedLength(): number {
    return this.partial.length;
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0) {
        const data = this.data.join('\n');
        this.data = [];
        this.onData(data);
      }
      return;
    }
    if (line.startsWith('data:')) this.data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
    else if (line === 'data') this.data.push('');
  }
}
