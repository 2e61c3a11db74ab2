import type {
  CallToolResult,
  CompleteRequestParams,
  CompleteResult,
  LoggingMessageNotification,
  Progress,
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  ListResourceTemplatesResult,
  ServerCapabilities,
  Tool,
} from '@modelcontextprotocol/client';
type ResourceTemplate = ListResourceTemplatesResult['resourceTemplates'][number];
import type { Logger } from '../shared/logger';
import type { UpstreamCall, UpstreamClient } from './upstream-client';
import { UpstreamError } from './upstream-error';
import type { GateAnswer, GateRequest, UpstreamQuotaGate } from './upstream-quota-gate';
import { UpstreamQuotaRefusal } from './upstream-quota-refusal';
import type { WaitBudget } from '../library';

export interface GatewayEvents {
  /** One call forwarded upstream, and how it ended. */
  readonly onForward?: (outcome: 'ok' | 'tool_error' | UpstreamError['kind']) => void;
}

export interface GatewayOptions {
  readonly client: UpstreamClient;
  /** How long a fetched list is served before it is fetched again; 0 = every time. */
  readonly listTtlMs: number;
  readonly clock: () => number;
  /** UPSTREAM_RATE or a tool's own quota set: every forwarded request passes the quotas that apply to it first. */
  readonly quota?: UpstreamQuotaGate;
  readonly events?: GatewayEvents;
  /** Where a list served stale is noted. */
  readonly logger?: Logger;
  /**
   * UPSTREAM_LISTS=per-caller: each token's lists are fetched on its own upstream session and cached for it alone
   * (docs/adr/0050), for at most `maxCallers` tokens (UPSTREAM_SESSIONS_MAX), the least recently listed forgotten
   * first. Default: unset, one copy of each list for every caller.
   */
  readonly perCallerLists?: { readonly maxCallers: number };
}

/** The upstream's lists, by the name the cache keeps them under. */
export type UpstreamListName = 'tools' | 'resources' | 'templates' | 'prompts';

const LIST_NAMES: readonly UpstreamListName[] = ['tools', 'resources', 'templates', 'prompts'];

interface ListItems {
  readonly tools: Tool;
  readonly resources: Resource;
  readonly templates: ResourceTemplate;
  readonly prompts: Prompt;
}

interface Cached<T> {
  readonly value: T;
  readonly atMs: number;
}

/**
 * What the upstream says about one forwarded call while it runs, for the
 * caller's own stream (docs/adr/0038-relaying-upstream-notifications.md).
 * Each is asked of the upstream only when given.
 */
export interface CallRelay {
  /** The upstream's notifications/progress for this call (the client put its own token on the call). */
  readonly onprogress?: (progress: Progress) => void;
  /** The upstream's notifications/message sent on this call's response stream. */
  readonly onlog?: (params: LoggingMessageNotification['params']) => void;
}

/** What a forwarded tools/call came to: the upstream's result, or the quota's answer instead of a call. */
export type ForwardedCall = { readonly status: 'called'; readonly result: CallToolResult; readonly heldMs: number } | Exclude<GateAnswer, { status: 'run' }>;

/**
 * The upstream as firelimit's MCP layer sees it: its lists (cached for
 * `listTtlMs`, dropped when the upstream says one changed) and its calls,
 * every forwarded request behind the upstream quotas. Lists are asked for on the shared connection and served to
 * every caller from one fetch, unless they are per caller (GatewayOptions.perCallerLists).
 */
export class Gateway {
  /** By list name, or by list name and token id when lists are per caller (keyOf). */
  private readonly cache = new Map<string, Cached<unknown>>();
  private readonly fetching = new Map<string, Promise<unknown>>();
  /** Each list as last fetched, kept through invalidate() and outages: what is listed while the upstream cannot answer. */
  private readonly lastGood = new Map<string, Cached<unknown>>();
  /** Lists now served from lastGood, so the log says so once per outage, not per list call. */
  private readonly servedStale = new Set<string>();
  private lastCapabilities: ServerCapabilities | undefined;
  /** With per-caller lists: the tokens whose lists are kept, least recently fetched first. */
  private readonly callers = new Set<string>();
  /** Each tools list as fetched, by name (indexOf); dropped with the list. */
  private readonly toolIndexes = new WeakMap<readonly Tool[], Map<string, Tool>>();
  /** Bumped by invalidate(): a fetch begun before it does not refill the cache. */
  private generation = 0;

