// Types of the c2-plugins serve relay 2.0.0 client (docs/relay.md; README.md shows the API in use).

import type { Readable, Writable } from "node:stream";

export declare const RELAY_VERSION: "2.0.0";
export declare const REQUEST_CANCELLED: -32800;
export declare const HOST_BUSY: -32003;
/** The default socket's file name in a plugins directory (`<plugins-dir>/.serve.sock`). */
export declare const SOCKET_FILE: ".serve.sock";
/** The methods `$/cancelRequest` abandons (docs/schemas/relay.json's `cancellable`). */
export declare const CANCELLABLE: readonly ("command/invoke" | "ui/invoke" | "connectors/invoke")[];
/** Every relay method with the `RelayClient` method that sends it. */
export declare const CLIENT_METHODS: Readonly<Record<RelayMethod, keyof RelayClient>>;

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
  | "health/status"
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

/**
 * Each relay method's params, one line per method, as docs/schemas/relay.json describes them
 * (the agreement test compares the members and which are optional).
 */
export interface RelayParams {
  "relay/initialize": { protocolVersion: string; client?: ClientInfo; uiCacheKey?: string };
  "relay/describe": {};
  "plugins/list": {};
  "plugins/install": { source: string; trust?: boolean; enable?: boolean; marketplace?: string };
  "plugins/uninstall": { id: string; keepData?: boolean };
  "plugins/trust": { id: string };
  "plugins/untrust": { id: string };
  "plugins/enable": { id: string; project?: string; component?: string };
  "plugins/disable": { id: string; project?: string; component?: string };
  "plugins/inherit": { id: string; project?: string; component?: string };
  "plugins/reset": { id?: string };
  "plugins/plan": { id: string; change: PlanChange; project?: string; component?: string };
  "plugins/apply": { plan: Plan };
  "plugins/runtimePid": { id: string; project?: string };
  "plugins/refresh": {};
  "realm/catalog": { project?: string };
  "realm/commands": { project?: string };
  "command/invoke": { command: string; args?: unknown; project?: string };
  "ui/catalog": { project?: string };
  "ui/invoke": { id: string; ui: string; project?: string; sessionId?: string; operation?: UiOperation; actionId?: string; context?: UiContext };
  "lsp/list": { project?: string };
  "lsp/resolve": { language: string; project: string };
  "mcp/list": { project?: string; envValues?: boolean };
  "skills/list": { project?: string };
  "scenes/list": { project?: string };
  "connectors/list": {};
  "connectors/registerProvider": { provider: string };
  "connectors/invoke": { id: string; connector: string; operation: string; input?: unknown; project?: string };
  "events/subscribe": { event: string };
  "events/unsubscribe": { subscription: number };
  "events/publish": { name: string; payload?: unknown };
  "hub/marketplaces": {};
  "hub/addMarketplace": { location: string; name?: string };
  "hub/removeMarketplace": { name: string };
  "hub/search": { text: string; marketplace?: string };
  "hub/outdated": {};
  "hub/update": { id?: string; dryRun?: boolean };
  "health/status": {};
  "plugins/developerStatus": {};
  "plugins/setDeveloperMode": { enabled: boolean; path?: string };
  "plugins/reloadDevelopment": { id?: string };
}

/** What a client tells `relay/initialize` about itself. */
export interface ClientInfo {
  name: string;
  version: string;
}

/** A `host.actions` operation. */
export type UiOperation = "render" | "invoke";

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

export interface ConnectOrSpawnOptions extends ClientOptions {
  /** The socket; default `<pluginsDir>/.serve.sock` (the service's default when neither is given). */
  socket?: string;
  pluginsDir?: string;
  /**
   * Who owns a service this call starts: `"owned"` (default) keeps it a child of this process,
   * stopped by `close()`; `"detached"` leaves it running for other windows, the CLI and later
   * starts, until SIGTERM.
   */
  service?: "owned" | "detached";
  env?: Record<string, string>;
  cwd?: string;
  stderr?: "inherit" | "ignore";
  /** How long a started service may take to print its ready line (default 30 000 ms). */
  readyTimeoutMs?: number;
}

