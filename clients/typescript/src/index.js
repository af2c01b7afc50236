// Client of the `c2-plugins serve` relay: JSON-RPC 2.0 over newline-delimited JSON, on the
// service's stdio (`RelayClient.spawn`) or its Unix socket (`RelayClient.connect`,
// `RelayClient.connectOrSpawn`). It uses Node's built-in modules only (Bun provides them too).
// Every buffer is bounded: a line longer than `maxFrameBytes` closes the connection, at most
// `maxPending` requests wait for an answer at once, and an `events()` stream holds at most
// `maxQueued` events its reader has not taken. docs/relay.md documents every method;
// src/index.d.ts types them; README.md and docs/desktop.md show how a frontend uses them.

import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
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

/** The JSON-RPC error code of a busy relay (too many requests or subscriptions at once). */
export const HOST_BUSY = -32003;

/** The file name of a socket service's default socket, in its plugins directory. */
export const SOCKET_FILE = ".serve.sock";

/** The relay methods `$/cancelRequest` abandons; aborting any other request changes nothing. */
export const CANCELLABLE = Object.freeze(["command/invoke", "ui/invoke", "connectors/invoke"]);

/**
 * Every relay method, with the `RelayClient` method that sends it (the agreement test holds
 * this table equal to docs/schemas/relay.json).
 */
export const CLIENT_METHODS = Object.freeze({
  "relay/initialize": "initialize",
  "relay/describe": "describe",
  "plugins/list": "list",
  "plugins/install": "install",
  "plugins/uninstall": "uninstall",
  "plugins/trust": "trust",
  "plugins/untrust": "untrust",
  "plugins/enable": "enable",
  "plugins/disable": "disable",
  "plugins/inherit": "inherit",
  "plugins/reset": "reset",
  "plugins/plan": "plan",
  "plugins/apply": "apply",
  "plugins/runtimePid": "runtimePid",
  "plugins/refresh": "refresh",
  "realm/catalog": "catalog",
  "realm/commands": "commands",
  "command/invoke": "invoke",
  "ui/catalog": "uiCatalog",
  "ui/invoke": "invokeUi",
  "lsp/list": "languages",
  "lsp/resolve": "resolveLanguage",
  "mcp/list": "mcpServers",
  "skills/list": "skills",
  "scenes/list": "scenes",
  "connectors/list": "connectors",
  "connectors/registerProvider": "registerProvider",
  "connectors/invoke": "invokeConnector",
  "events/subscribe": "subscribe",
  "events/unsubscribe": "unsubscribe",
  "events/publish": "publish",
  "hub/marketplaces": "marketplaces",
  "hub/addMarketplace": "addMarketplace",
  "hub/removeMarketplace": "removeMarketplace",
  "hub/search": "search",
  "hub/outdated": "outdated",
  "hub/update": "update",
  "health/status": "health",
  "plugins/developerStatus": "developerStatus",
  "plugins/setDeveloperMode": "setDeveloperMode",
  "plugins/reloadDevelopment": "reloadDevelopment",
});

/** What a connect to a socket that no service listens on fails with. */
const NOTHING_LISTENING = ["ENOENT", "ECONNREFUSED", "ECONNRESET", "ENOTDIR"];

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
    this.retryable = false;
    this.relayVersion = relayVersion;
    this.supported = RELAY_VERSION;
  }
}

/**
 * The connection to the relay is gone, or never came: the relay closed it or exited
 * (`reason: "relay_closed"`), reading or writing failed (`"io_error"`, the stream's error as
 * `cause`), the socket could not be reached (`"connect_failed"`, `errno` `ENOENT`,
 * `ECONNREFUSED`, ...), the relay sent a line over `maxFrameBytes` (`"frame_too_large"`) or
 * this client was closed (`"client_closed"`). Every request waiting for an answer, and every
 * later one, rejects with it. A new connection (or a new service) may succeed: `retryable` is
 * true except for a closed client and an oversized line.
 */
export class ConnectionClosedError extends Error {
  constructor(reason, message, cause) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ConnectionClosedError";
    this.kind = "connection_closed";
    this.code = "ERR_RELAY_CLOSED";
    this.reason = reason;
    this.retryable = reason !== "client_closed" && reason !== "frame_too_large";
    /** The system's error code of an I/O or connect failure, when there is one. */
    this.errno = typeof cause?.code === "string" ? cause.code : undefined;
  }
}

