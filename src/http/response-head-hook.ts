import { ServerResponse } from 'node:http';
import type { Express, Response } from 'express';

/** Told once, just before the status line and headers go out, while headers can still be set. */
export interface HeadHook {
  beforeHead(res: Response): void;
}

const HOOK = Symbol('responseHeadHook');
type HookedResponse = Response & { [HOOK]?: HeadHook };

const baseWriteHead = ServerResponse.prototype.writeHead;

/**
 * Every way a response's head is written goes through writeHead (res.json,
 * res.end, a stream: Node's implicit header calls it too). Defined once on
 * the app's response prototype, so a request that needs to act at that moment
 * sets one property instead of wrapping writeHead itself: replacing a method
 * on every response cost the /mcp path about 4 % of its CPU (the
 * refused-request budget did it on every request, issue 22).
 */
function writeHeadWithHook(this: HookedResponse, ...args: Parameters<ServerResponse['writeHead']>): ServerResponse {
  const hook = this[HOOK];
  if (hook !== undefined) {
    this[HOOK] = undefined;
    if (typeof args[0] === 'number') this.statusCode = args[0];
    hook.beforeHead(this);
  }
  return baseWriteHead.apply(this, args);
}

/** Gives every response of `app` the hook point; the composition root calls it once, before any route. */
export function installHeadHooks(app: Express): void {
  (app.response as { writeHead: unknown }).writeHead = writeHeadWithHook;
}

/**
 * Runs `hook.beforeHead(res)` once, when the head is written. One hook per
 * response; a response of an app without installHeadHooks is refused loudly,
 * since the hook would never run.
 */
export function onResponseHead(res: Response, hook: HeadHook): void {
  // The prototype's, not res.writeHead: another step may have wrapped this response's own (lingering-close.ts).
  if ((Object.getPrototypeOf(res) as Partial<Response>).writeHead !== writeHeadWithHook) {
    throw new Error('onResponseHead needs installHeadHooks(app) on the app serving this response');
  }
  const hooked = res as HookedResponse;
  if (hooked[HOOK] !== undefined) throw new Error('onResponseHead: this response already has a head hook');
  hooked[HOOK] = hook;
}
