import { CallerGone } from '../../src/mcp/caller-signal';

describe('CallerGone', () => {
  it('runs each listener once when the caller goes, not the ones removed, and none added after', () => {
    const gone = new CallerGone();
    const heard: string[] = [];
    const removed = (): void => void heard.push('removed');
    gone.addEventListener('abort', () => heard.push('a'));
    gone.addEventListener('abort', removed);
    gone.addEventListener('abort', () => heard.push('b'));
    gone.removeEventListener('abort', removed);
    expect(gone.aborted).toBe(false);
    gone.abort();
    gone.abort();
    gone.addEventListener('abort', () => heard.push('late'));
    expect({ aborted: gone.aborted, heard }).toEqual({ aborted: true, heard: ['a', 'b'] });
  });

  it('gives a real AbortSignal that aborts with it, whether asked for before or after', () => {
    const before = new CallerGone();
    const early = before.asAbortSignal();
    expect(early.aborted).toBe(false);
    before.abort();
    expect(early.aborted).toBe(true);
    const after = new CallerGone();
    after.abort();
    expect(after.asAbortSignal().aborted).toBe(true);
  });
});
