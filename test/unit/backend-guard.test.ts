import { DeadlineGuard } from '../support/deadline-guard';
import { describeError } from '../../src/shared/describe-error';
import { withDeadline } from '../../src/library/limiter/backend-guard';
import { createCapturingLogger } from '../support/capturing-logger';

afterEach(() => {
  jest.useRealTimers();
});

describe('withDeadline', () => {
  it('returns the value of a call that settles before the deadline', async () => {
    await expect(withDeadline(async () => 42, 1_000)).resolves.toEqual({ ok: true, value: 42 });
  });

  it('reports a rejected call as cause "error" with the error attached', async () => {
    const boom = new Error('boom');
    await expect(withDeadline(() => Promise.reject(boom), 1_000)).resolves.toEqual({ ok: false, cause: 'error', error: boom });
  });

  it('answers a hanging call with cause "timeout" exactly at the deadline, not before', async () => {
    jest.useFakeTimers();
    let settled: unknown;
    void withDeadline(() => new Promise<never>(() => undefined), 1_500).then((r) => {
      settled = r;
    });
    await jest.advanceTimersByTimeAsync(1_499);
    expect(settled).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    // `late` is the call's own outcome, for the write-back to learn whether it landed after all (ADR 0046).
    expect(settled).toEqual({ ok: false, cause: 'timeout', late: expect.any(Promise) });
  });

  it('ignores a call that settles after the deadline has already answered', async () => {
    jest.useFakeTimers();
    let resolveLate: (v: number) => void = () => undefined;
    const pending = withDeadline(() => new Promise<number>((r) => (resolveLate = r)), 100);
    await jest.advanceTimersByTimeAsync(100);
    resolveLate(7);
    await expect(pending).resolves.toEqual({ ok: false, cause: 'timeout', late: expect.any(Promise) });
  });

  it('clears its timer when the call wins, leaving no timer behind', async () => {
    jest.useFakeTimers();
    await withDeadline(async () => 'fast', 10_000);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('reports a call that throws synchronously as cause "error"', async () => {
    const boom = new Error('sync boom');
    const result = await withDeadline((): Promise<number> => {
      throw boom;
    }, 1_000);
    expect(result).toEqual({ ok: false, cause: 'error', error: boom });
  });
});

describe('describeError', () => {
  it.each([
    { name: 'a plain Error', error: new Error('x'), expected: 'Error' },
    { name: 'a named error with a string code', error: Object.assign(new TypeError('x'), { code: 'ECONNREFUSED' }), expected: 'TypeError:ECONNREFUSED' },
    { name: 'a numeric code', error: Object.assign(new Error('x'), { code: 503 }), expected: 'Error:503' },
    { name: 'an object without name', error: { code: 'E1' }, expected: 'Error:E1' },
    { name: 'a string thrown as-is', error: 'redis://:pw@host', expected: 'string' },
    { name: 'a number', error: 5, expected: 'number' },
    { name: 'undefined', error: undefined, expected: undefined },
    { name: 'null', error: null, expected: undefined },
  ])('describes $name by class and code only', ({ error, expected }) => {
    expect(describeError(error)).toBe(expected);
  });

  it.each([
    { name: 'an Error whose message holds a URL with a password', error: new Error('connect failed: redis://:pw@host:6379') },
    { name: 'a coded error whose message holds a password', error: Object.assign(new Error('auth pw rejected for redis://user:pw@host'), { code: 'ERR_AUTH' }) },
    { name: 'an error with a cause holding the password', error: new Error('wrapped', { cause: new Error('redis://:pw@host') }) },
    { name: 'a string error holding the password', error: 'redis://:pw@host' },
  ])('never includes the message: $name', ({ error }) => {
    const described = describeError(error) ?? '';
    expect(described).not.toContain('pw');
    expect(described).not.toContain('redis://');
  });
});

describe('DeadlineGuard', () => {
  it('logs a failure once with the backend, cause and a message-free error description', async () => {
    const logger = createCapturingLogger();
    const guard = new DeadlineGuard({ backend: 'redis', timeoutMs: 1_000, logger });
    const result = await guard.run(() => Promise.reject(Object.assign(new Error('redis://:pw@host'), { code: 'ECONNRESET' })));
    expect(result).toMatchObject({ ok: false, cause: 'error' });
    expect(logger.entries).toHaveLength(1);
    expect(logger.entries[0]?.fields).toMatchObject({ backend: 'redis', cause: 'error', error: 'Error:ECONNRESET' });
    expect(JSON.stringify(logger.entries)).not.toContain('pw');
  });

  it('does not log a successful call', async () => {
    const logger = createCapturingLogger();
    const guard = new DeadlineGuard({ backend: 'rtdb', timeoutMs: 1_000, logger });
    await expect(guard.run(async () => 'ok')).resolves.toEqual({ ok: true, value: 'ok' });
    expect(logger.entries).toHaveLength(0);
  });
});