  constructor(private readonly options: GatewayOptions) {}

  /** The upstream changed a list (or a test says so): the next list call fetches it again. */
  invalidate(): void {
    this.generation += 1;
    this.cache.clear();
    this.fetching.clear();
  }

  get quota(): UpstreamQuotaGate | undefined {
    return this.options.quota;
  }

  /** `tokenId` matters only with per-caller lists: then the list is that token's, fetched on its session. */
  async tools(tokenId?: string): Promise<readonly Tool[]> {
    const on = this.listerOf(tokenId);
    return this.cached(this.keyOf('tools', on), async () => (await this.options.client.request(on, (client, o) => client.listTools(undefined, { ...o, cacheMode: 'bypass' }))).tools, on);
  }

  async resources(tokenId?: string): Promise<readonly Resource[]> {
    if (!(await this.offers('resources'))) return [];
    const on = this.listerOf(tokenId);
    return this.cached(this.keyOf('resources', on), async () => (await this.options.client.request(on, (client, o) => client.listResources(undefined, { ...o, cacheMode: 'bypass' }))).resources, on);
  }

  async resourceTemplates(tokenId?: string): Promise<readonly ResourceTemplate[]> {
    if (!(await this.offers('resources'))) return [];
    const on = this.listerOf(tokenId);
    return this.cached(this.keyOf('templates', on), async () => (await this.options.client.request(on, (client, o) => client.listResourceTemplates(undefined, { ...o, cacheMode: 'bypass' }))).resourceTemplates, on);
  }

  async prompts(tokenId?: string): Promise<readonly Prompt[]> {
    if (!(await this.offers('prompts'))) return [];
    const on = this.listerOf(tokenId);
    return this.cached(this.keyOf('prompts', on), async () => (await this.options.client.request(on, (client, o) => client.listPrompts(undefined, { ...o, cacheMode: 'bypass' }))).prompts, on);
  }

  /** Whose session a list is fetched on: the caller's with per-caller lists, else the shared connection's (undefined). */
  private listerOf(tokenId: string | undefined): string | undefined {
    return this.options.perCallerLists === undefined ? undefined : tokenId;
  }

  private keyOf(list: UpstreamListName, tokenId: string | undefined): string {
    return tokenId === undefined ? list : `${list}\u0000${tokenId}`;
  }

  /** Throws an UpstreamQuotaRefusal when the upstream quota does not let the read run now. */
  async readResource(tokenId: string, uri: string, signal?: AbortSignal, reservation?: unknown, budget?: WaitBudget): Promise<ReadResourceResult> {
    await this.admitOrRefuse({ tokenId, method: 'resources/read', reservation, budget }, signal);
    return this.options.client.request(tokenId, (client, o) => client.readResource({ uri }, { ...o, cacheMode: 'bypass' }), signal);
  }

  /** Throws an UpstreamQuotaRefusal when the upstream quota does not let the request run now. */
  async getPrompt(tokenId: string, name: string, args: Record<string, string> | undefined, signal?: AbortSignal, reservation?: unknown, budget?: WaitBudget): Promise<GetPromptResult> {
    await this.admitOrRefuse({ tokenId, method: 'prompts/get', reservation, budget }, signal);
    return this.options.client.request(tokenId, (client, o) => client.getPrompt({ name, arguments: args }, o), signal);
  }

  /**
   * Relays one completion/complete for `tokenId` on its session (the upstream offered `completions`); throws an
   * UpstreamQuotaRefusal when the upstream quota does not let it run now.
   */
  async complete(tokenId: string, params: CompleteRequestParams, signal?: AbortSignal, reservation?: unknown, budget?: WaitBudget): Promise<CompleteResult> {
    await this.admitOrRefuse({ tokenId, method: 'completion/complete', reservation, budget }, signal);
    return this.options.client.request(tokenId, (client, o) => client.complete(params, o), signal);
  }

