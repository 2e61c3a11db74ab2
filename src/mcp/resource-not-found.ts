/**
 * Which JSON-RPC code says "no such resource" depends on the protocol the
 * caller speaks: the 2025-06-18 and 2025-11-25 specs name -32002 (Resource
 * not found); 2026-07-28 (SEP-2164) standardised -32602 (Invalid Params),
 * asking clients to accept -32002 as well. The SDK 2.x answers -32602 in
 * both eras, so 2025-era answers are rewritten here: a -32602 whose data
 * names the `uri` is the SDK's ResourceNotFoundError, nothing else is.
 */
export const RESOURCE_NOT_FOUND_2025 = -32002;
const INVALID_PARAMS = -32602;

/** True when the request (a message or a batch) reads a resource, the only case worth looking at the answer for. */
export function readsResource(body: unknown): boolean {
  const messages: readonly unknown[] = Array.isArray(body) ? body : [body];
  return messages.some((message) => (message as { method?: unknown } | null)?.method === 'resources/read');
}

/** The 2025-era answer for a parsed JSON-RPC response or batch of them; anything else is returned as it came. */
export function withResourceNotFound2025(answer: unknown): unknown {
  if (Array.isArray(answer)) return answer.map(rewrite);
  return rewrite(answer);
}

function rewrite(message: unknown): unknown {
  const error = (message as { error?: { code?: unknown; data?: unknown } } | null)?.error;
  if (error?.code !== INVALID_PARAMS) return message;
  const uri = (error.data as { uri?: unknown } | null | undefined)?.uri;
  if (typeof uri !== 'string') return message;
  return { ...(message as object), error: { ...error, code: RESOURCE_NOT_FOUND_2025 } };
}
