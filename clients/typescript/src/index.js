// Client of the `c2-plugins serve` relay: JSON-RPC 2.0 over newline-delimited JSON, on the
// service's stdio (`RelayClient.spawn`) or its Unix socket (`RelayClient.connect`). It uses
// Node's built-in modules only. Every buffer is bounded: a line longer than `maxFrameBytes`
// closes the connection, and at most `maxPending` requests wait for an answer at once.
// docs/relay.md documents every method; src/index.d.ts types them.

import { spawn } from "node:child_process";
import { createConnection } from "node:net";
import { PassThrough } from "node:stream";

/**
 * The relay protocol version this client speaks. `initialize()` refuses a relay whose major
 * version differs (a `RelayVersionError`); the relay refuses such a client itself (-32011).
 */
export const RELAY_VERSION = "2.0.0";

/** The major version of a `MAJOR.MINOR.PATCH` text, or `undefined` for anything else. */
export function majorVersion(version) {
  const match = typeof version === "string" ? /^(\d+)\.\d+\.\d+(?:[-+].*)?$/.exec(version) : null;
  return match ? Number(match[1]) : undefined;
}

/** The JSON-RPC error code of a request the caller cancelled. */
export const REQUEST_CANCELLED = -32800;

const DEFAULTS = Object.freeze({
  maxFrameBytes: 8 * 1024 * 1024,
  maxPending: 256,
});

/** `initialize()` reached a relay whose protocol major version is not this client's. */
export class RelayVersionError extends Error {
  constructor(relayVersion) {
    super(
      `the relay speaks protocol ${relayVersion}; this client speaks ${RELAY_VERSION} and needs the same major version`,
    );
    this.name = "RelayVersionError";
    this.kind = "version_mismatch";
    this.code = "ERR_RELAY_VERSION";
    this.relayVersion = relayVersion;
    this.supported = RELAY_VERSION;
  }
}

/**
 * The connection to the relay is gone: the relay closed it or exited (`reason: "relay_closed"`),
 * reading or writing failed (`"io_error"`, the stream's error as `cause`), the relay sent a line
 * over `maxFrameBytes` (`"frame_too_large"`) or this client was closed (`"client_closed"`).
 * Every request waiting for an answer, and every later one, rejects with it. A new connection
 * (or a new service) may succeed: it is retryable.
 */
export class ConnectionClosedError extends Error {
  constructor(reason, message, cause) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ConnectionClosedError";
    this.kind = "connection_closed";
    this.code = "ERR_RELAY_CLOSED";
    this.reason = reason;
  }
}

/** `RelayClient.spawn` could not start the service; the spawn's error is the `cause`. */
export class SpawnError extends Error {
  constructor(binary, cause) {
    super(`cannot start the service ${binary}: ${cause?.code ?? cause?.message ?? cause}`, { cause });
    this.name = "SpawnError";
    this.kind = "spawn_failed";
    this.code = "ERR_RELAY_SPAWN";
    this.binary = binary;
    /** The system's error code (`ENOENT`, `EACCES`, ...), when there is one. */
    this.errno = typeof cause?.code === "string" ? cause.code : undefined;
  }
}

/** `maxPending` requests were already waiting for an answer; retry once some are answered. */
export class PendingLimitError extends Error {
  constructor(limit) {
    super(`${limit} requests are already waiting (maxPending); retry later`);
    this.name = "PendingLimitError";
    this.kind = "too_many_pending";
    this.code = "ERR_RELAY_PENDING_LIMIT";
    this.limit = limit;
  }
}

/**
 * A JSON-RPC error answer; `kind` is the host's error kind when the host produced it, `hint`
 * its advice for a person, `pluginError` the plugin's own error (`{code, data}`) of a failed
 * command, `diagnostics` the findings of an invalid bundle.
 */