  /**
   * Every forwarded request but tools/call (whose answer is a tool result)
   * passes the quota here: run, or an UpstreamQuotaRefusal thrown, before
   * anything is sent. Each message of a batch comes through on its own.
   */
  async admitOrRefuse(request: GateRequest, signal?: AbortSignal): Promise<void> {
    if (this.options.quota === undefined) return;
    const answer = await this.options.quota.admit(request, signal);
    if (answer.status !== 'run') throw new UpstreamQuotaRefusal(answer, request.method ?? 'tools/call');
  }

  /**
   * The upstream tool of that name, from the cached list; undefined when the upstream has none. With the upstream
   * failing, from the last good list, so the call is tried (and answered as unreachable) rather than called unknown.
   */
  async tool(name: string, tokenId?: string): Promise<Tool | undefined> {
    let tools: readonly Tool[];
    try {
      tools = await this.tools(tokenId);
    } catch (error) {
      const last = this.lastGood.get(this.keyOf('tools', this.listerOf(tokenId))) as Cached<readonly Tool[]> | undefined;
      if (!(error instanceof UpstreamError) || last === undefined) throw error;
      tools = last.value;
    }
    return this.indexOf(tools).get(name);
  }

  /** By name, the first of each (as a find would): a list of 10 000 tools is searched once per fetch, not per call. */
  private indexOf(tools: readonly Tool[]): ReadonlyMap<string, Tool> {
    let index = this.toolIndexes.get(tools);
    if (index === undefined) {
      index = new Map();
      for (const tool of tools) if (!index.has(tool.name)) index.set(tool.name, tool);
      this.toolIndexes.set(tools, index);
    }
    return index;
  }

  /**
   * A list for a list request: degrade, don't vanish. With the upstream failing, the last good list (or none), so a
   * client still discovers firelimit's own tools and can ask for its limits; the log says once per outage that the
   * list is stale (gateway.list_stale), and once when it is fresh again.
   */
  async forListing<K extends UpstreamListName>(list: K, tokenId?: string): Promise<readonly ListItems[K][]> {
    const fetchers: { readonly [N in UpstreamListName]: () => Promise<readonly ListItems[N][]> } = {
      tools: () => this.tools(tokenId),
      resources: () => this.resources(tokenId),
      templates: () => this.resourceTemplates(tokenId),
      prompts: () => this.prompts(tokenId),
    };
    const key = this.keyOf(list, this.listerOf(tokenId));
    try {
      const value = await fetchers[list]();
      if (this.servedStale.delete(list)) this.options.logger?.info('upstream list fresh again', { event: 'gateway.list_fresh', list });
      return value;
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      const last = this.lastGood.get(key) as Cached<readonly ListItems[K][]> | undefined;
      // Once per list per outage, however many callers' lists it stales (per-caller lists too).
      if (!this.servedStale.has(list)) {
        this.servedStale.add(list);
        this.options.logger?.warn(
          last === undefined
            ? 'upstream list unavailable; listing only firelimit\'s own items until the upstream answers'
            : "upstream list unavailable; serving the last good one (stale) until the upstream answers",
          { event: 'gateway.list_stale', list, kind: error.kind, ...(last === undefined ? {} : { listedAtMs: last.atMs }) },
        );
      }
      return last?.value ?? [];
    }
  }

  /** The upstream's tools as last listed (for /developers); undefined before the first list, and always with per-caller lists (no one caller's list is everyone's). */
  lastListedTools(): readonly Tool[] | undefined {
    return (this.lastGood.get('tools') as Cached<readonly Tool[]> | undefined)?.value;
  }

