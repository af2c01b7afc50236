// Types of the c2-plugins serve relay 2.0.0 client (docs/relay.md).

import type { Readable, Writable } from "node:stream";

export declare const RELAY_VERSION: "2.0.0";
export declare const REQUEST_CANCELLED: -32800;

/**
 * Every method the relay answers, as docs/relay.md and docs/schemas/relay.json name them (a
 * test keeps the three in agreement).
 */
export type RelayMethod =
  | "relay/initialize"
  | "relay/describe"
  | "plugins/list"
  | "plugins/install"
  | "plugins/uninstall"
  | "plugins/trust"
  | "plugins/untrust"
  | "plugins/enable"
  | "plugins/disable"
  | "plugins/inherit"
  | "plugins/reset"
  | "plugins/plan"
  | "plugins/apply"
  | "plugins/runtimePid"
  | "plugins/refresh"
  | "plugins/developerStatus"
  | "plugins/setDeveloperMode"
  | "plugins/reloadDevelopment"
  | "realm/catalog"
  | "realm/commands"
  | "command/invoke"
  | "ui/catalog"
  | "ui/invoke"
  | "lsp/list"
  | "lsp/resolve"
  | "mcp/list"
  | "skills/list"
  | "scenes/list"
  | "connectors/list"
  | "connectors/registerProvider"
  | "connectors/invoke"
  | "events/subscribe"
  | "events/unsubscribe"
  | "events/publish"
  | "hub/marketplaces"
  | "hub/addMarketplace"
  | "hub/removeMarketplace"
  | "hub/search"
  | "hub/outdated"
  | "hub/update";

export interface ClientOptions {
  /** The longest line accepted from the relay, in bytes (default 8 MiB). */
  maxFrameBytes?: number;
  /** Requests waiting for an answer at once (default 256). */
  maxPending?: number;
}

export interface SpawnOptions extends ClientOptions {
  pluginsDir?: string;
  env?: Record<string, string>;
  cwd?: string;
  stderr?: "inherit" | "ignore" | "pipe";
}

export interface InitializeResult {
  protocolVersion: string;
  server: { name: string; version: string };
  pid: number;
  pluginsDir: string;
  capabilities: { methods: string[]; notifications: string[]; serverNotifications: string[] };
}

export interface BundleStatus {
  id: string;
  name: string;
  version: string;
  trusted: boolean;
  enabled: boolean;
  state: "untrusted" | "content_changed" | "disabled" | "ready" | "active" | "failed" | "pending";
  reason: string | null;
  runtime: boolean;
  digest: string;
  /** Each component a choice can name, with its user-scope state. */
  components: { component: string; state: "enabled" | "disabled" }[];
  [key: string]: unknown;
}

export interface InstallResult {
  id: string;
  name: string;
  version: string;
  digest: string;
  replaced: boolean;
  trusted: boolean;
  enabled: boolean;
  notes: string[];
  [key: string]: unknown;
}

/** The catalog entry a bundle was installed from. */
export interface CatalogOrigin {
  catalog: string;
  catalogName?: string;
  entry: string;
  version: string;
  sourceKind: "local" | "github" | "git" | "npm" | "archive";
}

/** A configured catalog (`hub/marketplaces`). */
export interface Marketplace {
  name: string;
  location: string;
}

/** One entry found by `hub/search`. */
export interface SearchHit {
  catalog: string;
  location: string;
  name: string;
  version: string;
  description: string | null;
  keywords: string[];
  sourceKind: string;
  installed: string | null;
}

/** One row of `hub/outdated`. */
export interface OutdatedRow {
  id: string;
  name: string;
  installed: string | null;
  available: string | null;
  catalog: string;
  status: "outdated" | "current" | "entry_missing" | "catalog_failed";
  reason: string | null;
}

/** What `hub/update` did. */
export interface UpdateResult {
  updated: { id: string; from: string | null; to: string; digest: string; notes: string[] }[];
  current: string[];
  failed: { id: string; kind: string; message: string }[];
}

/**
 * A 64-bit revision or generation as the relay sends it: a decimal string (a JavaScript number
 * holds integers up to 2^53 exactly; compare revisions as strings or as `BigInt`).
 */
