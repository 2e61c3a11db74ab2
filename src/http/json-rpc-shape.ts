/**
 * The JSON-RPC message shapes of the MCP SDK (2.x: JSONRPCRequestSchema,
 * JSONRPCNotificationSchema, JSONRPCResultResponseSchema,
 * JSONRPCErrorResponseSchema), in plain code. The SDK's guards are zod
 * parses, and a parse that fails builds its issue objects: every request
 * failed the two response guards before passing the request one, three times
 * a message. These give the same verdict on every value (pinned by a property
 * test against the SDK's own guards, test/unit/json-rpc-shape.test.ts) for a
 * fraction of the work; a value they accept is handed on as a checked message.
 */

type Json = Record<string, unknown>;

/** What zod's object() accepts: any non-null, non-array object. */
function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** z.number().int() in zod 4: a safe integer (which excludes NaN and the infinities). */
function isSafeInteger(value: unknown): boolean {
  return Number.isSafeInteger(value);
}

/** RequestIdSchema: a string or an integer. */
function isRequestId(value: unknown): boolean {
  return typeof value === 'string' || isSafeInteger(value);
}

/** A strict object's keys: every own enumerable key one of `allowed`. */
function onlyKeys(value: Json, allowed: ReadonlySet<string>): boolean {
  for (const key in value) if (Object.hasOwn(value, key) && !allowed.has(key)) return false;
  return true;
}

const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';

/** RequestMetaSchema (loose): progressToken a string or integer, the related-task key an object with a string taskId, when present. */
function isRequestMeta(value: unknown): boolean {
  if (!isObject(value)) return false;
  if (value.progressToken !== undefined && !isRequestId(value.progressToken)) return false;
  const task = value[RELATED_TASK_META_KEY];
  return task === undefined || (isObject(task) && typeof task.taskId === 'string');
}

/** A request's or a notification's params (loose): absent, or an object whose _meta, when present, is request metadata. */
function isParams(value: unknown): boolean {
  if (value === undefined) return true;
  return isObject(value) && (value._meta === undefined || isRequestMeta(value._meta));
}

const REQUEST_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params']);
const NOTIFICATION_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'method', 'params']);
const RESULT_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'result']);
const ERROR_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'error']);

export function isJsonRpcRequest(value: unknown): boolean {
  return isObject(value) && value.jsonrpc === '2.0' && isRequestId(value.id) && typeof value.method === 'string' && isParams(value.params) && onlyKeys(value, REQUEST_KEYS);
}

export function isJsonRpcNotification(value: unknown): boolean {
  return isObject(value) && value.jsonrpc === '2.0' && typeof value.method === 'string' && isParams(value.params) && onlyKeys(value, NOTIFICATION_KEYS);
}

/** ResultSchema is loose, and its _meta's serverInfo is `.catch(undefined)`: any object with an object (or no) _meta. */
export function isJsonRpcResultResponse(value: unknown): boolean {
  if (!isObject(value) || value.jsonrpc !== '2.0' || !isRequestId(value.id) || !isObject(value.result)) return false;
  const meta = value.result._meta;
  return (meta === undefined || isObject(meta)) && onlyKeys(value, RESULT_KEYS);
}

export function isJsonRpcErrorResponse(value: unknown): boolean {
  if (!isObject(value) || value.jsonrpc !== '2.0' || (value.id !== undefined && !isRequestId(value.id)) || !isObject(value.error)) return false;
  const { code, message } = value.error;
  return isSafeInteger(code) && typeof message === 'string' && onlyKeys(value, ERROR_KEYS);
}

/** Any of the four, most frequent first. */
export function isJsonRpcMessage(value: unknown): boolean {
  return isJsonRpcRequest(value) || isJsonRpcNotification(value) || isJsonRpcResultResponse(value) || isJsonRpcErrorResponse(value);
}