/**
 * The service could not be started: the binary is missing or not executable (`reason:
 * "spawn"`, the spawn's error as `cause`), or, for `connectOrSpawn`, it exited before it was
 * ready (`"exited"`, with its `failure` as it printed it) or did not announce readiness in
 * time (`"timeout"`).
 */
export class SpawnError extends Error {
  constructor(binary, cause, reason = "spawn", detail = undefined) {
    super(
      detail ?? `cannot start the service ${binary}: ${cause?.code ?? cause?.message ?? cause}`,
      cause === undefined ? undefined : { cause },
    );
    this.name = "SpawnError";
    this.kind = "spawn_failed";
    this.code = "ERR_RELAY_SPAWN";
    this.retryable = false;
    this.binary = binary;
    this.reason = reason;
    /** The system's error code (`ENOENT`, `EACCES`, ...), when there is one. */
    this.errno = typeof cause?.code === "string" ? cause.code : undefined;
    /** The service's own failure (`{kind, message, hint?}`) when it printed one. */
    this.failure = undefined;
  }
}

/** `maxPending` requests were already waiting for an answer; retry once some are answered. */
export class PendingLimitError extends Error {
  constructor(limit) {
    super(`${limit} requests are already waiting (maxPending); retry later`);
    this.name = "PendingLimitError";
    this.kind = "too_many_pending";
    this.code = "ERR_RELAY_PENDING_LIMIT";
    this.retryable = true;
    this.limit = limit;
  }
}

/**
 * A JSON-RPC error answer; `kind` is the host's error kind when the host produced it, `hint`
 * its advice for a person, `next` the same advice as an action a frontend can offer
 * (`{action, id?, component?, project?}`), `pluginError` the plugin's own error (`{code,
 * data}`) of a failed command, `diagnostics` the findings of an invalid bundle. `retryable`
 * when the relay was busy (`host_busy`).
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
    this.next = data.next !== null && typeof data.next === "object" ? data.next : undefined;
    this.environment = data.environment === true;
    this.pluginError = data.pluginError !== null && typeof data.pluginError === "object" ? data.pluginError : undefined;
    this.diagnostics = Array.isArray(data.diagnostics) ? data.diagnostics : undefined;
    this.retryable = this.kind === "host_busy" || error.code === HOST_BUSY;
  }
}

/**
 * The relay answered a request this client aborted with `REQUEST_CANCELLED` (or the signal was
 * aborted before the request was sent): `cause` is the signal's `reason`. A `RelayError` of
 * code `REQUEST_CANCELLED` and kind `cancelled`; not retryable (the caller asked for it).
 */
export class CancelledError extends RelayError {
  constructor(method, error, reason) {
    super(method, { message: "cancelled by the caller", ...error, code: REQUEST_CANCELLED }, reason);
    this.name = "CancelledError";
    this.kind = "cancelled";
    this.retryable = false;
  }
}

/**
 * The runtime serving this call was stopped under it: another caller cancelled a call on the
 * same runtime (the protocol has no per-call cancel, so one window's cancel stops the runtime
 * every window shares), or the bundle was unloaded. Kind `cancelled`, `retryable`: the next
 * call starts the runtime again.
 */
export class RuntimeStoppedError extends RelayError {
  constructor(method, error) {
    super(method, error);
    this.name = "RuntimeStoppedError";
    this.retryable = true;
  }
}

/** The error of a relay answer, as the class that fits it. */
function answerError(method, error, signal) {
  if (error.code === REQUEST_CANCELLED) return new CancelledError(method, error, signal?.reason);
  if (error.data?.kind === "cancelled") return new RuntimeStoppedError(method, error);
  return new RelayError(method, error);
}

/** A disposable: `dispose()` (also `Symbol.dispose`, where the runtime has it) runs `fn` once. */
function disposable(fn) {
  let done = false;
  const dispose = () => {
    if (done) return;
    done = true;
    fn();
  };
  const handle = { dispose };
  if (typeof Symbol.dispose === "symbol") handle[Symbol.dispose] = dispose;
  return handle;
}

/**
 * The events of one subscription as an async iterator (`client.events(name)`): `for await`
 * takes them in order. Leaving the loop (`break`, `return`, a thrown error), `close()` or the
 * signal unsubscribes and ends it normally; the end of the connection ends it with the
 * `ConnectionClosedError`, which the loop throws. `ended` resolves when it has ended.
 */
