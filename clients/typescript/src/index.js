// Client of the `c2-plugins serve` relay: JSON-RPC 2.0 over newline-delimited JSON, on the
// service's stdio (`RelayClient.spawn`) or its Unix socket (`RelayClient.connect`). It uses
// Node's built-in modules only. Every buffer is bounded: a line longer than `maxFrameBytes`
// closes the connection, and at most `maxPending` requests wait for an answer at once.
// docs/relay.md documents every method; src/index.d.ts types them.

import { spawn } from "node:child_process";
import { createConnection } from "node:net";

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
    this.relayVersion = relayVersion;
    this.supported = RELAY_VERSION;
  }
}

/** A JSON-RPC error answer; `kind` is the host's error kind when the host produced it. */
export class RelayError extends Error {
  constructor(method, error) {
    super(`${method}: ${error.message}`);
    this.name = "RelayError";
    this.code = error.code;
    this.data = error.data;
    this.kind = error.data && typeof error.data.kind === "string" ? error.data.kind : undefined;
    this.hint = error.data && typeof error.data.hint === "string" ? error.data.hint : undefined;
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
    input.on("data", (chunk) => this.#receive(chunk));
    input.on("end", () => this.#fail(new Error("the relay closed the connection")));
    input.on("error", (error) => this.#fail(error));
    output.on("error", (error) => this.#fail(error));
  }

  /**
   * Starts `c2-plugins serve --stdio` and connects to it.
   * @param {string} binary path of the c2-plugins executable
   * @param {{pluginsDir?: string, env?: Record<string,string>, cwd?: string, stderr?: "inherit"|"ignore"|"pipe"}} [options]
   */
  static spawn(binary, options = {}) {
    const args = ["serve", "--stdio"];
    if (options.pluginsDir) args.push("--plugins-dir", options.pluginsDir);
    const child = spawn(binary, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ["pipe", "pipe", options.stderr ?? "inherit"],
    });
    const client = new RelayClient(child.stdout, child.stdin, options);
    client.child = child;
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
   * Sends one request. With `signal`, aborting sends `$/cancelRequest` and rejects at once
   * with a RelayError of code REQUEST_CANCELLED.
   * @param {string} method
   * @param {unknown} [params]
   * @param {{signal?: AbortSignal}} [options]
   */
  request(method, params, options = {}) {
    if (this.closedError) return Promise.reject(this.closedError);
    if (this.pending.size >= this.options.maxPending) {
      return Promise.reject(
        new Error(`${this.options.maxPending} requests are already waiting (maxPending); retry later`),
      );
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
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        if (!this.pending.delete(id)) return;
        this.#write({ jsonrpc: "2.0", method: "$/cancelRequest", params: { id } });
        reject(new RelayError(method, { code: REQUEST_CANCELLED, message: "cancelled by the caller" }));
      };
      const settle = (fn) => (value) => {
        signal.removeEventListener("abort", onAbort);
        fn(value);
      };
      this.pending.set(id, { method, resolve: settle(resolve), reject: settle(reject) });
      if (signal.aborted) return onAbort();
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
   * item this connection rendered under the same `sessionId`.
   * @param {string} id
   * @param {string} ui
   * @param {{project?: string, sessionId?: string, operation?: "render" | "invoke", actionId?: string, signal?: AbortSignal}} [options]
   */
  invokeUi(id, ui, options = {}) {
    const params = withProject({ id, ui }, options.project);
    for (const key of ["sessionId", "operation", "actionId"]) {
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
    this.#fail(new Error("the client closed the connection"));
    this.output.end();
    if (this.input !== this.output) this.input.destroy?.();
  }

  /** Resolves with the spawned service's exit code once it has exited. */
  exited() {
    const child = this.child;
    if (!child) return Promise.reject(new Error("this client did not spawn the service"));
    if (child.exitCode !== null) return Promise.resolve(child.exitCode);
    return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  #write(message) {
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
      this.#fail(new Error(`the relay sent a line over ${this.options.maxFrameBytes} bytes (maxFrameBytes)`));
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
    if (message.error) waiter.reject(new RelayError(waiter.method, message.error));
    else waiter.resolve(message.result);
  }

  #fail(error) {
    if (this.closedError) return;
    this.closedError = error;
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
  }
}

function withProject(params, project) {
  return project === undefined ? params : { ...params, project };
}
