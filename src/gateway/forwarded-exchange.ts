import type { IncomingHttpHeaders } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import type { Dispatcher } from 'undici';
import { SseDataReader } from './sse-data-reader';
import { UpstreamError } from './upstream-error';

/** How much of a refusal's body is kept, to tell a forgotten session (./forgotten-session) from another refusal. */
const REFUSAL_TEXT_BYTES = 4096;

/** What the exchange does with the bytes of the answer, decided by its status and media type. */
type Reading = 'none' | 'json' | 'sse' | 'refusal' | 'drain';

/** Where an exchange's outcome goes: the forwarder's call. */
export interface ExchangeSink {
  /** Each JSON-RPC message of the answer, in order (one, a batch's, or an event stream's). */
  readonly onMessage: (message: unknown) => void;
  /** The exchange failed; also told of the rest of a stream cut after the answer (to stop its deadline). */
  readonly fail: (error: unknown) => void;
  /** The answer's stream ended or broke: nothing more will arrive. */
  readonly onClosed: () => void;
}

/**
 * One forwarded request on undici's `dispatch` (a Dispatcher handler, not
 * `Pool.request`): the answer's bytes arrive here as they are read off the
 * socket, with no body stream, AsyncResource, AbortController or promise of
 * undici's per call. What it reads, as `Pool.request` with a body stream
 * did: a 2xx JSON answer whole up to the byte bound (a broken one fails the
 * call, as fetch's does); a 2xx event stream event by event (an event that
 * is not JSON is skipped, and a stream that breaks leaves the call to its
 * deadline, as the SDK's transport does); a 202 or 204 drained (no answer
 * comes on it); a refusal's first bytes, as the SDK's SdkHttpError; any
 * other media type is not MCP.
 */
export class ForwardedExchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  /** Given up on (failed, or the caller's answer taken): what still arrives is cut. */
  private done = false;
  /** Why it was cut, for undici's abort when that comes before the exchange started or answered. */
  private cutReason: Error | undefined;
  private closed = false;
  private reading: Reading = 'none';
  private status = 0;
  private bytes = 0;
  private chunks: Buffer[] = [];
  private decoder: StringDecoder | undefined;
  private sse: SseDataReader | undefined;

  constructor(
    private readonly sink: ExchangeSink,
    private readonly maxAnswerBytes: number,
  ) {}

  /** Cuts the exchange: its socket is closed if the answer is not read to its end (undici does not reuse it). */
  cut(reason: unknown): void {
    this.done = true;
    this.cutReason = reason instanceof Error ? reason : new Error(String(reason));
    if (!this.closed) this.controller?.abort(this.cutReason);
  }

  /** The answer was taken; the rest of a stream is still read to its end so the connection is kept. */
  answered(): void {
    this.done = true;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Cut before undici started it (the caller left, or its deadline passed while queued).
    if (this.cutReason !== undefined) controller.abort(this.cutReason);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // 1xx: informational, the answer's own head follows (Pool.request skips them too).
    if (statusCode < 200) return;
    this.status = statusCode;
    if (this.cutReason !== undefined) return controller.abort(this.cutReason);
    if (statusCode >= 300) {
      this.reading = 'refusal';
      return;
    }
    // No answer on this stream: it can only come on one the SDK client reads, so the deadline ends the call.
    if (statusCode === 202 || statusCode === 204) {
      this.reading = 'drain';
      return;
    }
    const type = mediaTypeOf(headers['content-type']);
    if (type === 'application/json') this.reading = 'json';
    else if (type === 'text/event-stream') this.startSse();
    else this.sink.fail(notMcp());
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const reading = this.reading;
    if (reading === 'drain' || reading === 'none') return;
    this.bytes += chunk.length;
    if (reading === 'refusal') {
      this.chunks.push(chunk);
      // Enough to read: the rest is not needed, and cutting the exchange closes its socket.
      if (this.bytes >= REFUSAL_TEXT_BYTES) this.refused();
      return;
    }
    if (this.bytes > this.maxAnswerBytes) return this.sink.fail(tooLarge(this.maxAnswerBytes));
    if (reading === 'json') this.chunks.push(chunk);
    else this.sse?.push((this.decoder as StringDecoder).write(chunk));
  }

  onResponseEnd(): void {
    this.closed = true;
    if (this.reading === 'refusal') this.refused();
    else if (this.reading === 'json' && !this.done) this.parseJson();
    this.sink.onClosed();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.closed = true;
    // An event stream that breaks leaves the call to its deadline; a refusal is read as far as it came.
    if (this.reading === 'refusal') this.refused();
    else if (this.reading !== 'sse' && !this.done) this.sink.fail(error);
    this.sink.onClosed();
  }

  private startSse(): void {
    this.reading = 'sse';
    this.decoder = new StringDecoder('utf8');
    this.sse = new SseDataReader((data) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(data);
      } catch {
        return;
      }
      this.sink.onMessage(parsed);
    });
  }

  private parseJson(): void {
    const { chunks } = this;
    let parsed: unknown;
    try {
      parsed = JSON.parse(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    } catch (error) {
      return this.sink.fail(error);
    }
    if (Array.isArray(parsed)) for (const message of parsed) this.sink.onMessage(message);
    else this.sink.onMessage(parsed);
  }

  /** A 3xx, 4xx or 5xx: the SDK's SdkHttpError with the start of the body, which tells a forgotten session apart. */
  private refused(): void {
    if (this.done) return;
    const status = this.status;
    const text = Buffer.concat(this.chunks).toString('utf8');
    this.sink.fail(new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: HTTP ${status}`, { status, text }));
  }
}

function mediaTypeOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return (value ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
}

export function notMcp(): UpstreamError {
  return new UpstreamError('invalid', 'the upstream MCP server sent something that is not a valid MCP answer');
}

function tooLarge(maxAnswerBytes: number): UpstreamError {
  return new UpstreamError('invalid', `the upstream MCP server answered more than ${maxAnswerBytes} bytes`);
}