export class EventStream {
  constructor(client, event, options = {}) {
    this.client = client;
    this.event = event;
    this.subscription = undefined;
    /** Events dropped here because the reader held `maxQueued` untaken ones. */
    this.droppedLocally = 0;
    this.maxQueued = options.maxQueued ?? 1024;
    this.queue = [];
    this.waiters = [];
    this.error = undefined;
    this.done = false;
    let resolveEnded;
    this.ended = new Promise((resolve) => {
      resolveEnded = resolve;
    });
    this.resolveEnded = resolveEnded;
    const signal = options.signal;
    if (signal?.aborted) {
      this.ready = Promise.resolve(undefined);
      this.#finish(undefined);
      return;
    }
    const onAbort = () => void this.close();
    signal?.addEventListener("abort", onAbort, { once: true });
    this.ended.then(() => signal?.removeEventListener("abort", onAbort));
    this.ready = client
      .subscribe(event, (e) => this.#push(e), { onEnd: (error) => this.#finish(error) })
      .then(
        (subscription) => {
          this.subscription = subscription;
          // Closed while the subscription was being made: undo it now.
          if (this.done) client.unsubscribe(subscription).catch(() => {});
          return subscription;
        },
        (error) => {
          this.#finish(error);
          throw error;
        },
      );
    // The failure reaches the reader through `next()`; nothing is left unhandled.
    this.ready.catch(() => {});
  }

  /** Unsubscribes (when the subscription was made) and ends the stream normally. */
  async close() {
    if (this.done) return;
    this.#finish(undefined);
    const subscription = await this.ready.catch(() => undefined);
    if (subscription !== undefined && !this.client.closedError) {
      await this.client.unsubscribe(subscription).catch(() => {});
    }
  }

  async next() {
    if (this.queue.length > 0) return { value: this.queue.shift(), done: false };
    if (this.done) {
      if (this.error) {
        const error = this.error;
        this.error = undefined;
        throw error;
      }
      return { value: undefined, done: true };
    }
    await this.ready.catch(() => {});
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject })).then(() => this.next());
  }

  async return() {
    await this.close();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  #push(event) {
    if (this.done) return;
    if (this.queue.length >= this.maxQueued) {
      this.droppedLocally += 1;
      return;
    }
    this.queue.push(event);
    this.#wake();
  }

  #finish(error) {
    if (this.done) return;
    this.done = true;
    this.error = error;
    this.resolveEnded(error);
    this.#wake();
  }

  #wake() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.resolve();
  }
}