export type Revision = string;

export interface Impact {
  starts: string[];
  stops: string[];
  reloads: string[];
  dependents: string[];
  resources: string[];
  enables?: string[];
  disables?: string[];
  userRuntimes?: string[];
}

export interface Applied {
  id: string;
  /** The policy revision now in force. */
  revision: Revision;
  impact: Impact;
}

/** A plan (`plugins/plan`); pass it back unchanged to `plugins/apply`. */
export interface Plan {
  format: number;
  id: string;
  project: string | null;
  change: { action: "enable" | "disable" | "inherit" } | { action: "configure"; config: unknown };
  component?: string;
  revisions: { graph: Revision; config: Revision; project: Revision | null };
  impact: Impact;
}

/** One `realm/catalog` row. */
export interface CatalogRow {
  name: string;
  meta: Record<string, unknown>;
  /** The factory revision (a 64-bit hash for bundles). */
  revision: Revision;
  inject: string[];
  optionalInject: string[];
  configSchema: unknown;
  state: unknown;
  trusted: boolean | null;
  enabled: boolean;
  runtimeScopes?: string[];
  components?: { component: string; state: "enabled" | "disabled" }[];
}

export interface CommandRow {
  name: string;
  owner: string;
  realm: string;
  visibility: "internal" | "extension-public";
  state: "built-in" | "dormant" | "active" | "failed";
  title: string | null;
  description: string | null;
}

/** One row of `mcp/list`, as `c2-plugins mcp --format json`. */
/** One skill, prompt command or subagent of a realm's content library. */
export interface LibraryItem {
  bundle: string;
  bundleName: string;
  kind: "skill" | "prompt-command" | "agent" | string;
  localName: string;
  /** The name offered to a session (`<bundle-name>:<name>` when bundles collide); null when not offered. */
  name: string | null;
  description: string | null;
  path: string;
  folder: string;
  fields: Record<string, string>;
  allowedTools: string[];
  /** A prompt command's or subagent's body, verbatim (`$ARGUMENTS` kept). */
  instructions: string | null;
  scripts: boolean;
  /** `supported`, `not_trusted`, `disabled: <why>` or `skipped: <why>`. */
  status: string;
}

/** One scene or pipeline file of a realm. */
export interface SceneRow {
  bundle: string;
  bundleName: string;
  kind: "scene" | "pipeline" | string;
  name: string;
  path: string;
  version: string | null;
  /** `valid` or `invalid: <why>`. */
  status: string;
}

export interface McpServerRow {
  bundle: string;
  bundleName: string;
  server: string;
  transport: "stdio" | "streamable-http" | "sse" | string;
  /** `supported`, or why the server cannot be composed. */
  status: string;
  launch:
    | {
        command: string;
        args: string[];
        cwd: string;
        /** The environment's names; their values only with `envValues`. */
        env: string[];
        envValues: Record<string, string> | null;
        pluginRoot: string;
        pluginData: string;
      }
    | { url: string; headers: Record<string, string> }
    | null;
}

/** The payload of `store/changed`: what a refresh found changed, whoever committed it. */
export interface StoreChanged {
  /** The store generation the service is now at. */
  generation: Revision;
  /** The policy revision in force. */
  policyRevision: Revision;
  installed: string[];
  removed: string[];
  replaced: string[];
  /** Bundles whose user-scope trust or enablement changed. */
  policy: string[];
}

/** One reload of a development bundle. */
export interface ReloadRecord {
  /** Milliseconds since the Unix epoch. */
  atMs: number;
  /** `false`: the saved content did not validate and the last good version keeps running. */
  ok: boolean;
  /** One `severity[code] file: message` line each. */
  diagnostics: string[];
}

/** A development bundle: a working directory installed by developer mode. */
export interface DevelopmentBundle {
  id: string;
  /** The working directory it is installed from. */
  dir: string;
  /** The process that holds it. */
  pid: number;
  sinceMs: number;
  /** Whether the holding process is alive. */
  held: boolean;
  lastReload: ReloadRecord | null;
}

