/** What the shared exchanges read of a caller's going away; an AbortSignal is one. */
export interface CallerSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { readonly once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A CallerSignal for one request, without an AbortController: Node's is an
 * EventTarget with its own event objects, made per request for the rare
 * caller that leaves before its answer. A real AbortSignal is made only when
 * something needs one (`asAbortSignal`: the SDK's entry takes a web Request).
 */
export class CallerGone implements CallerSignal {
  private listeners: (() => void)[] = [];
  private controller?: AbortController;
  private gone = false;

  get aborted(): boolean {
    return this.gone;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.gone) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    this.listeners = this.listeners.filter((l) => l !== listener);
  }

  /** Once: every listener runs one time, as with `{ once: true }` on an AbortSignal. */
  abort(): void {
    if (this.gone) return;
    this.gone = true;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
    this.controller?.abort();
  }

  asAbortSignal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.gone) this.controller.abort();
    return this.controller.signal;
  }
}