/** The line `c2-plugins serve --socket --format json` prints on stdout once it accepts connections. */
export interface ReadyLine {
  ready: true;
  socket: string;
  pluginsDir: string;
  pid: number;
  relayVersion: string;
}

/** The socket service a `connectOrSpawn` client reached. */
export interface ServiceInfo {
  socket: string;
  /** The pid of a service this call started (`undefined` when it joined a running one). */
  pid: number | undefined;
  /** Whether this call started it. */
  spawned: boolean;
  /** Whether `close()` stops it. */
  owned: boolean;
}

/** A relay error's advice as an action a frontend can offer (`data.next`). */
export interface NextAction {
  action:
    | "trust"
    | "enable"
    | "enable_component"
    | "list_bundles"
    | "list_commands"
    | "list_mcp_servers"
    | "list_denied"
    | "disable_conflicting"
    | (string & {});
  /** The bundle the action is about. */
  id?: string;
  /** The component (`<kind>:<local-id>`), for `enable_component`. */
  component?: string;
  /** The project the action applies in. */
  project?: string;
}

/** Removes what it was returned for; also `using`-disposable where the runtime has `Symbol.dispose`. */
export interface Disposable {
  dispose(): void;
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
  /** `blocked`: a deny entry matches it (`reason` names the entry); nothing from it runs. */
  state: "blocked" | "content_changed" | "untrusted" | "disabled" | "ready" | "active" | "pending" | "failed";
  reason: string | null;
  runtime: boolean;
  digest: string;
  /** Each component a choice can name, with its user-scope state. */
  components: { component: string; state: "enabled" | "disabled" }[];
  /** Where the bytes came from; `null` when unknown (installed by an older version). */
  provenance: Provenance | null;
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
  /** Where the bytes came from. */
  provenance: Provenance | null;
  [key: string]: unknown;
}

/** Where an installed bundle's bytes came from (docs/supply-chain.md). */
export interface Provenance {
  kind: "directory" | "archive" | "git" | "github" | "npm" | "https";
  /** The absolute path, clone URL, download URL or npm package spec fetched. */
  location: string;
  /** The branch, tag or commit asked for (git). */
  reference?: string;
  /** The exact commit checked out (git). */
  commit?: string;
  /** The bundle's directory in the repository (git). */
  subdir?: string;
  npm?: { name: string; version: string; integrity: string };
  /** Hex SHA-256 of the archive or tarball bytes. */
  sha256?: string;
  /** The catalog entry that named the source. */
  catalog?: CatalogOrigin;
  /** RFC 3339, UTC. */
  installedAt: string;
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
  /** `hub/addMarketplace` only: the entries a Claude Code or Codex catalog left out. */
  skipped?: SkippedEntry[];
}

/** A catalog entry left out because it has an error (see docs/catalogs.md). */
export interface SkippedEntry {
  index: number;
  name: string | null;
  pointer: string;
  reason: string;
}