/** The store's developer mode (`plugins/developerStatus` and its siblings). */
export interface DeveloperStatus {
  enabled: boolean;
  watching: boolean;
  pluginsDir: string;
  bundles: DevelopmentBundle[];
  lastReload: (ReloadRecord & { plugins: string[] }) | null;
}

/** The payload of `dev/reloaded`. */
export interface DevReloaded {
  id: string;
  ok: boolean;
  diagnostics: string[];
  atMs: number | null;
}

export interface ConnectorEvent {
  bundleId: string;
  connectorId: string;
  eventId: string;
  kind: string;
  createdAt: string;
  payload: unknown;
}

/** One validated item of a `host.actions` render. */
export interface HostAction {
  id: string;
  label: string;
  state: "default" | "running" | "attention" | "failure";
  detail?: string;
  enabled?: boolean;
  /** The object an `invoke` of this item replays. */
  input: Record<string, unknown>;
  accessibilityLabel?: string;
}

/** The answer to a `host.actions` render. */
export interface HostActionsRender {
  actions: HostAction[];
}

/** What the frontend owns of an activation's context. */
export interface UiContext {
  /** The session's absolute directory (inside the project for a project activation). */
  cwd?: string;
  /** The session; keys the host.actions renders when the top-level `sessionId` is absent. */
  sessionId?: string;
}

export interface UiInvokeOptions {
  project?: string;
  /** The frontend's session: passed to the plugin as `context.sessionId`, and with this connection the key of the host.actions render cache. */
  sessionId?: string;
  operation?: "render" | "invoke";
  actionId?: string;
  context?: UiContext;
  /** Aborting sends `$/cancelRequest`; the call rejects with a `CancelledError` once the relay answered. */
  signal?: AbortSignal;
}

export interface RelayEvent {
  subscription: number;
  name: string;
  payload: unknown;
  /** Events lost on this subscription so far because the client did not keep up. */
  dropped: number;
}

/** The major version of a `MAJOR.MINOR.PATCH` text, or `undefined`. */
export declare function majorVersion(version: unknown): number | undefined;

/** `initialize()` reached a relay whose protocol major version is not this client's. */
export declare class RelayVersionError extends Error {
  readonly kind: "version_mismatch";
  readonly code: "ERR_RELAY_VERSION";
  /** What the relay answered. */
  readonly relayVersion: unknown;
  /** This client's version. */
  readonly supported: string;
}

/**
 * The connection is gone: the relay closed it or exited, I/O failed (the stream's error is the
 * `cause`), a line exceeded `maxFrameBytes`, or the client was closed. Retryable on a new
 * connection.
 */
export declare class ConnectionClosedError extends Error {
  readonly kind: "connection_closed";
  readonly code: "ERR_RELAY_CLOSED";
  readonly reason: "relay_closed" | "io_error" | "frame_too_large" | "client_closed";
}

/** `RelayClient.spawn` could not start the service (missing or not executable): every request rejects with it. */
export declare class SpawnError extends Error {
  readonly kind: "spawn_failed";
  readonly code: "ERR_RELAY_SPAWN";
  readonly binary: string;
  /** `ENOENT`, `EACCES`, ... when the system named one. */
  readonly errno: string | undefined;
}

/** `maxPending` requests were already waiting; retry once some are answered. */
export declare class PendingLimitError extends Error {
  readonly kind: "too_many_pending";
  readonly code: "ERR_RELAY_PENDING_LIMIT";
  readonly limit: number;
}

export declare class RelayError extends Error {
  /** The JSON-RPC error code. */
  readonly code: number;
  readonly method: string;
  readonly data: unknown;
  /** The host's error kind (e.g. `not_trusted`, `unknown_command`, `host_busy`), when the host produced it. */
  readonly kind: string | undefined;
  /** The host's advice for a person (what to run), kept apart from the message, when it has one. */
  readonly hint: string | undefined;
  /** The plugin's own error of a failed command: its code and data. */
  readonly pluginError: { code: number; data?: unknown } | undefined;
  /** The findings of an invalid bundle. */
  readonly diagnostics: unknown[] | undefined;
}

