import type { CallerSignal } from './caller-signal';

/**
 * The requests a shared transport has handed to its one server and not seen
 * answered: each under an id of the transport's own, each with its caller's
 * signal. A caller that goes away is resolved with undefined at once, and the
 * server is told (`cancel`), as the SDK tells a handler of a cancel through
 * its request signal: a held gateway call is then not forwarded.
 */
export class PendingExchanges<A> {
  private nextId = 0;
  private readonly waiting = new Map<number, (answer: A) => void>();

  /** Requests handed over and not answered yet. */
  get size(): number {
    return this.waiting.size;
  }

  /** Hands one request to `deliver` under a new id; resolves with its answer, or undefined once `signal` aborts. */
  start(signal: CallerSignal, deliver: (id: number) => void, cancel: (id: number) => void): Promise<A | undefined> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      if (signal.aborted) {
        resolve(undefined);
        return;
      }
      const abandon = (): void => {
        this.waiting.delete(id);
        resolve(undefined);
        cancel(id);
      };
      signal.addEventListener('abort', abandon, { once: true });
      this.waiting.set(id, (answer) => {
        signal.removeEventListener('abort', abandon);
        resolve(answer);
      });
      deliver(id);
    });
  }

  /** Answers request `id`; false when nobody waits for it (abandoned, or never ours). */
  settle(id: number, answer: A): boolean {
    const waiter = this.waiting.get(id);
    if (waiter === undefined) return false;
    this.waiting.delete(id);
    waiter(answer);
    return true;
  }

  has(id: number): boolean {
    return this.waiting.has(id);
  }

  clear(): void {
    this.waiting.clear();
  }
}

/** The notification that tells the server a request's caller went away. */
export function callerLeft(requestId: number): { jsonrpc: '2.0'; method: 'notifications/cancelled'; params: { requestId: number; reason: string } } {
  return { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'the caller disconnected' } };
}
