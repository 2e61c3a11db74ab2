import { createServer, IncomingMessage, ServerResponse, type RequestListener, type Server, type ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import { deferringContinue } from '../http/expect-continue';

/** What an Express app gives every request and response it handles as their prototype. */
interface PrototypedApp {
  readonly request: object;
  readonly response: object;
}

/**
 * Node's http server options that create each request and response with the
 * Express app's own prototypes (`app.request`, `app.response`) from the
 * start. Express gives them those prototypes at the top of every request
 * (`Object.setPrototypeOf`); done to an object V8 has already shaped, that
 * turns it into a slow, dictionary-like object for every property access that
 * follows, ours and Node's. On Node 20 it tripled what Express costs a
 * request (a JSON POST: 158 µs of CPU against 55 µs with the prototypes
 * preset, ADR 0069); setting a prototype an object already has changes nothing.
 * Node's own constructors still build the objects: only their prototype is
 * chosen, which the `IncomingMessage` and `ServerResponse` options exist for.
 */
export function expressServerOptions(app: PrototypedApp): Pick<ServerOptions, 'IncomingMessage' | 'ServerResponse'> {
  // Functions, not classes: a class's prototype cannot be set to an existing object, and it must be app.request itself.
  function ExpressIncomingMessage(this: IncomingMessage, socket: Socket): void {
    Reflect.apply(IncomingMessage, this, [socket]);
  }
  ExpressIncomingMessage.prototype = app.request;
  function ExpressServerResponse(this: ServerResponse, req: IncomingMessage, options?: object): void {
    Reflect.apply(ServerResponse, this, [req, options]);
  }
  ExpressServerResponse.prototype = app.response;
  return {
    IncomingMessage: ExpressIncomingMessage as unknown as typeof IncomingMessage,
    ServerResponse: ExpressServerResponse as unknown as typeof ServerResponse,
  };
}

/**
 * The service's HTTP server for `handler`: an Express app's requests are
 * built with its prototypes (expressServerOptions), and `Expect:
 * 100-continue` is answered by our body reader, after the checks that need no
 * body, not by Node at once.
 */
export function createServiceServer(handler: RequestListener): Server {
  const app = handler as RequestListener & Partial<PrototypedApp>;
  const options = typeof app.request === 'object' && typeof app.response === 'object' ? expressServerOptions(app as PrototypedApp) : {};
  const server = createServer(options, handler);
  server.on('checkContinue', deferringContinue(handler));
  return server;
}
