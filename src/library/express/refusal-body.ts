import type { Request, Response } from 'express';
import type { Decision } from '../window/decision';
import { publishedLimit, publishedLimitWords } from './published-limit';
import { secondsUntil } from './rate-limit-headers';

/** HTTP status for a refusal: 503 when the backend is down and the policy is fail-closed, else 429. */
export function refusalStatus(decision: Decision): 429 | 503 {
  return decision.reason === 'backend_unavailable' ? 503 : 429;
}

/** A plain-language body a person or a script can act on. */
export function refusalBody(decision: Decision): Record<string, unknown> {
  const retryAfterSeconds = secondsUntil(decision.retryAfterMs);
  if (decision.reason === 'backend_unavailable') {
    return {
      error: 'backend_unavailable',
      reason: decision.reason,
      message: `The rate-limit backend is unavailable and this service refuses requests it cannot count. Retry after ${retryAfterSeconds} s.`,
      retryAfterSeconds,
    };
  }
  const published = publishedLimit(decision);
  return {
    error: 'rate_limited',
    reason: decision.reason,
    message: `Rate limit of ${publishedLimitWords(published)} exceeded. Retry after ${retryAfterSeconds} s.`,
    limit: published.perWindow,
    windowSeconds: published.windowSeconds,
    ...(published.burst === undefined ? {} : { burst: published.burst }),
    retryAfterSeconds,
    resetAt: new Date(decision.resetAtMs).toISOString(),
  };
}

export function writeJsonRefusal(_req: Request, res: Response, decision: Decision): void {
  res.status(refusalStatus(decision)).json(refusalBody(decision));
}
