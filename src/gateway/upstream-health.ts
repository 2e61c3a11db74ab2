import type { Logger } from '../shared/logger';
import type { UpstreamFailureKind } from './upstream-error';

/**
 * Failures that say the upstream cannot be reached or used, rather than that
 * one call went wrong: no connection, an HTTP refusal (a 401, a 5xx, a 400 to
 * every call), no answer in time (a frozen or overloaded server looks like
 * nothing else; a single slow tool starts an "outage" that its next answered
 * call ends, still two lines). A JSON-RPC error or an answer that is not MCP
 * is about that call; a connection that cannot be opened at all is an outage
 * whatever its kind (the caller reports it with `connecting`).
 */
export const OUTAGE_KINDS: ReadonlySet<UpstreamFailureKind> = new Set(['unreachable', 'refused', 'timeout']);

/**
 * Whether the gateway can use its upstream, logged once per outage: a
 * WARNING when it starts (with what failed), an INFO when a call gets through
 * again (with how long it lasted), and nothing per call in between, so an
 * upstream down for an hour under load is two lines, not one per call.
 */
export class UpstreamHealth {
  private downSinceMs: number | undefined;
  private failures = 0;

  constructor(
    private readonly logger: Logger,
    private readonly clock: () => number,
  ) {}

  /** True from the first outage failure until a call gets through. */
  get down(): boolean {
    return this.downSinceMs !== undefined;
  }

  /** A call failed as `kind`; `connecting`: no connection could be opened for it. Returns whether it counts as an outage. */
  failed(kind: UpstreamFailureKind, connecting: boolean): boolean {
    if (!connecting && !OUTAGE_KINDS.has(kind)) return false;
    this.failures += 1;
    if (this.downSinceMs !== undefined) return true;
    this.downSinceMs = this.clock();
    this.logger.warn('upstream MCP server cannot be reached or used, or does not answer in time; calls that need it fail until it answers again (logged once per outage)', {
      event: 'gateway.upstream_down',
      kind,
    });
    return true;
  }

  /** A call got an answer from the upstream (a JSON-RPC error counts: the upstream works). */
  succeeded(): void {
    if (this.downSinceMs === undefined) return;
    const downForMs = Math.max(0, this.clock() - this.downSinceMs);
    this.logger.info('upstream MCP server answers again', { event: 'gateway.upstream_recovered', downForMs, failedCalls: this.failures });
    this.downSinceMs = undefined;
    this.failures = 0;
  }
}