/** One entry found by `hub/search`. */
export interface SearchHit {
  catalog: string;
  location: string;
  name: string;
  /** `null` when the catalog lists no version (Codex's format). */
  version: string | null;
  description: string | null;
  keywords: string[];
  sourceKind: string;
  installed: string | null;
  /** The catalog's format. */
  format: "c2" | "claude" | "codex";
  /** Why the catalog withholds the entry; installing it fails with `entry_not_available`. */
  notAvailable?: string;
  /** The catalog asks for it to be enabled when installed (Codex's `INSTALLED_BY_DEFAULT`). */
  defaultEnabled?: boolean;
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

/** One executable item of a bundle, as written in it. */
export type SurfaceItem =
  | { type: "process"; command: string; args: string[]; env: Record<string, string>; cwd?: string }
  | { type: "remote"; transport: string; url: string }
  | { type: "command" }
  | { type: "file"; digest: string; executable: boolean };

/** What an update changes in a bundle: its executable surface and its files. */
export interface UpdateReview {
  id: string;
  from: string | null;
  to: string | null;
  fromDigest: string;
  toDigest: string;
  /** `executable surface changed: ...` or `content changed, executable surface unchanged`. */
  reason: string;
  surface: {
    kind: "runtime" | "language-server" | "mcp-server" | "command" | "hook" | "monitor" | "skill-script";
    id: string;
    change: "added" | "removed" | "changed";
    before?: SurfaceItem;
    after?: SurfaceItem;
    text: string;
  }[];
  files: { added: string[]; removed: string[]; changed: string[] };
}

/** What `hub/update` did. */
export interface UpdateResult {
  updated: { id: string; from: string | null; to: string; digest: string; notes: string[]; review: UpdateReview | null }[];
  current: string[];
  failed: { id: string; kind: string; message: string }[];
}

/** What `hub/update` with `dryRun: true` would do; nothing was stored. */
export interface UpdateDryRun {
  dryRun: true;
  pending: UpdateReview[];
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

/** The change a plan makes. */
export type PlanChange = { action: "enable" | "disable" | "inherit" } | { action: "configure"; config: unknown };

/** A plan (`plugins/plan`); pass it back unchanged to `plugins/apply`. */
export interface Plan {
  format: number;
  id: string;
  project: string | null;
  change: PlanChange;
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

/** One plugin runtime's health in one realm (`health/status`, `health/changed`). */
export interface RuntimeHealth {
  bundle: string;
  /** `global` or the project's normalized path. */
  realm: string;
  state: "dormant" | "starting" | "running" | "failed" | "stopped";
  pid: number | null;
  uptimeMs: number | null;
  /** Starts and crashes within the crash window (`windowMs`). */
  starts: number;
  crashes: number;
  windowMs: number;
  lastFailure: { kind: string; message: string; stderrTail: string[]; agoMs: number } | null;
  /** `served` counts every call, `failed` those that failed; latencies in µs, bucket bounds. */
  calls: { served: number; failed: number; p50Us: number | null; p99Us: number | null };
  /** Summed over the runtime's whole process tree. */
  usage: { rssBytes: number; cpuMs: number; openFds: number; processes: number };
  droppedEvents: number;
}

/** The result of `health/status` and the payload of `health/changed`. */
export interface HealthStatus {
  runtimes: RuntimeHealth[];
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

/** One UI descriptor of `ui/catalog`. */
export interface UiEntry {
  bundle: string;
  id: string;
  label?: string;
  command?: string;
  [key: string]: unknown;
}

/** `ui/catalog`: the realm's descriptors per slot (e.g. `host.actions`). */
export type UiCatalog = Record<string, UiEntry[]>;

/** `lsp/list`: the realm's language mappings (as `c2-plugins lsp --list --format json`). */
export interface LanguageListing {
  languages: { language: string; [key: string]: unknown }[];
  [key: string]: unknown;
}

/** `lsp/resolve`: the one active plugin that maps the language, or the editor's built-in. */
export type ResolvedLanguage =
  | { kind: "plugin"; bundle: string; server: Record<string, unknown>; program: string }
  | { kind: "builtIn"; builtin: string };

/** One declared connector (`connectors/list`). */
export interface ConnectorStatus {
  bundle: string;
  id: string;
  provider: string;
  capabilities: string[];
  supported: boolean;
  disabled: boolean;
  [key: string]: unknown;
}

/** The description document `relay/describe` answers (docs/schemas/relay.json). */
export interface RelayDescription {
  protocolVersion: string;
  relay: string;
  transport: string;
  integers: string;
  documentation: string;
  methods: { name: RelayMethod; summary: string; cancellable: boolean; params: Record<string, unknown> }[];
  clientNotifications: { name: string; params: unknown }[];
  serverNotifications: { name: string; params: unknown }[];
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
  readonly retryable: false;
  /** What the relay answered. */
  readonly relayVersion: unknown;
  /** This client's version. */
  readonly supported: string;
}

/**
 * The connection is gone or never came: the relay closed it or exited, I/O failed (the
 * stream's error is the `cause`), the socket could not be reached, a line exceeded
 * `maxFrameBytes`, or the client was closed. Retryable on a new connection, except a closed
 * client and an oversized line.
 */
export declare class ConnectionClosedError extends Error {
  readonly kind: "connection_closed";
  readonly code: "ERR_RELAY_CLOSED";
  readonly reason: "relay_closed" | "io_error" | "connect_failed" | "frame_too_large" | "client_closed";
  readonly retryable: boolean;
  /** `ECONNRESET`, `ENOENT`, `ECONNREFUSED`, ... when the system named one. */
  readonly errno: string | undefined;
}

/**
 * The service could not be started: the binary is missing or not executable (`"spawn"`), or
 * a `connectOrSpawn` service exited before it was ready (`"exited"`, its printed `failure`
 * attached) or did not announce readiness in time (`"timeout"`).
 */
export declare class SpawnError extends Error {
  readonly kind: "spawn_failed";
  readonly code: "ERR_RELAY_SPAWN";
  readonly retryable: false;
  readonly binary: string;
  readonly reason: "spawn" | "exited" | "timeout";
  /** `ENOENT`, `EACCES`, ... when the system named one. */
  readonly errno: string | undefined;
  /** The service's own failure (`{kind, message, hint?}`), when it printed one. */
  readonly failure: { kind: string; message: string; hint?: string; [key: string]: unknown } | undefined;
}

/** `maxPending` requests were already waiting; retry once some are answered. */
export declare class PendingLimitError extends Error {
  readonly kind: "too_many_pending";
  readonly code: "ERR_RELAY_PENDING_LIMIT";
  readonly retryable: true;
  readonly limit: number;
}

export declare class RelayError extends Error {
  /** The JSON-RPC error code. */
  readonly code: number;
  readonly method: string;
  readonly data: unknown;
  /** The host's error kind (e.g. `not_trusted`, `unknown_command`, `host_busy`), when the host produced it. */
  readonly kind: string | undefined;
  /** The host's advice for a person, kept apart from the message, when it has one. */
  readonly hint: string | undefined;
  /** The same advice as an action a frontend can offer (a "Trust" button for `not_trusted`). */
  readonly next: NextAction | undefined;
  /** Whether the fault is the environment's (unreadable store, bad paths). */
  readonly environment: boolean;
  /** The plugin's own error of a failed command: its code and data. */
  readonly pluginError: { code: number; data?: unknown } | undefined;
  /** The findings of an invalid bundle. */
  readonly diagnostics: unknown[] | undefined;
  /** True when the relay was busy (`-32003`, kind `host_busy`): retry later. */
  readonly retryable: boolean;
}

/**
 * The relay abandoned an aborted call (`command/invoke`, `ui/invoke`, `connectors/invoke`), or
 * the signal was aborted before the call was sent; `cause` is the signal's `reason`. An aborted
 * request the relay does not abandon (installs, policy changes) settles with its real outcome.
 */
export declare class CancelledError extends RelayError {
  readonly code: -32800;
  readonly kind: "cancelled";
  readonly retryable: false;
}

/**
 * The runtime serving this call was stopped under it: another caller (another window on the
 * same socket service) cancelled a call on it, or the bundle was unloaded. Retry: the next call
 * starts the runtime again.
 */
export declare class RuntimeStoppedError extends RelayError {
  readonly kind: "cancelled";
  readonly retryable: true;
}

/** The events of one subscription as an async iterator (`client.events(name)`). */
export declare class EventStream<P = unknown> implements AsyncIterableIterator<RelayEvent & { payload: P }> {
  readonly event: string;
  /** The subscription number, once `ready` resolved. */
  readonly subscription: number | undefined;
  /** Resolves with the subscription number; rejects when the relay refused it. */
  readonly ready: Promise<number>;
  /** Resolves once the stream ended: with nothing when it was closed, with the error when the connection ended. */
  readonly ended: Promise<Error | undefined>;
  /** Events dropped in this client because the reader held `maxQueued` untaken ones. */
  readonly droppedLocally: number;
  /** Unsubscribes and ends the stream normally. */
  close(): Promise<void>;
  next(): Promise<IteratorResult<RelayEvent & { payload: P }, undefined>>;
  return(): Promise<IteratorResult<RelayEvent & { payload: P }, undefined>>;
  [Symbol.asyncIterator](): EventStream<P>;
}

export interface SubscribeOptions {
  /** Called once when the subscription ends: with nothing after `unsubscribe`, with the error when the connection ended. */
  onEnd?: (error: Error | undefined) => void;
}

export interface EventsOptions {
  /** Aborting unsubscribes and ends the stream. */
  signal?: AbortSignal;
  /** Events held for a slow reader before further ones are dropped (default 1024). */
  maxQueued?: number;
}

export declare class RelayClient {
  constructor(input: Readable, output: Writable, options?: ClientOptions);
  static spawn(binary: string, options?: SpawnOptions): RelayClient;
  static connect(socketPath: string, options?: ClientOptions): Promise<RelayClient>;
  /** Joins the socket service, or starts one and joins it once its ready line arrived. */
  static connectOrSpawn(binary: string, options?: ConnectOrSpawnOptions): Promise<RelayClient>;
  /** The socket service `connectOrSpawn` reached. */
  readonly service: ServiceInfo | undefined;
  /** Resolves (never rejects) with the error that ended the connection. */
  readonly closed: Promise<ConnectionClosedError | SpawnError>;
  request<M extends RelayMethod>(method: M, params?: RelayParams[M], options?: { signal?: AbortSignal }): Promise<unknown>;
  request<T = unknown>(method: string, params?: unknown, options?: { signal?: AbortSignal }): Promise<T>;
  initialize(client?: ClientInfo, options?: { uiCacheKey?: string }): Promise<InitializeResult>;
  describe(): Promise<RelayDescription>;
  list(): Promise<BundleStatus[]>;
  install(source: string, options?: { trust?: boolean; enable?: boolean; marketplace?: string }): Promise<InstallResult & { origin?: CatalogOrigin }>;
  marketplaces(): Promise<Marketplace[]>;
  addMarketplace(location: string, name?: string): Promise<Marketplace>;
  removeMarketplace(name: string): Promise<Marketplace>;
  search(text: string, marketplace?: string): Promise<SearchHit[]>;
  outdated(): Promise<OutdatedRow[]>;
  update(id?: string): Promise<UpdateResult>;
  /** What updating one bundle, or every catalog-installed one, would change; applies nothing. */
  reviewUpdate(id?: string): Promise<UpdateDryRun>;
  /** Removes the bundle and its data directory; `keepData` keeps `.data/<id>/`. */
  uninstall(id: string, options?: { keepData?: boolean }): Promise<{ id: string; name: string; version: string }>;
  trust(id: string): Promise<Applied>;
  untrust(id: string): Promise<Applied>;
  enable(id: string, project?: string): Promise<Applied>;
  disable(id: string, project?: string): Promise<Applied>;
  /** Drops the bundle's choice in `project`, so the user scope's applies there. */
  inherit(id: string, project: string): Promise<Applied>;
  /** One component's choice (`<kind>:<local-id>`); `inherit` drops the override in that scope. */
  setComponent(id: string, component: string, state: "enable" | "disable" | "inherit", project?: string): Promise<Applied & { component: string }>;
  runtimePid(id: string, project?: string): Promise<number | null>;
  health(): Promise<HealthStatus>;
  commands(project?: string): Promise<CommandRow[]>;
  catalog(project?: string): Promise<CatalogRow[]>;
  plan(id: string, change: PlanChange, options?: { project?: string; component?: string }): Promise<Plan>;
  apply(plan: Plan): Promise<Applied>;
  reset(id?: string): Promise<{ id: string | null; revision: Revision }>;
  mcpServers(project?: string, options?: { envValues?: boolean }): Promise<McpServerRow[]>;
  skills(project?: string): Promise<LibraryItem[]>;
  scenes(project?: string): Promise<SceneRow[]>;
  languages(project?: string): Promise<LanguageListing>;
  resolveLanguage(language: string, project: string): Promise<ResolvedLanguage>;
  uiCatalog(project?: string): Promise<UiCatalog>;
  connectors(): Promise<ConnectorStatus[]>;
  registerProvider(provider: string): Promise<unknown>;
  invokeConnector<T = unknown>(id: string, connector: string, operation: string, input?: unknown, options?: { project?: string; signal?: AbortSignal }): Promise<T>;
  invoke<T = unknown>(command: string, args?: unknown, options?: { project?: string; signal?: AbortSignal }): Promise<T>;
  invokeUi(id: string, ui: string, options?: UiInvokeOptions & { operation?: "render" }): Promise<HostActionsRender>;
  invokeUi<T = unknown>(id: string, ui: string, options: UiInvokeOptions & { operation: "invoke"; actionId: string }): Promise<T>;
  refresh(): Promise<{ changed: StoreChanged | null }>;
  developerStatus(): Promise<DeveloperStatus>;
  /** `true` with `path` develops that working directory (trusted while held, watched); `false` ends developer mode. */
  setDeveloperMode(enabled: boolean, path?: string): Promise<DeveloperStatus>;
  reloadDevelopment(id?: string): Promise<DeveloperStatus>;
  subscribe(event: "dev/reloaded", onEvent: (event: RelayEvent & { name: "dev/reloaded"; payload: DevReloaded }) => void, options?: SubscribeOptions): Promise<number>;
  subscribe(event: "store/changed", onEvent: (event: RelayEvent & { name: "store/changed"; payload: StoreChanged }) => void, options?: SubscribeOptions): Promise<number>;
  subscribe(event: "health/changed", onEvent: (event: RelayEvent & { name: "health/changed"; payload: HealthStatus }) => void, options?: SubscribeOptions): Promise<number>;
  subscribe(event: "connector/event", onEvent: (event: RelayEvent & { name: "connector/event"; payload: ConnectorEvent }) => void, options?: SubscribeOptions): Promise<number>;
  subscribe(event: string, onEvent: (event: RelayEvent) => void, options?: SubscribeOptions): Promise<number>;
  events(event: "store/changed", options?: EventsOptions): EventStream<StoreChanged>;
  events(event: "health/changed", options?: EventsOptions): EventStream<HealthStatus>;
  events(event: "dev/reloaded", options?: EventsOptions): EventStream<DevReloaded>;
  events(event: "connector/event", options?: EventsOptions): EventStream<ConnectorEvent>;
  events(event: string, options?: EventsOptions): EventStream;
  unsubscribe(subscription: number): Promise<boolean>;
  publish(name: "engine/event" | "skills/changed" | "scenes/changed", payload?: unknown): Promise<number>;
  /** `"close"` once with the error that ended the connection; `"error"` before it when a fault ended it. */
  on(type: "close" | "error", listener: (error: Error) => void): Disposable;
  off(type: "close" | "error", listener: (error: Error) => void): void;
  close(): void;
  exited(): Promise<number | null>;
}