/**
 * The relay abandoned an aborted call (`command/invoke`, `ui/invoke`, `connectors/invoke`), or
 * the signal was aborted before the call was sent; `cause` is the signal's `reason`. An aborted
 * request the relay does not abandon (installs, policy changes) settles with its real outcome.
 */
export declare class CancelledError extends RelayError {
  readonly code: -32800;
  readonly kind: "cancelled";
}

export declare class RelayClient {
  constructor(input: Readable, output: Writable, options?: ClientOptions);
  static spawn(binary: string, options?: SpawnOptions): RelayClient;
  static connect(socketPath: string, options?: ClientOptions): Promise<RelayClient>;
  request<T = unknown>(method: RelayMethod | (string & {}), params?: unknown, options?: { signal?: AbortSignal }): Promise<T>;
  initialize(client?: { name: string; version: string }, options?: { uiCacheKey?: string }): Promise<InitializeResult>;
  list(): Promise<BundleStatus[]>;
  install(source: string, options?: { trust?: boolean; enable?: boolean; marketplace?: string }): Promise<InstallResult & { origin?: CatalogOrigin }>;
  marketplaces(): Promise<Marketplace[]>;
  addMarketplace(location: string, name?: string): Promise<Marketplace>;
  removeMarketplace(name: string): Promise<Marketplace>;
  search(text: string, marketplace?: string): Promise<SearchHit[]>;
  outdated(): Promise<OutdatedRow[]>;
  update(id?: string): Promise<UpdateResult>;
  uninstall(id: string): Promise<{ id: string; name: string; version: string }>;
  trust(id: string): Promise<Applied>;
  untrust(id: string): Promise<Applied>;
  enable(id: string, project?: string): Promise<Applied>;
  disable(id: string, project?: string): Promise<Applied>;
  /** One component's choice (`<kind>:<local-id>`); `inherit` drops the override in that scope. */
  setComponent(id: string, component: string, state: "enable" | "disable" | "inherit", project?: string): Promise<Applied & { component: string }>;
  runtimePid(id: string, project?: string): Promise<number | null>;
  commands(project?: string): Promise<CommandRow[]>;
  catalog(project?: string): Promise<CatalogRow[]>;
  plan(id: string, change: Plan["change"], options?: { project?: string; component?: string }): Promise<Plan>;
  apply(plan: Plan): Promise<Applied>;
  reset(id?: string): Promise<{ id: string | null; revision: Revision }>;
  mcpServers(project?: string, options?: { envValues?: boolean }): Promise<McpServerRow[]>;
  skills(project?: string): Promise<LibraryItem[]>;
  scenes(project?: string): Promise<SceneRow[]>;
  invoke<T = unknown>(command: string, args?: unknown, options?: { project?: string; signal?: AbortSignal }): Promise<T>;
  invokeUi(id: string, ui: string, options?: UiInvokeOptions & { operation?: "render" }): Promise<HostActionsRender>;
  invokeUi<T = unknown>(id: string, ui: string, options: UiInvokeOptions & { operation: "invoke"; actionId: string }): Promise<T>;
  refresh(): Promise<{ changed: StoreChanged | null }>;
  developerStatus(): Promise<DeveloperStatus>;
  /** `true` with `path` develops that working directory (trusted while held, watched); `false` ends developer mode. */
  setDeveloperMode(enabled: boolean, path?: string): Promise<DeveloperStatus>;
  reloadDevelopment(id?: string): Promise<DeveloperStatus>;
  subscribe(event: "dev/reloaded", onEvent: (event: RelayEvent & { name: "dev/reloaded"; payload: DevReloaded }) => void): Promise<number>;
  subscribe(event: "store/changed", onEvent: (event: RelayEvent & { name: "store/changed"; payload: StoreChanged }) => void): Promise<number>;
  subscribe(event: "connector/event", onEvent: (event: RelayEvent & { name: "connector/event"; payload: ConnectorEvent }) => void): Promise<number>;
  subscribe(event: string, onEvent: (event: RelayEvent) => void): Promise<number>;
  unsubscribe(subscription: number): Promise<boolean>;
  publish(name: "engine/event" | "skills/changed" | "scenes/changed", payload?: unknown): Promise<number>;
  close(): void;
  exited(): Promise<number | null>;
}
