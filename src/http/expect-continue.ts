import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

/** Requests whose `100 Continue` Node left to us (a 'checkContinue' listener is installed). */
const deferred = new WeakSet<IncomingMessage>();

/**
 * The server's 'checkContinue' listener. Without one, Node answers
 * `Expect: 100-continue` with `100 Continue` before any handler runs, so a
 * client was invited to send its megabyte before we knew it had a token or
 * that the body could fit. With this, the request is handled as any other
 * and the invitation waits for the body reader (`continueIfDeferred`), which
 * runs only after the checks that need no body (Host, Content-Length, auth,
 * the refused-request budget, Content-Type). A request refused before it
 * gets a final answer and no `100` (RFC 9110 §10.1.1).
 */
export function deferringContinue(handler: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    deferred.add(req);
    handler(req, res);
  };
}

/** Called by the body reader right before it reads: the client may send its body now. */
export function continueIfDeferred(req: IncomingMessage, res: ServerResponse): void {
  if (deferred.delete(req) && !res.headersSent) res.writeContinue();
}
