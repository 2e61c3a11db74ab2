import type { Response } from 'express';
import { type Decision, WaitBudget } from '../library';
import type { McpEra } from '../library/express';
import type { AuthenticatedToken } from '../tokens/token-record';

/**
 * What the /mcp pipeline leaves on `res.locals` for the steps after it: the
 * verified token (set by auth) and the rate-limit decision (set by the
 * limiter). One module, so the MCP handler and the request log read them
 * without depending on the middleware that wrote them.
 */
interface Locals {
  token?: AuthenticatedToken;
  rateLimit?: Decision;
  mcpEra?: McpEra;
  chargedDecisions?: ReadonlyMap<string, Decision>;
  waitBudget?: WaitBudget;
}

/** Which MCP protocol era a request speaks: 2026-07-28 (a per-request `_meta` envelope) or 2025 (initialize handshake). */
export type { McpEra };

/** The verified token; undefined before auth has accepted one. */
export function tokenOf(res: Response): AuthenticatedToken | undefined {
  const token = (res.locals as Locals).token;
  return token !== undefined && typeof token.id === 'string' ? token : undefined;
}

export function setToken(res: Response, token: AuthenticatedToken): void {
  (res.locals as Locals).token = token;
}

/** The per-token limiter's decision; undefined before the limiter has run. */
export function decisionOf(res: Response): Decision | undefined {
  return (res.locals as Locals).rateLimit;
}

export function setDecision(res: Response, decision: Decision): void {
  (res.locals as Locals).rateLimit = decision;
}

/** The era the protocol check classified the request under; undefined before it ran. */
export function mcpEraOf(res: Response): McpEra | undefined {
  return (res.locals as Locals).mcpEra;
}

export function setMcpEra(res: Response, era: McpEra): void {
  (res.locals as Locals).mcpEra = era;
}

/** Each key this request was charged on, with its own decision (the combined one is `decisionOf`). */
export function chargedDecisionsOf(res: Response): ReadonlyMap<string, Decision> | undefined {
  return (res.locals as Locals).chargedDecisions;
}

export function setChargedDecisions(res: Response, decisions: ReadonlyMap<string, Decision>): void {
  (res.locals as Locals).chargedDecisions = decisions;
}

/** The request's wait budget for its shared stores (ADR 0047); undefined where none was started. */
export function waitBudgetOf(res: Response): WaitBudget | undefined {
  return (res.locals as Locals).waitBudget;
}

/** Starts the request's wait budget: RATE_LIMIT_TIMEOUT_MS for every shared-store call of the request together. */
export function startWaitBudget(res: Response, totalMs: number): void {
  (res.locals as Locals).waitBudget = new WaitBudget(totalMs);
}
