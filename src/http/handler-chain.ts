import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * `handlers` run as one route handler, in order, each calling `next` to go
 * on, as Express would run them mounted side by side, without the router's
 * per-handler dispatch (a layer, a method match and a promise check each;
 * on /mcp, ten of them a request). The same contract as Express 5's: a
 * thrown error or a rejected returned promise is passed to `done` as an
 * error, as is any truthy `next(error)`. `next('route')` is not offered:
 * nothing on the chain uses it.
 */
export function handlerChain(handlers: readonly RequestHandler[]): RequestHandler {
  return function chained(req: Request, res: Response, done: NextFunction): void {
    let index = 0;
    const next = (error?: unknown): void => {
      if (error) {
        done(error);
        return;
      }
      const handler = handlers[index++];
      if (handler === undefined) {
        done();
        return;
      }
      try {
        const result: unknown = handler(req, res, next);
        if (result instanceof Promise) result.catch((rejection: unknown) => done(rejection || new Error('Rejected promise')));
      } catch (thrown) {
        done(thrown);
      }
    };
    next();
  };
}
