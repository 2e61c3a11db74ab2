import { boundedFetch } from '../../../src/gateway/bounded-fetch';
import { UpstreamError } from '../../../src/gateway/upstream-error';

/** A fetch that answers `bytes` bytes in 1 KiB chunks, recording the signal it was given. */
function answering(bytes: number, seen: { signal?: AbortSignal | null }): typeof fetch {
  return async (_input, init) => {
    seen.signal = init?.signal;
    let left = bytes;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (left <= 0) return controller.close();
        const size = Math.min(1024, left);
        left -= size;
        controller.enqueue(new Uint8Array(size).fill(65));
      },
    });
    return new Response(body, { status: 200, headers: { 'Content-Type': 'application/json' } });
  };
}

describe('boundedFetch: each request upstream has a deadline and a most-bytes answer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it.each([0, 1, 10_000, 10_240])('an answer of %i bytes within a 10 240-byte cap is read whole, and leaves no timer behind', async (bytes) => {
    const seen: { signal?: AbortSignal | null } = {};
    const response = await boundedFetch(answering(bytes, seen), { deadlineMs: 1000, maxAnswerBytes: 10_240 })('http://u/mcp', { method: 'POST' });
    expect((await response.arrayBuffer()).byteLength).toBe(bytes);
    expect(jest.getTimerCount()).toBe(0);
    expect(seen.signal?.aborted).toBe(false);
  });

  it('an answer past the cap fails as `invalid`, aborts the request (closing its socket) and leaves no timer', async () => {
    const seen: { signal?: AbortSignal | null } = {};
    const response = await boundedFetch(answering(10_241, seen), { deadlineMs: 1000, maxAnswerBytes: 10_240 })('http://u/mcp', { method: 'POST' });
    const failure = await response.text().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect(failure).toMatchObject({ kind: 'invalid', message: 'the upstream MCP server answered more than 10240 bytes' });
    expect(seen.signal?.aborted).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('past the deadline the request is aborted as a timeout', async () => {
    const seen: { signal?: AbortSignal | null } = {};
    await boundedFetch(answering(100, seen), { deadlineMs: 1000, maxAnswerBytes: 10_240 })('http://u/mcp', { method: 'POST' });
    jest.advanceTimersByTime(999);
    expect(seen.signal?.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect(seen.signal?.aborted).toBe(true);
    expect(seen.signal?.reason).toMatchObject({ kind: 'timeout' });
  });

  it("a GET (the session's standalone stream) is neither timed nor capped", async () => {
    const seen: { signal?: AbortSignal | null } = {};
    const response = await boundedFetch(answering(50_000, seen), { deadlineMs: 1000, maxAnswerBytes: 10_240 })('http://u/mcp', { method: 'GET' });
    expect(jest.getTimerCount()).toBe(0);
    expect((await response.arrayBuffer()).byteLength).toBe(50_000);
  });

  it('the transport aborting the request (its client closed) clears the deadline', async () => {
    const closing = new AbortController();
    await boundedFetch(answering(100, {}), { deadlineMs: 1000, maxAnswerBytes: 10_240 })('http://u/mcp', { method: 'POST', signal: closing.signal });
    expect(jest.getTimerCount()).toBe(1);
    closing.abort();
    expect(jest.getTimerCount()).toBe(0);
  });
});
