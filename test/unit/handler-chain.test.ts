import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { handlerChain } from '../../src/http/handler-chain';

const req = {} as Request;
const res = {} as Response;

/** Runs the chain once; resolves with what reached `done` and the order the handlers ran in. */
function run(handlers: (ran: string[]) => RequestHandler[]): Promise<{ ran: string[]; done: unknown[] }> {
  const ran: string[] = [];
  return new Promise((resolve) => {
    handlerChain(handlers(ran))(req, res, ((...args: unknown[]) => resolve({ ran, done: args })) as NextFunction);
  });
}

describe('handlerChain', () => {
  it('runs the handlers in order, each on its next, then goes on', async () => {
    const step = (ran: string[], name: string): RequestHandler => (_q, _s, next) => {
      ran.push(name);
      next();
    };
    expect(await run((ran) => [step(ran, 'a'), step(ran, 'b'), step(ran, 'c')])).toEqual({ ran: ['a', 'b', 'c'], done: [] });
  });

  it('stops at a handler that answers without calling next', async () => {
    const ran: string[] = [];
    let doneCalled = false;
    handlerChain([(_q, _s, next) => (ran.push('a'), next()), () => void ran.push('b'), () => void ran.push('c')])(req, res, () => (doneCalled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect({ ran, doneCalled }).toEqual({ ran: ['a', 'b'], doneCalled: false });
  });

  it.each([
    ['next(error)', (error: Error): RequestHandler => (_q, _s, next) => next(error)],
    ['a thrown error', (error: Error): RequestHandler => () => {
      throw error;
    }],
    ['a rejected promise', (error: Error): RequestHandler => () => Promise.reject(error)],
    ['an async handler that throws after a wait', (error: Error): RequestHandler => async () => {
      await Promise.resolve();
      throw error;
    }],
  ])('passes %s to done, and runs nothing after it', async (_name, failing) => {
    const error = new Error('boom');
    const result = await run((ran) => [failing(error), () => void ran.push('after')]);
    expect(result).toEqual({ ran: [], done: [error] });
  });
});

it('passes a promise rejected with an empty value as an error, as Express does, never as "go on"', async () => {
  const result = await run((ran) => [() => Promise.reject(''), () => void ran.push('after')]);
  expect(result.ran).toEqual([]);
  expect(result.done[0]).toEqual(new Error('Rejected promise'));
});