if (typeof Symbol.asyncDispose === "symbol") {
  EventStream.prototype[Symbol.asyncDispose] = function dispose() {
    return this.close();
  };
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
    /** The socket service this client reached through `connectOrSpawn`, else `undefined`. */
    this.service = undefined;
    this.subscriptions = new Map();
    // Events of a subscription whose number this client has not read yet (the relay may
    // send the first event before the `events/subscribe` answer): a few, bounded.
    this.early = [];
    this.listeners = { close: new Set(), error: new Set() };
    this.spawnError = undefined;
    let resolveClosed;
    /** Resolves (never rejects) with the error that ended the connection, once it has ended. */
    this.closed = new Promise((resolve) => {
      resolveClosed = resolve;
    });
    this.resolveClosed = resolveClosed;
    input.on("data", (chunk) => this.#receive(chunk));
    input.on("end", () => this.#lost(new ConnectionClosedError("relay_closed", "the relay closed the connection")));
    input.on("error", (error) => this.#lost(ioError(error)));
    output.on("error", (error) => this.#lost(ioError(error)));
  }

  /**
   * Starts `c2-plugins serve --stdio` and connects to it. The service is this client's own: it
   * ends when the client closes (the end of its stdin) or the app exits.
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
   * Connects to a service's Unix socket (there is no TCP transport). Rejects with a
   * `ConnectionClosedError` of reason `connect_failed` when nothing listens there.
   * @param {string} socketPath e.g. `<plugins-dir>/.serve.sock`
   */
  static connect(socketPath, options = {}) {
    const connectFailed = (error) =>
      new ConnectionClosedError("connect_failed", `cannot connect to ${socketPath}: ${error.code ?? error.message}`, error);
    return new Promise((resolve, reject) => {
      // A path with nothing there fails without a connect: Bun's test runner reports the
      // failed connect of a missing Unix socket as an uncaught error even when it is handled.
      try {
        statSync(socketPath);
      } catch (error) {
        reject(connectFailed(error));
        return;
      }
      let socket;
      try {
        socket = createConnection({ path: socketPath });
      } catch (error) {
        reject(connectFailed(error));
        return;
      }
      // `on`, not `once`: a runtime may report a failed connect more than once, and an 'error'
      // without a listener is thrown.
      const failed = (error) => {
        socket.destroy();
        reject(connectFailed(error));
      };
      socket.on("error", failed);
      socket.once("connect", () => {
        socket.off("error", failed);
        resolve(new RelayClient(socket, socket, options));
      });
    });
  }

  /**
   * Joins the socket service of a plugins directory, or starts one and joins it once it is
   * ready. With a service listening on the socket, this is `connect`. Otherwise it runs
   * `c2-plugins serve --socket [PATH] --format json` and waits for the ready line the service
   * prints when it accepts connections (no polling). `service: "owned"` (the default) keeps
   * the service a child of this process: `close()` stops it (SIGTERM) and `exited()` waits for
   * it. `service: "detached"` leaves it running for other windows, the CLI and later starts
   * of the app; it stops on SIGTERM (its pid is `client.service.pid`). `client.service` says
   * what happened: `{socket, pid, spawned, owned}`.
   * @param {string} binary
   * @param {{socket?: string, pluginsDir?: string, service?: "owned"|"detached", env?: Record<string,string>, cwd?: string, stderr?: "inherit"|"ignore", readyTimeoutMs?: number, maxFrameBytes?: number, maxPending?: number}} [options]
   */
  static async connectOrSpawn(binary, options = {}) {
    const known = options.socket ?? (options.pluginsDir ? join(options.pluginsDir, SOCKET_FILE) : undefined);
    if (known !== undefined) {
      const client = await RelayClient.connect(known, options).catch((error) => {
        if (!NOTHING_LISTENING.includes(error.errno)) throw error;
        return undefined;
      });
      // A socket a killed service left behind may still take a connection while the dying
      // process closes it: a service that answers is alive (a request before
      // `relay/initialize` is answered -32010); one that closes instead is replaced.
      if (client && (await client.#answers())) {
        client.service = { socket: known, pid: undefined, spawned: false, owned: false };
        return client;
      }
      client?.close();
    }
    const owned = (options.service ?? "owned") === "owned";
    const args = ["serve", "--format", "json"];
    if (options.pluginsDir) args.push("--plugins-dir", options.pluginsDir);
    args.push(options.socket ? `--socket=${options.socket}` : "--socket");
    const started = await startService(binary, args, options, owned);
    if (started.joinOther && known === undefined) {
      const failed = new SpawnError(binary, undefined, "exited", `the service ${binary} failed: ${started.failure.message}`);
      failed.failure = started.failure;
      throw failed;
    }
    if (started.joinOther) {
      // Another process started the directory's service at the same moment: join it.
      const client = await joinWhenListening(known, options.readyTimeoutMs ?? 30_000, options);
      client.service = { socket: known, pid: undefined, spawned: false, owned: false };
      return client;
    }
    const { child, ready } = started;
    let client;
    try {
      client = await RelayClient.connect(ready.socket, options);
    } catch (error) {
      if (owned) child.kill("SIGTERM");
      throw error;
    }
    client.service = { socket: ready.socket, pid: ready.pid, spawned: true, owned };
    if (owned) client.child = child;
    return client;
  }

  /**
   * Sends one request. With `signal`, aborting sends `$/cancelRequest` for a cancellable
   * method (`CANCELLABLE`), and the call settles with the relay's answer to it: a call the
   * relay abandoned rejects with a `CancelledError` once the relay has stopped its work, so
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
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(new CancelledError(method, {}, signal.reason));
    const id = this.nextId++;
    const message = { jsonrpc: "2.0", id, method };
    if (params !== undefined) message.params = params;
    if (!signal || !CANCELLABLE.includes(method)) {
      // No abort listener to add and remove, so no closures per call.
      return new Promise((resolve, reject) => {
        this.pending.set(id, { method, resolve, reject });
        this.#write(message);
      });
    }
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

  /** The relay's description document (`relay/describe`, docs/schemas/relay.json). */
  describe() {
    return this.request("relay/describe", {});
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

  /**
   * What updating one bundle, or every catalog-installed one, would change; applies nothing
   * (`hub/update` with `dryRun`).
   * @param {string} [id]
   */
  reviewUpdate(id) {
    return this.request("hub/update", id === undefined ? { dryRun: true } : { id, dryRun: true });
  }

  uninstall(id, options = {}) {
    const params = { id };
    if (options.keepData !== undefined) params.keepData = options.keepData;
    return this.request("plugins/uninstall", params);
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

  /** Drops the bundle's choice in `project`, so the user scope's applies there (`plugins/inherit`). */
  inherit(id, project) {
    return this.request("plugins/inherit", withProject({ id }, project));
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

  /** Every plugin runtime's health per bundle and realm: `{runtimes}`. */
  health() {
    return this.request("health/status", {});
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

  /** The realm's language mappings (`lsp/list`). */
  languages(project) {
    return this.request("lsp/list", withProject({}, project));
  }

  /** What one editor language id resolves to in a project (`lsp/resolve`). */
  resolveLanguage(language, project) {
    return this.request("lsp/resolve", { language, project });
  }

  /** The realm's UI descriptors per slot (`ui/catalog`). */
  uiCatalog(project) {
    return this.request("ui/catalog", withProject({}, project));
  }

  /** The declared connectors of trusted, enabled bundles (`connectors/list`). */
  connectors() {
    return this.request("connectors/list", {});
  }

  /** Registers this frontend as the adapter of a connector provider (`connectors/registerProvider`). */
  registerProvider(provider) {
    return this.request("connectors/registerProvider", { provider });
  }

  /**
   * Runs one connector operation (`connectors/invoke`) after the host's checks.
   * @param {{project?: string, signal?: AbortSignal}} [options]
   */
  invokeConnector(id, connector, operation, input, options = {}) {
    const params = withProject({ id, connector, operation }, options.project);
    if (input !== undefined) params.input = input;
    return this.request("connectors/invoke", params, { signal: options.signal });
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
   * Resolves with the subscription number for `unsubscribe`. `options.onEnd` is called once
   * when the subscription ends: with nothing after `unsubscribe`, with the
   * `ConnectionClosedError` when the connection ends.
   */
  async subscribe(event, onEvent, options = {}) {
    const { subscription } = await this.request("events/subscribe", { event });
    this.subscriptions.set(subscription, { onEvent, onEnd: options.onEnd });
    const early = this.early.filter((e) => e.subscription === subscription);
    this.early = this.early.filter((e) => e.subscription !== subscription);
    for (const e of early) onEvent(e);
    return subscription;
  }

  /**
   * The events of `event` as an async iterator: `for await (const e of client.events("store/changed"))`.
   * @param {string} event
   * @param {{signal?: AbortSignal, maxQueued?: number}} [options]
   */
  events(event, options = {}) {
    return new EventStream(this, event, options);
  }

  async unsubscribe(subscription) {
    const entry = this.subscriptions.get(subscription);
    this.subscriptions.delete(subscription);
    entry?.onEnd?.(undefined);
    return (await this.request("events/unsubscribe", { subscription })).removed;
  }

  /** Publishes a host event (`engine/event`, `skills/changed`, `scenes/changed`). */
  async publish(name, payload) {
    return (await this.request("events/publish", { name, payload })).delivered;
  }

  /**
   * Listens to the connection's end: `"close"` once, with the error that ended it; `"error"`
   * first when it ended by a fault (I/O, an oversized line, a failed spawn). Returns a
   * disposable that removes the listener.
   * @param {"close"|"error"} type
   * @param {(error: Error) => void} listener
   */
  on(type, listener) {
    const set = this.listeners[type];
    if (!set) throw new TypeError(`unknown event ${JSON.stringify(type)}: "close" or "error"`);
    set.add(listener);
    return disposable(() => set.delete(listener));
  }

  /** Removes a listener `on` added. */
  off(type, listener) {
    this.listeners[type]?.delete(listener);
  }

  /**
   * Closes the connection. A spawned stdio service then shuts its runtimes down and exits; a
   * socket service this client owns (`connectOrSpawn`) is stopped with SIGTERM.
   */
  close() {
    this.#fail(new ConnectionClosedError("client_closed", "the client closed the connection"));
    this.output.end();
    if (this.input !== this.output) this.input.destroy?.();
    if (this.service?.owned && this.child && this.child.exitCode === null) this.child.kill("SIGTERM");
  }

  /** Resolves with the spawned (or owned) service's exit code once it has exited. */
  exited() {
    if (this.spawnError) return Promise.reject(this.spawnError);
    const child = this.child;
    if (!child) return Promise.reject(new Error("this client did not start the service it talks to"));
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
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
      const params = message.params;
      const entry = this.subscriptions.get(params?.subscription);
      if (entry) entry.onEvent(params);
      else if (params && this.early.length < 64) this.early.push(params);
      return;
    }
    // Other notifications, and responses without a known id, are dropped.
    if (message.id === undefined || message.id === null || message.method !== undefined) return;
    const waiter = this.pending.get(message.id);
    if (!waiter) return;
    this.pending.delete(message.id);
    if (message.error) waiter.reject(answerError(waiter.method, message.error, waiter.signal));
    else waiter.resolve(message.result);
  }

  /** Whether the relay answers at all (before `relay/initialize`, with -32010). */
  async #answers() {
    const answer = await this.request("relay/describe", {}).then(
      () => true,
      (error) => error instanceof RelayError,
    );
    return answer;
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
    const subscriptions = [...this.subscriptions.values()];
    this.subscriptions.clear();
    this.early = [];
    for (const entry of subscriptions) entry.onEnd?.(error);
    const fault = !(error instanceof ConnectionClosedError) || !["client_closed", "relay_closed"].includes(error.reason);
    if (fault) for (const listener of [...this.listeners.error]) listener(error);
    for (const listener of [...this.listeners.close]) listener(error);
    this.resolveClosed(error);
  }
}

/**
 * Starts a socket service and waits for its ready line: `{child, ready}`, or `{joinOther}`
 * when another service took the directory first (`service_running`).
 */
function startService(binary, args, options, owned) {
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = spawn(binary, args, {
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
        stdio: ["ignore", "pipe", options.stderr ?? "ignore"],
        detached: !owned,
      });
    } catch (error) {
      reject(new SpawnError(binary, error));
      return;
    }
    let settled = false;
    let text = "";
    // What the service printed, for its failure (a pretty-printed JSON document); bounded.
    let printed = "";
    const settle = (fn, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn(value);
    };
    const timeoutMs = options.readyTimeoutMs ?? 30_000;
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      settle(reject, new SpawnError(binary, undefined, "timeout", `the service ${binary} did not announce readiness within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on("error", (error) => settle(reject, new SpawnError(binary, error)));
    child.stdout.on("data", (chunk) => {
      text += chunk.toString("utf8");
      if (printed.length < 65_536) printed += chunk.toString("utf8");
      let newline;
      while ((newline = text.indexOf("\n")) !== -1) {
        const line = text.slice(0, newline);
        text = text.slice(newline + 1);
        let message;
        try {
          message = JSON.parse(line);
        } catch {
          continue;
        }
        if (message?.ready === true && typeof message.socket === "string") {
          if (!owned) {
            child.stdout.destroy();
            child.unref();
          }
          settle(resolve, { child, ready: message });
          return;
        }
      }
    });
    // Once its output is complete: a service that exited before it was ready printed why.
    child.once("close", (code, signal) => {
      let failure;
      try {
        failure = JSON.parse(printed)?.error;
      } catch {
        failure = undefined;
      }
      if (failure?.kind === "service_running") {
        settle(resolve, { joinOther: true, failure });
        return;
      }
      const why = failure?.message ?? `it exited before it was ready (${signal ?? `code ${code}`})`;
      const failed = new SpawnError(binary, undefined, "exited", `the service ${binary} failed: ${why}`);
      failed.failure = failure;
      settle(reject, failed);
    });
  });
}

/** Connects to a socket another process's service is about to listen on. */
async function joinWhenListening(socket, timeoutMs, options) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await RelayClient.connect(socket, options);
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function ioError(error) {
  return new ConnectionClosedError("io_error", `the connection to the relay failed: ${error.message}`, error);
}

function withProject(params, project) {
  return project === undefined ? params : { ...params, project };
}
