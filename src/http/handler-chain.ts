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
    new ChainRun(handlers, req, res, done).next();
  };
}

/**
 * One request's walk along the chain. `next` is a bound method, not a named
 * closure: under tsx (what `npm start` runs) every named closure built per
 * request also costs a `defineProperty` for its name.
 */
class ChainRun {
  private index = 0;
  readonly next: (error?: unknown) => void = this.step.bind(this);

  constructor(
    private readonly handlers: readonly RequestHandler[],
    private readonly req: Request,
    private readonly res: Response,
    private readonly done: NextFunction,
  ) {}

  private step(error?: unknown): void {
    const { done } = this;
    if (error) {
      done(error);
      return;
    }
    const handler = this.handlers[this.index++];
    if (handler === undefined) {
      done();
      return;
    }
    try {
      const result: unknown = handler(this.req, this.res, this.next);
      if (result instanceof Promise) result.catch((rejection: unknown) => done(rejection || new Error('Rejected promise')));
    } catch (thrown) {
      done(thrown);
    }
  }
}
