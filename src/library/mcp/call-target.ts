/**
 * What one JSON-RPC message asks for, as far as pricing it goes: the method
 * and, for `tools/call`, the tool's name. A response the client sends back
 * (to a server request) has no method and is priced as protocol chatter.
 */
export interface CallTarget {
  readonly method: string;
  /** Only for tools/call with a string `params.name`. */
  readonly tool?: string;
}

/** The method given to a message that names none: a client's JSON-RPC response. */
export const RESPONSE_METHOD = '(response)';

/** One target per message of a parsed (shape-checked) body: a batch gives one per entry, in order. */
export function callTargetsOf(body: unknown): CallTarget[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.map(targetOf);
}

function targetOf(message: unknown): CallTarget {
  if (message === null || typeof message !== 'object') return { method: RESPONSE_METHOD };
  const { method, params } = message as { method?: unknown; params?: unknown };
  if (typeof method !== 'string') return { method: RESPONSE_METHOD };
  if (method !== 'tools/call' || params === null || typeof params !== 'object') return { method };
  const name = (params as { name?: unknown }).name;
  return typeof name === 'string' ? { method, tool: name } : { method };
}
