import type { AuthInfo } from '@modelcontextprotocol/server';
import type { ToolContext } from './tool-registry';

/** Where on the SDK's AuthInfo the call's context rides; a key no other code writes. */
const CONTEXT_KEY = 'firelimit.toolContext';

/**
 * The SDK hands each request handler the AuthInfo its transport was given
 * (`ctx.http.authInfo`), request by request. That is how one server, built
 * once, answers every caller with the caller's own token and decision: the
 * context travels with the request, never on the server. `token` carries the
 * public token id, not the secret, which never leaves the auth middleware.
 */
export function authInfoFor(context: ToolContext): AuthInfo {
  return {
    token: context.token.id,
    clientId: context.token.id,
    scopes: [...context.token.scopes],
    extra: { [CONTEXT_KEY]: context },
  };
}

/** The context of the request a handler is answering; undefined when the request came without one (a wiring mistake). */
export function toolContextOf(handlerContext: { readonly http?: { readonly authInfo?: AuthInfo } }): ToolContext | undefined {
  const context = handlerContext.http?.authInfo?.extra?.[CONTEXT_KEY];
  return context === undefined ? undefined : (context as ToolContext);
}
