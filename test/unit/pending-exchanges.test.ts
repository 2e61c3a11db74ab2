import { callerLeft, PendingExchanges } from '../../src/mcp/pending-exchanges';

describe('PendingExchanges: requests handed to a shared server, each with its caller', () => {
  it('delivers under ids of its own and resolves each with its own answer', async () => {
    const pending = new PendingExchanges<string>();
    const delivered: number[] = [];
    const a = pending.start(new AbortController().signal, (id) => delivered.push(id), () => undefined);
    const b = pending.start(new AbortController().signal, (id) => delivered.push(id), () => undefined);
    expect(delivered).toEqual([1, 2]);
    expect(pending.size).toBe(2);
    expect(pending.settle(2, 'two')).toBe(true);
    expect(pending.settle(1, 'one')).toBe(true);
    expect(await Promise.all([a, b])).toEqual(['one', 'two']);
    expect(pending.size).toBe(0);
    expect(pending.settle(1, 'again')).toBe(false);
  });

  it('a caller that leaves is resolved with undefined at once, and the server told once; a late answer finds nobody', async () => {
    const pending = new PendingExchanges<string>();
    const controller = new AbortController();
    const cancelled: number[] = [];
    const answer = pending.start(controller.signal, () => undefined, (id) => cancelled.push(id));
    controller.abort();
    expect(await answer).toBeUndefined();
    expect(cancelled).toEqual([1]);
    expect(pending.has(1)).toBe(false);
    expect(pending.settle(1, 'late')).toBe(false);
  });

  it('a caller already gone is neither delivered nor cancelled', async () => {
    const pending = new PendingExchanges<string>();
    const controller = new AbortController();
    controller.abort();
    const deliver = jest.fn();
    const cancel = jest.fn();
    expect(await pending.start(controller.signal, deliver, cancel)).toBeUndefined();
    expect(deliver).not.toHaveBeenCalled();
    expect(cancel).not.toHaveBeenCalled();
  });

  it('an answered request stops listening: a later abort cancels nothing', async () => {
    const pending = new PendingExchanges<string>();
    const controller = new AbortController();
    const cancel = jest.fn();
    const answer = pending.start(controller.signal, (id) => pending.settle(id, 'done'), cancel);
    expect(await answer).toBe('done');
    controller.abort();
    expect(cancel).not.toHaveBeenCalled();
  });

  it('clear forgets every waiter', () => {
    const pending = new PendingExchanges<string>();
    void pending.start(new AbortController().signal, () => undefined, () => undefined);
    pending.clear();
    expect(pending.size).toBe(0);
  });

  it('the cancel notification names the request and why', () => {
    expect(callerLeft(7)).toEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'the caller disconnected' } });
  });
});