export class RelayError extends Error {
  constructor(method, error, cause) {
    super(`${method}: ${error.message}`, cause === undefined ? undefined : { cause });
    this.name = "RelayError";
    this.method = method;
    this.code = error.code;
    this.data = error.data;
    const data = error.data !== null && typeof error.data === "object" ? error.data : {};
    this.kind = typeof data.kind === "string" ? data.kind : undefined;
    this.hint = typeof data.hint === "string" ? data.hint : undefined;
    this.pluginError = data.pluginError !== null && typeof data.pluginError === "object" ? data.pluginError : undefined;
    this.diagnostics = Array.isArray(data.diagnostics) ? data.diagnostics : undefined;
  }
}

/**
 * The relay answered a request this client aborted with `REQUEST_CANCELLED` (or the signal was
 * aborted before the request was sent): `cause` is the signal's `reason`. A `RelayError` of
 * code `REQUEST_CANCELLED` and kind `cancelled`.
 */
export class CancelledError extends RelayError {
  constructor(method, error, reason) {
    super(method, { message: "cancelled by the caller", ...error, code: REQUEST_CANCELLED }, reason);
    this.name = "CancelledError";
    this.kind = "cancelled";
  }
}

export class RelayClient {
  /**
   * @param {import("node:stream").Readable} input the service's output
   * @param {import("node:stream").Writable} output the service's input
   * @param {{maxFrameBytes?: number, maxPending?: number}} [options]
   */
  constructor(input, output, options = {}) {
    this.options = { ...DEFAULTS, ...options };
    this.input = input;
    this.output = output;
    this.nextId = 1;
    this.pending = new Map();
    this.chunks = [];
    this.buffered = 0;
    this.closedError = undefined;
    this.child = undefined;
    this.subscriptions = new Map();
    this.spawnError = undefined;
    input.on("data", (chunk) => this.#receive(chunk));
    input.on("end", () => this.#lost(new ConnectionClosedError("relay_closed", "the relay closed the connection")));
    input.on("error", (error) => this.#lost(ioError(error)));
    output.on("error", (error) => this.#lost(ioError(error)));
  }

  /**
   * Starts `c2-plugins serve --stdio` and connects to it.
   * @param {string} binary path of the c2-plugins executable
   * @param {{pluginsDir?: string, env?: Record<string,string>, cwd?: string, stderr?: "inherit"|"ignore"|"pipe"}} [options]
   */
  static spawn(binary, options = {}) {
    const args = ["serve", "--stdio"];
    if (options.pluginsDir) args.push("--plugins-dir", options.pluginsDir);
    let child;
    try {
      child = spawn(binary, args, {
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
        stdio: ["pipe", "pipe", options.stderr ?? "inherit"],
      });
    } catch (error) {
      // Some runtimes throw at once (a file that is not executable, on Bun): the client is
      // returned already failed, so the first request rejects with the SpawnError.
      const client = new RelayClient(new PassThrough(), new PassThrough(), options);
      client.spawnError = new SpawnError(binary, error);
      client.#fail(client.spawnError);
      return client;
    }
    const client = new RelayClient(child.stdout, child.stdin, options);
    client.child = child;
    // A binary that cannot start is reported as an 'error' event on the child (with no pid):
    // without this listener Node throws it as uncaught, and Bun never ends the child's stdout.
    child.on("error", (error) => {
      if (child.pid === undefined && client.spawnError === undefined) {
        client.spawnError = new SpawnError(binary, error);
        client.#fail(client.spawnError);
      }
    });
    child.once("exit", (code, signal) =>
      client.#lost(
        new ConnectionClosedError("relay_closed", `the service exited (${signal ?? `code ${code}`})`),
      ),
    );
    return client;
  }

  /**
   * Connects to a service's Unix socket (there is no TCP transport).
   * @param {string} socketPath e.g. `<plugins-dir>/.serve.sock`
   */
  static connect(socketPath, options = {}) {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ path: socketPath });
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        resolve(new RelayClient(socket, socket, options));
      });
    });
  }

  /**
   * Sends one request. With `signal`, aborting sends `$/cancelRequest`, and the call settles
   * with the relay's answer to it: a call the relay abandoned (`command/invoke`, `ui/invoke`,
   * `connectors/invoke`) rejects with a `CancelledError` once the relay has stopped its work, so
   * the next call never meets the process being stopped; any other request runs to its end and
   * settles with its real outcome (an aborted install that completed resolves with its result).
   * A signal aborted before the call rejects with a `CancelledError` and sends nothing.
   * @param {string} method
   * @param {unknown} [params]
   * @param {{signal?: AbortSignal}} [options]
   */
  request(method, params, options = {}) {
    if (this.closedError) return Promise.reject(this.closedError);
    if (this.pending.size >= this.options.maxPending) {
      return Promise.reject(new PendingLimitError(this.options.maxPending));
    }
    const id = this.nextId++;
    const signal = options.signal;
    const message = { jsonrpc: "2.0", id, method };
    if (params !== undefined) message.params = params;
    if (!signal) {
      // The common call: no abort listener to add and remove, so no closures per call.
      return new Promise((resolve, reject) => {
        this.pending.set(id, { method, resolve, reject });
        this.#write(message);
      });
    }
    if (signal.aborted) return Promise.reject(new CancelledError(method, {}, signal.reason));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        if (!this.pending.has(id) || this.closedError) return;
        this.#write({ jsonrpc: "2.0", method: "$/cancelRequest", params: { id } });
      };
      const settle = (fn) => (value) => {
        signal.removeEventListener("abort", onAbort);
        fn(value);
      };
      this.pending.set(id, { method, signal, resolve: settle(resolve), reject: settle(reject) });
      signal.addEventListener("abort", onAbort, { once: true });
      this.#write(message);
    });
  }

  /**
   * `relay/initialize`; must be the first request. `options.uiCacheKey` shares this
   * connection's host.actions renders with every connection that names the same key.
   */
  async initialize(client = { name: "c2-plugins-relay-js", version: "2.0.0" }, options = {}) {
    const params = { protocolVersion: RELAY_VERSION, client };
    if (options.uiCacheKey !== undefined) params.uiCacheKey = options.uiCacheKey;
    const result = await this.request("relay/initialize", params);
    const theirs = result && result.protocolVersion;
    if (majorVersion(theirs) === undefined || majorVersion(theirs) !== majorVersion(RELAY_VERSION)) {
      throw new RelayVersionError(theirs);
    }
    return result;
  }

  list() {
    return this.request("plugins/list", {});
  }

  /**
   * Installs a bundle; with `options.marketplace`, `source` is a catalog entry `NAME[@VERSION]`.
   * @param {string} source
   * @param {{trust?: boolean, enable?: boolean, marketplace?: string}} [options]
   */
  install(source, options = {}) {
    const params = { source, trust: !!options.trust, enable: !!options.enable };
    if (options.marketplace !== undefined) params.marketplace = options.marketplace;
    return this.request("plugins/install", params);
  }

  /** The configured catalogs (`hub/marketplaces`). */
  marketplaces() {
    return this.request("hub/marketplaces", {});
  }

  /**
   * Reads, validates and adds a catalog (`hub/addMarketplace`).
   * @param {string} location
   * @param {string} [name]
   */
  addMarketplace(location, name) {
    return this.request("hub/addMarketplace", name === undefined ? { location } : { location, name });
  }

  /** @param {string} name */
  removeMarketplace(name) {
    return this.request("hub/removeMarketplace", { name });
  }

  /**
   * Catalog entries whose name, description or keywords contain `text` (`hub/search`).
   * @param {string} text
   * @param {string} [marketplace]
   */
  search(text, marketplace) {
    return this.request("hub/search", marketplace === undefined ? { text } : { text, marketplace });
  }

  /** Bundles installed from a catalog compared with its entries (`hub/outdated`). */
  outdated() {
    return this.request("hub/outdated", {});
  }

  /**
   * Updates one bundle, or every catalog-installed one, in place (`hub/update`).
   * @param {string} [id]
   */
  update(id) {
    return this.request("hub/update", id === undefined ? {} : { id });
  }

  uninstall(id) {
    return this.request("plugins/uninstall", { id });
  }

  trust(id) {
    return this.request("plugins/trust", { id });
  }

  untrust(id) {
    return this.request("plugins/untrust", { id });
  }

  enable(id, project) {
    return this.request("plugins/enable", withProject({ id }, project));
  }

  disable(id, project) {
    return this.request("plugins/disable", withProject({ id }, project));
  }

  /**
   * One component's choice: `component` is `<kind>:<local-id>` (e.g. `skill:review`,
   * `runtime-command:review.run`), `state` is `"enable"`, `"disable"` or `"inherit"` (drop the
   * override in that scope). Resolves to the applied change plus its stored `component` key.
   */
  setComponent(id, component, state, project) {
    if (!["enable", "disable", "inherit"].includes(state)) {
      return Promise.reject(new TypeError(`state must be "enable", "disable" or "inherit", not ${JSON.stringify(state)}`));
    }
    return this.request(`plugins/${state}`, withProject({ id, component }, project));
  }

  runtimePid(id, project) {
    return this.request("plugins/runtimePid", withProject({ id }, project)).then((r) => r.pid);
  }

  /** Looks at the store and policy again now: `{changed}`, a `StoreChanged` or `null`. */
  refresh() {
    return this.request("plugins/refresh", {});
  }

  /** The store's developer mode: development bundles and the last reload. */
  developerStatus() {
    return this.request("plugins/developerStatus", {});
  }

  /** Develops the working directory `path` (`enabled` true), or ends developer mode (`false`). */
  setDeveloperMode(enabled, path) {
    return this.request("plugins/setDeveloperMode", path === undefined ? { enabled } : { enabled, path });
  }

  /** Collects one development bundle (`id`) or all of them again now. */
  reloadDevelopment(id) {
    return this.request("plugins/reloadDevelopment", id === undefined ? {} : { id });
  }

  commands(project) {
    return this.request("realm/commands", withProject({}, project));
  }

  catalog(project) {
    return this.request("realm/catalog", withProject({}, project));
  }

  /**
   * Plans a policy change (`plugins/plan`); its revisions are decimal strings.
   * @param {string} id
   * @param {{action: string, config?: unknown}} change
   * @param {{project?: string, component?: string}} [options]
   */
  plan(id, change, options = {}) {
    const params = withProject({ id, change }, options.project);
    if (options.component !== undefined) params.component = options.component;
    return this.request("plugins/plan", params);
  }

  /** Applies a plan `plan()` answered, unchanged, while its revisions are current. */
  apply(plan) {
    return this.request("plugins/apply", { plan });
  }

  /** Clears one bundle's policy, or all of it (`plugins/reset`). */
  reset(id) {
    return this.request("plugins/reset", id === undefined ? {} : { id });
  }

  /**
   * The MCP servers a session in the realm is composed with (`mcp/list`); launches nothing.
   * @param {string} [project]
   * @param {{envValues?: boolean}} [options]
   */
  mcpServers(project, options = {}) {
    return this.request("mcp/list", withProject({ envValues: !!options.envValues }, project));
  }

  /**
   * The skills, prompt commands and subagents a session in the user realm, or a project's, is
   * offered; items not offered carry `name: null` and the reason in `status`.
   * @param {string} [project]
   */
  skills(project) {
    return this.request("skills/list", withProject({}, project));
  }

  /**
   * The scene and pipeline files of the bundles enabled in the realm, each with its status.
   * @param {string} [project]
   */
  scenes(project) {
    return this.request("scenes/list", withProject({}, project));
  }

  /**
   * Invokes a command in the user realm, or a project's.
   * @param {string} command
   * @param {unknown} [args]
   * @param {{project?: string, signal?: AbortSignal}} [options]
   */
  invoke(command, args = {}, options = {}) {
    return this.request("command/invoke", withProject({ command, args }, options.project), {
      signal: options.signal,
    });
  }

  /**
   * Activates a UI descriptor (`ui/invoke`). For a `host.actions` descriptor, `render`
   * (the default) answers `{actions}`, and `invoke` with an `actionId` replays the input of the
   * item this connection rendered under the same session (`sessionId`, else `context.sessionId`).
   * `context` carries what the frontend owns: its session's `cwd` and `sessionId`.
   * @param {string} id
   * @param {string} ui
   * @param {{project?: string, sessionId?: string, operation?: "render" | "invoke", actionId?: string, context?: {cwd?: string, sessionId?: string}, signal?: AbortSignal}} [options]
   */
  invokeUi(id, ui, options = {}) {
    const params = withProject({ id, ui }, options.project);
    for (const key of ["sessionId", "operation", "actionId", "context"]) {
      if (options[key] !== undefined) params[key] = options[key];
    }
    return this.request("ui/invoke", params, { signal: options.signal });
  }

  /**
   * Subscribes to a JSON bus event; `onEvent` gets `{subscription, name, payload, dropped}`.
   * Resolves with the subscription number for `unsubscribe`.
   */
  async subscribe(event, onEvent) {
    const { subscription } = await this.request("events/subscribe", { event });
    this.subscriptions.set(subscription, onEvent);
    return subscription;
  }

  async unsubscribe(subscription) {
    this.subscriptions.delete(subscription);
    return (await this.request("events/unsubscribe", { subscription })).removed;
  }

  /** Publishes a host event (`engine/event`, `skills/changed`, `scenes/changed`). */
  async publish(name, payload) {
    return (await this.request("events/publish", { name, payload })).delivered;
  }

  /** Closes the connection; a spawned service then shuts its runtimes down and exits. */
  close() {
    this.#fail(new ConnectionClosedError("client_closed", "the client closed the connection"));
    this.output.end();
    if (this.input !== this.output) this.input.destroy?.();
  }

  /** Resolves with the spawned service's exit code once it has exited. */
  exited() {
    if (this.spawnError) return Promise.reject(this.spawnError);
    const child = this.child;
    if (!child) return Promise.reject(new Error("this client did not spawn the service"));
    if (child.exitCode !== null) return Promise.resolve(child.exitCode);
    return new Promise((resolve, reject) => {
      child.once("exit", (code) => resolve(code));
      child.once("error", () => {
        if (this.spawnError) reject(this.spawnError);
      });
    });
  }

  #write(message) {
    if (this.closedError) return;
    this.output.write(`${JSON.stringify(message)}\n`);
  }

  #receive(chunk) {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(10, start);
      if (newline === -1) break;
      let line;
      if (this.chunks.length === 0) {
        // The whole line is in this chunk (the usual case): decode it in place.
        line = chunk.toString("utf8", start, newline);
      } else {
        this.chunks.push(chunk.subarray(start, newline));
        line = Buffer.concat(this.chunks).toString("utf8");
        this.chunks = [];
        this.buffered = 0;
      }
      start = newline + 1;
      this.#dispatch(line);
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0) return;
    this.buffered += rest.length;
    if (this.buffered > this.options.maxFrameBytes) {
      this.#fail(
        new ConnectionClosedError(
          "frame_too_large",
          `the relay sent a line over ${this.options.maxFrameBytes} bytes (maxFrameBytes)`,
        ),
      );
      this.input.destroy?.();
      return;
    }
    this.chunks.push(rest);
  }

  #dispatch(line) {
    // A blank line is not JSON either, so it is dropped by the same catch.
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    if (message === null || typeof message !== "object") return;
    if (message.method === "events/event" && message.id === undefined) {
      const onEvent = this.subscriptions.get(message.params?.subscription);
      if (onEvent) onEvent(message.params);
      return;
    }
    // Other notifications, and responses without a known id, are dropped.
    if (message.id === undefined || message.id === null || message.method !== undefined) return;
    const waiter = this.pending.get(message.id);
    if (!waiter) return;
    this.pending.delete(message.id);
    if (message.error) {
      const cancelled = message.error.code === REQUEST_CANCELLED;
      waiter.reject(
        cancelled
          ? new CancelledError(waiter.method, message.error, waiter.signal?.reason)
          : new RelayError(waiter.method, message.error),
      );
    } else waiter.resolve(message.result);
  }

  /** The connection ended under the client; a spawn that failed reports itself instead. */
  #lost(error) {
    if (this.child && this.child.pid === undefined) return;
    this.#fail(error);
  }

  #fail(error) {
    if (this.closedError) return;
    this.closedError = error;
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
  }
}

function ioError(error) {
  return new ConnectionClosedError("io_error", `the connection to the relay failed: ${error.message}`, error);
}

function withProject(params, project) {
  return project === undefined ? params : { ...params, project };
}
