import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BackendName, Decision, LimiterEvents } from '../library';

export interface LimiterMetricsOptions {
  /** Where the series live. Default: a fresh Registry of its own (never prom-client's global one). */
  readonly registry?: Registry;
  /** Also collect prom-client's default process metrics (CPU, memory, event loop), prefixed firelimit_. Default false. */
  readonly processMetrics?: boolean;
  /**
   * Which limiter the series describe. Default the per-token limiter, whose
   * series are `firelimit_decisions_total` and so on; `'sign_in'` (the failed
   * sign-in budget) gives the same series named `firelimit_sign_in_...`, so
   * one registry holds both and neither limiter's figures hide the other's.
   */
  readonly limiter?: 'token' | 'sign_in';
}

/** Series name prefix and help-text lead of each limiter. */
const SUBJECTS = {
  token: { prefix: 'firelimit_', lead: '' },
  sign_in: { prefix: 'firelimit_sign_in_', lead: 'Failed sign-in budget (per client address, AUTH_FAILURES_PER_MINUTE): ' },
} as const;

type DecisionResult = 'allowed' | 'limited' | 'unavailable';

/**
 * Backend call latency, from well under a millisecond (memory, Redis on
 * loopback) to the 1.5 s default deadline and a little past it.
 */
export const BACKEND_CALL_BUCKETS_SECONDS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2,
];

interface BackendSeries {
  readonly outages: Counter.Internal;
  readonly refusals: Counter.Internal;
  readonly duration: Histogram.Internal<'backend'>;
  readonly active: Gauge.Internal<'backend'>;
}

/**
 * The limiter's Prometheus series, in a registry of their own so tests and
 * several limiters in one process never collide on prom-client's global one.
 *
 * Recording is on the request path, so labelled children are looked up once
 * and cached; a decision costs one array index and one increment.
 */
export class LimiterMetrics implements LimiterEvents {
  readonly registry: Registry;

  private readonly decisions: Counter<'result' | 'source'>;
  private readonly outages: Counter<'backend'>;
  private readonly shardActive: Gauge<'backend' | 'shard'>;
  /** Per backend, what is in an outage now: '' for the whole store, else shard ids. */
  private readonly outagesOpen = new Map<BackendName, Set<string>>();
  private readonly refusals: Counter<'backend'>;
  private readonly duration: Histogram<'backend'>;
  private readonly active: Gauge<'backend'>;
  /** Indexed by resultIndex * 2 + (shared ? 0 : 1). */
  private readonly decisionChildren: Counter.Internal[];
  private readonly byBackend = new Map<BackendName, BackendSeries>();

  constructor(options: LimiterMetricsOptions = {}) {
    this.registry = options.registry ?? new Registry();
    const registers = [this.registry];
    const { prefix, lead } = SUBJECTS[options.limiter ?? 'token'];
    this.decisions = new Counter({
      name: `${prefix}decisions_total`,
      help: `${lead}Rate-limit decisions by result (allowed, limited, unavailable = refused because the backend is down) and by where they were made (shared backend or this instance).`,
      labelNames: ['result', 'source'],
      registers,
    });
    this.outages = new Counter({
      name: `${prefix}backend_outages_total`,
      help: `${lead}Outages of the shared rate-limit backend: each one opened by a failed or slow call and closed by a successful probe.`,
      labelNames: ['backend'],
      registers,
    });
    this.refusals = new Counter({
      name: `${prefix}outage_refusals_total`,
      help: `${lead}Requests refused with 503 because the shared backend was unavailable and the failure policy is fail-closed.`,
      labelNames: ['backend'],
      registers,
    });
    this.duration = new Histogram({
      name: `${prefix}backend_call_duration_seconds`,
      help: `${lead}Time spent waiting on one shared-backend call, up to the deadline (calls not sent during an outage are not observed).`,
      labelNames: ['backend'],
      buckets: [...BACKEND_CALL_BUCKETS_SECONDS],
      registers,
    });
    this.active = new Gauge({
      name: `${prefix}backend_outage_active`,
      help: `${lead}1 while the shared backend is in an outage (decisions answered by the failure policy), else 0.`,
      labelNames: ['backend'],
      registers,
    });
    this.shardActive = new Gauge({
      name: `${prefix}backend_shard_outage_active`,
      help: `${lead}1 while one database of several (FIREBASE_DATABASE_URLS) is in an outage of its own, its keys answered by the failure policy; else 0.`,
      labelNames: ['backend', 'shard'],
      registers,
    });
    const results: DecisionResult[] = ['allowed', 'limited', 'unavailable'];
    this.decisionChildren = results.flatMap((result) => [
      this.decisions.labels({ result, source: 'shared' }),
      this.decisions.labels({ result, source: 'local' }),
    ]);
    // Exported at 0 from the start: rate() over a series that appears mid-outage misses its first increment.
    for (const child of this.decisionChildren) child.inc(0);
    if (options.processMetrics === true) collectDefaultMetrics({ register: this.registry, prefix: 'firelimit_' });
  }

  /** Once per decision the limiter returns. */
  recordDecision(backend: BackendName, decision: Decision): void {
    const source = decision.shared ? 0 : 1;
    if (decision.allowed) {
      this.decisionChildren[source]?.inc();
    } else if (decision.reason === 'backend_unavailable') {
      this.decisionChildren[4 + source]?.inc();
      this.series(backend).refusals.inc();
    } else {
      this.decisionChildren[2 + source]?.inc();
    }
  }

  observeBackendCall(backend: BackendName, durationSeconds: number): void {
    this.series(backend).duration.observe(durationSeconds);
  }

  /**
   * `shard`: one database of several has an outage of its own. The backend's
   * gauge reads 1 while any of its shards (or the whole store) is out; the
   * shard's own gauge says which.
   */
  outageStarted(backend: BackendName, shard?: string): void {
    const series = this.series(backend);
    series.outages.inc();
    this.openOutages(backend).add(shard ?? '');
    series.active.set(1);
    if (shard !== undefined) this.shardActive.labels({ backend, shard }).set(1);
  }

  /** Also called when a guard is made, so the gauge reads 0 (not absent) before any outage. */
  outageEnded(backend: BackendName, shard?: string): void {
    const open = this.openOutages(backend);
    open.delete(shard ?? '');
    this.series(backend).active.set(open.size > 0 ? 1 : 0);
    if (shard !== undefined) this.shardActive.labels({ backend, shard }).set(0);
  }

  private openOutages(backend: BackendName): Set<string> {
    let open = this.outagesOpen.get(backend);
    if (open === undefined) {
      open = new Set();
      this.outagesOpen.set(backend, open);
    }
    return open;
  }

  /** The Prometheus text exposition, as /metrics serves it. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private series(backend: BackendName): BackendSeries {
    let series = this.byBackend.get(backend);
    if (series === undefined) {
      // Created on first use with every counter at 0, so rate() and alerts see the series before the first outage.
      series = {
        outages: this.outages.labels({ backend }),
        refusals: this.refusals.labels({ backend }),
        duration: this.duration.labels({ backend }),
        active: this.active.labels({ backend }),
      };
      series.outages.inc(0);
      series.refusals.inc(0);
      this.byBackend.set(backend, series);
    }
    return series;
  }
}
