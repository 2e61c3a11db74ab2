import http, { type IncomingHttpHeaders } from 'node:http';

/** One policy as the rate_limit_status tool describes it. */
export interface StatusPolicy {
  readonly name: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowSeconds: number;
  readonly burst?: number;
  readonly remaining: number;
  readonly resetAt: string;
  /** tier, free, rule or tool (ADR 0027). */
  readonly scope?: string;
}

/** The rate_limit_status tool's structured result (the fields these tests read). */
export interface StatusContent {
  readonly tier: string;
  readonly limit: number;
  readonly remaining: number;
  readonly shared: boolean;
  readonly reason: string;
  readonly backend: string;
  readonly policies: readonly StatusPolicy[];
}

/** A rate-limit refusal's JSON-RPC `error.data` (src/library/express/refusal-body.ts). */
export interface RefusalData {
  readonly error: string;
  readonly reason: string;
  readonly limit?: number;
  readonly windowSeconds?: number;
  readonly retryAfterSeconds: number;
  readonly resetAt?: string;
}

export interface McpBody {
  readonly result?: { readonly structuredContent?: StatusContent };
  readonly error?: { readonly code: number; readonly message: string; readonly data?: RefusalData };
}

/**
 * Timed JSON-RPC calls to a running server's /mcp, for tests that reason about
 * when a decision was made. The server's clock is this machine's clock, so a
 * decision taken for a call happened at or after `sentAtMs` and at or before
 * `receivedAtMs`: the bounds an assertion about time may rely on.
 */
export interface TimedResponse {
  readonly port: number;
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body (a body that is not JSON is reported as an error with code 0). */
  readonly body: McpBody;
  /** Date.now() just before the request was written. */
  readonly sentAtMs: number;
  /** Date.now() once the whole response had arrived. */
  readonly receivedAtMs: number;
}

/** POSTs `payload` to /mcp on 127.0.0.1:port with a bearer token, on a fresh connection (no keep-alive reuse races). */
export function postMcp(port: number, secret: string, payload: unknown): Promise<TimedResponse> {
  const data = JSON.stringify(payload);
  return new Promise((resolve, reject) => {
    const sentAtMs = Date.now();
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        agent: false,
        headers: {
          Host: `localhost:${port}`,
          Authorization: `Bearer ${secret}`,
          Accept: 'application/json, text/event-stream',
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(data),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', reject);
        res.on('end', () => {
          const receivedAtMs = Date.now();
          let body: McpBody;
          try {
            body = JSON.parse(text) as McpBody;
          } catch {
            body = { error: { code: 0, message: `not JSON: ${text.slice(0, 200)}` } };
          }
          resolve({ port, status: res.statusCode ?? 0, headers: res.headers, body, sentAtMs, receivedAtMs });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** One `tools/call` of the rate_limit_status tool: charged like any call, and its result describes every policy. */
export function callStatus(port: number, secret: string, id: number | string = 1): Promise<TimedResponse> {
  return postMcp(port, secret, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'rate_limit_status', arguments: {} } });
}

/**
 * `calls` status calls at once, call i on ports[i % ports.length]: a burst
 * spread over every process, all in flight together. In the order sent.
 */
export function burst(ports: readonly number[], secret: string, calls: number): Promise<TimedResponse[]> {
  return Promise.all(Array.from({ length: calls }, (_, i) => callStatus(ports[i % ports.length] as number, secret, i)));
}

/**
 * Authenticates `secret` on the server (its verifier caches the token)
 * without spending any rate limit: the body is not a JSON-RPC message, so it
 * is refused (400) after auth and before the limiter. Later bursts then do
 * not pay for a first sign-in. Resolves with the status, expected 400.
 */
export async function warmToken(port: number, secret: string): Promise<number> {
  return (await postMcp(port, secret, { warm: true })).status;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

export function sleepUntil(epochMs: number): Promise<void> {
  return sleep(epochMs - Date.now());
}

/**
 * Waits, if needed, so that at least `needMs` of the current clock window
 * [n·windowMs, (n+1)·windowMs) is left; otherwise until just after the next
 * boundary. Resolves with the start of the window the caller is now in.
 */
export async function roomInWindow(windowMs: number, needMs: number): Promise<number> {
  const now = Date.now();
  const start = now - (now % windowMs);
  if (start + windowMs - now >= needMs) return start;
  await sleepUntil(start + windowMs + 30);
  return start + windowMs;
}

/** Makes `call` until one rejects, at most `attempts` times: what a client throws once the limit is spent (undefined if no call failed). */
export async function firstRejection(call: () => Promise<unknown> | undefined, attempts = 5): Promise<unknown> {
  for (let i = 0; i < attempts; i++) {
    const failure = await call()?.then(
      () => undefined,
      (error: unknown) => error,
    );
    if (failure !== undefined) return failure;
  }
  return undefined;
}
