/** Where a request sits in a distributed trace, in the form Cloud Logging correlates on. */
export interface TraceContext {
  /** `projects/PROJECT/traces/TRACE_ID` when the project is known, else the bare 32-hex trace id. */
  readonly trace: string;
  /** 16 hex characters. */
  readonly spanId?: string;
  readonly traceSampled?: boolean;
}

type HeaderValue = string | string[] | undefined;

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const CLOUD_TRACE = /^([0-9a-fA-F]{32})(?:\/(\d{1,20}))?(?:;o=([01]))?$/;
const ALL_ZERO = /^0+$/;

function first(value: HeaderValue): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v?.trim() || undefined;
}

/** `projects/P/traces/T`, the only form Cloud Logging links to Cloud Trace; the bare id without a project. */
export function qualifyTrace(traceId: string, projectId: string | undefined): string {
  if (traceId.startsWith('projects/') || projectId === undefined || projectId === '') return traceId;
  return `projects/${projectId}/traces/${traceId}`;
}

/**
 * W3C `traceparent` wins (it is what OpenTelemetry propagates); Google's
 * `X-Cloud-Trace-Context` (TRACE/SPAN_DECIMAL;o=1), which Cloud Run's front
 * end adds, is the fallback. Malformed headers give no context rather than a wrong one.
 */
export function traceContextFromHeaders(
  headers: Readonly<Record<string, HeaderValue>>,
  projectId?: string,
): TraceContext | undefined {
  const parent = first(headers.traceparent)?.toLowerCase();
  const w3c = parent === undefined ? null : TRACEPARENT.exec(parent);
  if (w3c && w3c[1] !== 'ff' && !ALL_ZERO.test(w3c[2] as string) && !ALL_ZERO.test(w3c[3] as string)) {
    return {
      trace: qualifyTrace(w3c[2] as string, projectId),
      spanId: w3c[3] as string,
      traceSampled: (parseInt(w3c[4] as string, 16) & 1) === 1,
    };
  }
  const cloud = CLOUD_TRACE.exec(first(headers['x-cloud-trace-context']) ?? '');
  if (cloud && !ALL_ZERO.test(cloud[1] as string)) {
    const span = cloud[2] === undefined ? undefined : BigInt(cloud[2]);
    return {
      trace: qualifyTrace((cloud[1] as string).toLowerCase(), projectId),
      // Cloud Logging wants the span as 16 hex digits; this header carries it in decimal.
      spanId: span === undefined || span === 0n || span >= 2n ** 64n ? undefined : span.toString(16).padStart(16, '0'),
      traceSampled: cloud[3] === undefined ? undefined : cloud[3] === '1',
    };
  }
  return undefined;
}