  /**
   * Forwards one tools/call for `tokenId`, after the shared quota lets it
   * run. The result is the upstream's, unchanged; a failure of the upstream
   * is thrown as an UpstreamError for the MCP layer to word.
   */
  /** `reservation`: the id the call echoes in `_meta` (reservation-id.ts), unchecked. */
  async callTool(tokenId: string, tool: Tool, args: Record<string, unknown> | undefined, signal?: AbortSignal, relay: CallRelay = {}, reservation?: unknown, budget?: WaitBudget): Promise<ForwardedCall> {
    let heldMs = 0;
    if (this.options.quota !== undefined) {
      // The request's signal ends a hold early: a caller that went away is not forwarded.
      const answer = await this.options.quota.admit({ tokenId, method: 'tools/call', tool: tool.name, reservation, budget }, signal);
      if (answer.status !== 'run') return answer;
      heldMs = answer.heldMs;
    }
    try {
      const { onprogress } = relay;
      // The tool definition we listed goes along, so the client never lists again per call; without its output schema,
      // so the result is passed on unchanged, as listed: the caller's own client validates it. Validated here, the
      // upstream's schema would be compiled on every call and its patterns run on the event loop every caller shares.
      // (The forwarder validates no output schema at all; this is for the SDK client, when it is the one to call.)
      const viaSdk: UpstreamCall<unknown> = (client, o) => {
        const { outputSchema: _forTheCaller, ...definition } = tool;
        return client.callTool({ name: tool.name, arguments: args }, { ...o, toolDefinition: definition, ...(onprogress === undefined ? {} : { onprogress }) });
      };
      const result = (await this.options.client.forwardToolCall(tokenId, { name: tool.name, arguments: args }, signal, relay, viaSdk)) as CallToolResult;
      this.options.events?.onForward?.(result.isError === true ? 'tool_error' : 'ok');
      return { status: 'called', result, heldMs };
    } catch (error) {
      this.options.events?.onForward?.(error instanceof UpstreamError ? error.kind : 'unreachable');
      throw error;
    }
  }

  private async offers(capability: keyof ServerCapabilities): Promise<boolean> {
    const capabilities = await this.options.client.request(undefined, (client) => Promise.resolve(client.getServerCapabilities()));
    this.lastCapabilities = capabilities;
    return capabilities?.[capability] !== undefined;
  }

  /** What the upstream offered when last asked (undefined before it first answered). */
  offered(capability: keyof ServerCapabilities): boolean {
    return this.lastCapabilities?.[capability] !== undefined;
  }

  /** Asks the upstream what it offers (connecting if need be); false when it cannot be reached. */
  async learnCapabilities(): Promise<void> {
    try {
      await this.offers('tools');
    } catch {
      // Not reachable yet: what it offers is learned on a later list.
    }
  }

  /**
   * With per-caller lists, the lists of at most `maxCallers` tokens are kept (fresh and last good):
   * a token that fetches a list becomes the most recent; past the bound, the least recent token's lists all go.
   */
  private touchCaller(tokenId: string | undefined): void {
    const per = this.options.perCallerLists;
    if (per === undefined || tokenId === undefined) return;
    this.callers.delete(tokenId);
    this.callers.add(tokenId);
    while (this.callers.size > per.maxCallers) {
      const oldest = this.callers.values().next().value as string;
      this.callers.delete(oldest);
      for (const list of LIST_NAMES) {
        const key = this.keyOf(list, oldest);
        this.cache.delete(key);
        this.lastGood.delete(key);
      }
    }
  }

  private async cached<T>(name: string, fetchList: () => Promise<T>, caller?: string): Promise<T> {
    const nowMs = this.options.clock();
    const hit = this.cache.get(name) as Cached<T> | undefined;
    if (hit !== undefined && nowMs - hit.atMs < this.options.listTtlMs) return hit.value;
    // One fetch at a time per list: when the TTL lapses under load, every caller waits on the same request upstream.
    const pending = this.fetching.get(name) as Promise<T> | undefined;
    if (pending !== undefined) return pending;
    const generation = this.generation;
    const fetched = fetchList().then((value) => {
      // A list_changed during the fetch may make this copy stale: it answers its callers, and is not kept.
      if (generation === this.generation) this.cache.set(name, { value, atMs: nowMs });
      this.lastGood.set(name, { value, atMs: nowMs });
      this.touchCaller(caller);
      return value;
    });
    this.fetching.set(name, fetched);
    try {
      return await fetched;
    } finally {
      if (this.fetching.get(name) === fetched) this.fetching.delete(name);
    }
  }
}
