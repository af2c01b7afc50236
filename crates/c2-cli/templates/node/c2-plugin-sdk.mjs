// @codetwo/c2-plugin-sdk 0.1.0: write a C2 plugin runtime (C2 Plugin Protocol 1.0.0) in
// JavaScript or TypeScript, on Node 20+ or Bun. This one ES module is the whole SDK: a bundle may
// carry it as a single file (c2-plugins new puts it beside plugin.mjs as c2-plugin-sdk.mjs),
// because installing a bundle executes nothing, so no npm install ever runs for it.
//
// What it does for a plugin: reads plugin.json and confirms exactly its declared commands and
// schemas at `initialize`; checks every call's args against its argsSchema before the handler
// runs; answers thrown errors as JSON-RPC errors (with `data`); runs handlers concurrently;
// gives each handler a context to call the host's public commands, emit events and log; keeps
// stdout for protocol frames (console.log and stray process.stdout writes go to stderr); bounds
// the lines it reads and writes; and exits when stdin closes.
//
// Validation: a "plain" argsSchema (type, properties, required, enum, bounds, allOf/anyOf/...;
// see isPlainSchema) is checked by the small evaluator below, with no dependency. Any other
// schema (pattern, format, $ref, ...) is compiled by ajv (draft 2020-12, `ajv/dist/2020`), which
// must then be resolvable from this file: installed next to the package, or shipped in the
// bundle's node_modules. Without it the plugin refuses to start, naming the command.

import * as fs from "node:fs";
import * as path from "node:path";

/** The version of this SDK. */
export const version = "0.1.0";
/** The C2 Plugin Protocol version this SDK speaks. */
export const protocolVersion = "1.0.0";

/** JSON-RPC error codes of the protocol. */
export const codes = Object.freeze({
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  COMMAND_FAILED: -32000,
  UNKNOWN_COMMAND: -32001,
});

/** The largest line read or written, in bytes (the host's frame bound). */
export const MAX_LINE_BYTES = 8 * 1024 * 1024;
/** The longest `log` message the host keeps, in bytes; longer ones are cut here. */
export const MAX_LOG_BYTES = 64 * 1024;
const LOG_LEVELS = ["error", "warn", "info", "debug", "trace"];
const RESERVED_EVENT_PREFIXES = ["engine/", "host/", "plugins/", "kernel/"];
const RESERVED_EVENTS = ["skills/changed", "scenes/changed"];

/**
 * An error a handler throws to choose its JSON-RPC answer: code (default -32000, command
 * failed), message and data. A failed `ctx.call` rejects with one carrying the host's error.
 */
export class PluginError extends Error {
  /**
   * @param {string} message
   * @param {object} [options]
   * @param {number} [options.code] the JSON-RPC code [default: -32000]
   * @param {unknown} [options.data] the error's `data`
   */
  constructor(message, options = {}) {
    super(message);
    this.name = "PluginError";
    this.code = options.code ?? codes.COMMAND_FAILED;
    if (options.data !== undefined) this.data = options.data;
  }
}

/**
 * Creates a plugin from the bundle's manifest (default: plugin.json in the working directory,
 * which the host sets to the bundle directory).
 * @param {import("./index.js").PluginOptions} [options]
 */
export function definePlugin(options = {}) {
  return new Plugin(options);
}

export class Plugin {
  /** @param {import("./index.js").PluginOptions} [options] */
  constructor(options = {}) {
    this.manifestPath = path.resolve(options.manifestPath ?? "plugin.json");
    this.manifest = options.manifest ?? readManifest(this.manifestPath);
    const codetwo = (this.manifest.extensions ?? {})["dev.codetwo"] ?? {};
    /** @type {Array<{id: string, description?: string, argsSchema?: unknown}>} */
    this.declared = Array.isArray(codetwo.commands) ? codetwo.commands : [];
    this.maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.shutdownGraceMs = options.shutdownGraceMs ?? 500;
    this.maxReportedViolations = options.maxReportedViolations ?? 10;
    this.handlers = new Map();
    this.eventHandlers = new Map();
    this.problems = [];
    for (const [id, handler] of Object.entries(options.commands ?? {})) this.command(id, handler);
    for (const [name, handler] of Object.entries(options.events ?? {})) this.on(name, handler);
  }

  /**
   * Binds the handler of a declared command: `(args, ctx) => result | Promise<result>`.
   * @param {string} id
   * @param {Function} handler
   */
  command(id, handler) {
    if (typeof handler !== "function") throw new TypeError(`the handler of ${id} is not a function`);
    if (this.handlers.has(id)) this.problems.push(`two handlers for ${id}`);
    this.handlers.set(id, handler);
    return this;
  }

  /**
   * Subscribes to an event (a host event such as `skills/changed`, or another plugin's):
   * `(payload, ctx) => void | Promise<void>`. The names are listed in `initialize.events`.
   * @param {string} name
   * @param {Function} handler
   */
  on(name, handler) {
    if (typeof handler !== "function") throw new TypeError(`the handler of event ${name} is not a function`);
    this.eventHandlers.set(name, handler);
    return this;
  }

  /** The `initialize` answer: exactly the manifest's commands and schemas. */
  confirmation() {
    return {
      name: this.manifest.name,
      version: this.manifest.version ?? "0.0.0",
      protocolVersion,
      commands: this.declared.map((c) => {
        const entry = { name: c.id };
        if (c.description !== undefined) entry.description = c.description;
        if (c.argsSchema !== undefined) entry.schema = c.argsSchema;
        return entry;
      }),
      events: [...this.eventHandlers.keys()],
    };
  }

  /**
   * Serves the protocol until the input ends; by default on stdin/stdout, then exits the process.
   * @param {import("./index.js").RunOptions} [options]
   */
  async run(options = {}) {
    const input = options.input ?? process.stdin;
    const standard = options.output === undefined;
    const exit = options.exit ?? standard;
    let write;
    if (standard) {
      write = reserveStdout();
    } else {
      write = (text, done) => options.output.write(text, done);
    }
    let validators;
    try {
      validators = await this.prepare();
    } catch (error) {
      process.stderr.write(`${this.manifest.name ?? "plugin"}: ${error.message}\n`);
      if (exit) process.exit(1);
      throw error;
    }
    const connection = new Connection(this, validators, write, options);
    await connection.serve(input);
    if (exit) {
      write("", () => process.exit(0));
      // A stdout that never drains must not keep the process: the host is gone anyway.
      setTimeout(() => process.exit(0), 200).unref();
    }
  }

  /** Checks handlers against declarations and compiles every schema; throws what is wrong. */
  async prepare() {
    const problems = [...this.problems];
    const declaredIds = new Set();
    for (const c of this.declared) {
      if (declaredIds.has(c.id)) problems.push(`${c.id} is declared twice in plugin.json`);
      declaredIds.add(c.id);
      if (!this.handlers.has(c.id)) problems.push(`declared in plugin.json but no handler bound: ${c.id}`);
    }
    for (const id of this.handlers.keys()) {
      if (!declaredIds.has(id)) {
        problems.push(`handler bound but not declared in plugin.json: ${id}; declare it under extensions.dev.codetwo.commands or remove the handler`);
      }
    }
    if (problems.length > 0) throw new Error(problems.join("; "));
    const validators = new Map();
    let ajv;
    for (const c of this.declared) {
      if (c.argsSchema === undefined) continue;
      if (isPlainSchema(c.argsSchema)) {
        validators.set(c.id, (args) => plainViolations(c.argsSchema, args));
        continue;
      }
      ajv ??= await loadAjv();
      if (ajv === null) {
        throw new Error(
          `the argsSchema of ${c.id} needs ajv (it uses keywords beyond the built-in validator's); ship ajv with the bundle (node_modules/ajv) or keep the schema plain`,
        );
      }
      let validate;
      try {
        validate = ajv.compile(c.argsSchema);
      } catch (error) {
        throw new Error(`the argsSchema of ${c.id} does not compile: ${error.message}`);
      }
      validators.set(c.id, (args) =>
        validate(args)
          ? []
          : (validate.errors ?? []).map((e) => ({
              instancePath: e.instancePath,
              schemaPath: e.schemaPath,
              message: e.message ?? e.keyword,
            })),
      );
    }
    return validators;
  }
}

/** Loads ajv's draft 2020-12 build if it is resolvable, else null. */
async function loadAjv() {
  let module;
  try {
    module = await import("ajv/dist/2020.js");
  } catch {
    return null;
  }
  const Ajv2020 = module.default?.default ?? module.default ?? module.Ajv2020;
  return new Ajv2020({ allErrors: true, strict: false });
}

function readManifest(file) {
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    throw new Error(`cannot read ${file}: ${error.message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not JSON: ${error.message}`);
  }
}

/**
 * Keeps the real stdout for frames and sends everything else written there to stderr:
 * console.log/info/debug/dir/table and direct process.stdout.write calls alike.
 * Returns the frame writer.
 */
function reserveStdout() {
  const stdout = process.stdout;
  const frameWrite = stdout.write.bind(stdout);
  const toStderr = (...args) => process.stderr.write(...args);
  stdout.write = toStderr;
  for (const method of ["log", "info", "debug", "dir", "dirxml", "table"]) {
    if (typeof console[method] === "function") console[method] = console.error.bind(console);
  }
  // A host that closed its end makes writes fail (EPIPE): nothing can be answered any more.
  stdout.on("error", () => process.exit(0));
  return (text, done) => frameWrite(text, done);
}

/** Splits a byte stream into lines, each at most `max` bytes; longer lines are skipped. */
class LineSplitter {
  constructor(max, onLine, onOverflow) {
    this.max = max;
    this.onLine = onLine;
    this.onOverflow = onOverflow;
    this.chunks = [];
    this.size = 0;
    this.skipping = false;
  }

  push(chunk) {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      if (!this.skipping) {
        if (this.size + (end - start) > this.max) {
          this.skipping = true;
          this.onOverflow(this.size + (end - start));
          this.chunks = [];
          this.size = 0;
        } else {
          this.chunks.push(chunk.subarray(start, end));
          this.size += end - start;
        }
      }
      if (newline === -1) break;
      if (!this.skipping) {
        const line = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size);
        this.chunks = [];
        this.size = 0;
        this.onLine(line);
      }
      this.skipping = false;
      start = newline + 1;
    }
  }
}

/** One served connection: the handshake, invocations, events, calls to the host. */
class Connection {
  constructor(plugin, validators, write, options) {
    this.plugin = plugin;
    this.validators = validators;
    this.write = write;
    this.options = options;
    this.init = null;
    this.ended = false;
    this.nextCallId = 1;
    /** @type {Map<string, {resolve: Function, reject: Function}>} */
    this.pending = new Map();
    this.running = new Set();
    this.name = plugin.manifest.name ?? "plugin";
  }

  serve(input) {
    return new Promise((resolve) => {
      const splitter = new LineSplitter(
        this.plugin.maxLineBytes,
        (line) => this.line(line),
        (size) => this.warn(`skipped an input line over ${this.plugin.maxLineBytes} bytes (${size} so far)`),
      );
      let finished = false;
      const end = () => {
        if (finished) return;
        finished = true;
        this.finish().then(resolve);
      };
      input.on("data", (chunk) => splitter.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk));
      input.on("end", end);
      input.on("close", end);
      input.on("error", end);
    });
  }

  /** The input ended: refuse new calls, let running handlers finish within the grace. */
  async finish() {
    this.ended = true;
    for (const [, call] of this.pending) call.reject(new PluginError("the host closed the connection"));
    this.pending.clear();
    if (this.running.size > 0) {
      let timer;
      const grace = new Promise((resolve) => {
        timer = setTimeout(resolve, this.plugin.shutdownGraceMs);
      });
      await Promise.race([Promise.allSettled([...this.running]), grace]);
      clearTimeout(timer);
    }
  }

  warn(message) {
    process.stderr.write(`${this.name}: ${message}\n`);
  }

  send(message) {
    let text = JSON.stringify({ jsonrpc: "2.0", ...message });
    if (Buffer.byteLength(text) > this.plugin.maxLineBytes && message.id !== undefined && message.method === undefined) {
      const bytes = Buffer.byteLength(text);
      text = JSON.stringify({
        jsonrpc: "2.0",
        id: message.id,
        error: {
          code: codes.COMMAND_FAILED,
          message: `the answer takes ${bytes} bytes, over the ${this.plugin.maxLineBytes}-byte line bound`,
          data: { kind: "result_too_large", bytes, limit: this.plugin.maxLineBytes },
        },
      });
    } else if (Buffer.byteLength(text) > this.plugin.maxLineBytes) {
      throw new PluginError(`a ${message.method} message over ${this.plugin.maxLineBytes} bytes cannot be sent`);
    }
    this.write(text + "\n");
  }

  line(bytes) {
    const text = bytes.toString("utf8").trim();
    if (text === "") return;
    let message;
    try {
      message = JSON.parse(text);
    } catch (error) {
      this.warn(`ignoring a line that is not JSON: ${error.message}`);
      return;
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      this.warn("ignoring a line that is not a JSON object");
      return;
    }
    const hasId = message.id !== undefined && message.id !== null;
    if (typeof message.method === "string") {
      if (hasId) this.request(message);
      else this.notification(message);
    } else if (hasId) {
      this.response(message);
    }
  }

  request(message) {
    const { id, method } = message;
    const params = message.params ?? {};
    if (method === "initialize") {
      this.init = params;
      this.send({ id, result: this.plugin.confirmation() });
      return;
    }
    if (method !== "command/invoke") {
      this.send({ id, error: { code: codes.METHOD_NOT_FOUND, message: `method not found: ${method}` } });
      return;
    }
    const task = this.invoke(id, params).finally(() => this.running.delete(task));
    this.running.add(task);
  }

  async invoke(id, params) {
    const name = params.name;
    const handler = this.plugin.handlers.get(name);
    if (handler === undefined) {
      this.send({ id, error: { code: codes.UNKNOWN_COMMAND, message: `unknown command ${name}` } });
      return;
    }
    const args = params.args === undefined || params.args === null ? {} : params.args;
    const validate = this.validators.get(name);
    if (validate !== undefined) {
      const violations = validate(args);
      if (violations.length > 0) {
        const first = violations[0];
        const where = first.instancePath === "" ? "the top level" : `\`${first.instancePath}\``;
        this.send({
          id,
          error: {
            code: codes.INVALID_PARAMS,
            message: `invalid args at ${where}: ${first.message}`,
            data: { violations: violations.slice(0, this.plugin.maxReportedViolations) },
          },
        });
        return;
      }
    }
    let answer;
    try {
      const result = await handler(args, this.context());
      answer = { id, result: result === undefined ? null : result };
    } catch (error) {
      answer = { id, error: errorObject(error) };
    }
    try {
      this.send(answer);
    } catch (error) {
      this.send({ id, error: errorObject(error) });
    }
  }

  notification(message) {
    if (message.method !== "event/emit") return;
    const params = message.params ?? {};
    const handler = this.plugin.eventHandlers.get(params.name);
    if (handler === undefined) return;
    const task = (async () => {
      try {
        await handler(params.payload ?? null, this.context());
      } catch (error) {
        this.warn(`the handler of event ${params.name} failed: ${error?.stack ?? error}`);
      }
    })().finally(() => this.running.delete(task));
    this.running.add(task);
  }

  response(message) {
    const key = JSON.stringify(message.id);
    const call = this.pending.get(key);
    if (call === undefined) {
      this.warn(`a response to unknown id ${key}`);
      return;
    }
    this.pending.delete(key);
    if (message.error) {
      const { code, message: text, data } = message.error;
      call.reject(new PluginError(String(text ?? "the host call failed"), { code, data }));
    } else {
      call.resolve(message.result ?? null);
    }
  }

  /** The context handed to handlers. */
  context() {
    const init = this.init ?? {};
    const host = init.host ?? {};
    return {
      dataDir: init.dataDir ?? null,
      projectPath: init.projectPath ?? null,
      config: init.config ?? null,
      host: { name: host.name ?? null, version: host.version ?? null, commands: host.commands ?? [] },
      call: (name, args) => this.call(name, args),
      emit: (name, payload) => this.emit(name, payload),
      log: (level, message) => this.log(level, message),
    };
  }

  call(name, args) {
    if (this.ended) return Promise.reject(new PluginError(`cannot call ${name}: the host closed the connection`));
    const id = `c2-sdk-${this.nextCallId++}`;
    return new Promise((resolve, reject) => {
      this.pending.set(JSON.stringify(id), { resolve, reject });
      try {
        this.send({ id, method: "command/call", params: { name, args: args ?? {} } });
      } catch (error) {
        this.pending.delete(JSON.stringify(id));
        reject(error);
      }
    });
  }

  emit(name, payload) {
    if (typeof name !== "string" || name === "") throw new TypeError("an event needs a name");
    if (RESERVED_EVENTS.includes(name) || RESERVED_EVENT_PREFIXES.some((p) => name.startsWith(p))) {
      throw new PluginError(`${name} is a host event name and would be dropped; name events after the plugin`);
    }
    this.send({ method: "event/emit", params: { name, payload: payload === undefined ? null : payload } });
  }

  log(level, message) {
    if (!LOG_LEVELS.includes(level)) throw new TypeError(`log level must be one of ${LOG_LEVELS.join(", ")}`);
    this.send({ method: "log", params: { level, message: cut(String(message), MAX_LOG_BYTES) } });
  }
}

/** A thrown value as a JSON-RPC error object; `data` travels when the error carries it. */
function errorObject(error) {
  if (error instanceof Error) {
    const object = {
      code: Number.isInteger(error.code) ? error.code : codes.COMMAND_FAILED,
      message: error.message || error.name,
    };
    if (error.data !== undefined) object.data = error.data;
    return object;
  }
  return { code: codes.COMMAND_FAILED, message: typeof error === "string" ? error : JSON.stringify(error) ?? String(error) };
}

/** `text` cut to at most `max` UTF-8 bytes, on a character boundary. */
function cut(text, max) {
  if (Buffer.byteLength(text) <= max) return text;
  const bytes = Buffer.from(text);
  let end = max;
  // A continuation byte just past the cut means the character before it would be split.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

// The plain-schema evaluator.

const PLAIN_DRAFTS = new Set([
  "http://json-schema.org/draft-06/schema#",
  "http://json-schema.org/draft-06/schema",
  "http://json-schema.org/draft-07/schema#",
  "http://json-schema.org/draft-07/schema",
  "https://json-schema.org/draft/2019-09/schema",
  "https://json-schema.org/draft/2020-12/schema",
]);
const ANNOTATIONS = new Set(["title", "description", "$comment", "default", "examples", "deprecated", "readOnly", "writeOnly"]);
const TYPES = new Set(["null", "boolean", "object", "array", "number", "string", "integer"]);
const COUNTS = ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"];
const BOUNDS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isCount = (v) => Number.isInteger(v) && v >= 0;

/**
 * Whether the built-in evaluator decides `schema` on its own: a schema made only of type,
 * properties, additionalProperties, items (one schema), required, enum, const, the numeric
 * bounds, the length/count bounds, uniqueItems, allOf, anyOf, oneOf, not and annotations, with
 * `$schema` (draft 6, 7, 2019-09 or 2020-12) at the root only.
 * @param {unknown} schema
 */
export function isPlainSchema(schema, root = true) {
  if (typeof schema === "boolean") return true;
  if (!isObject(schema)) return false;
  for (const [key, value] of Object.entries(schema)) {
    if (ANNOTATIONS.has(key)) continue;
    switch (key) {
      case "$schema":
        if (!root || !PLAIN_DRAFTS.has(value)) return false;
        break;
      case "type":
        if (typeof value === "string") {
          if (!TYPES.has(value)) return false;
        } else if (!Array.isArray(value) || value.length === 0 || !value.every((t) => TYPES.has(t)) || new Set(value).size !== value.length) {
          return false;
        }
        break;
      case "properties":
        if (!isObject(value) || !Object.values(value).every((s) => isPlainSchema(s, false))) return false;
        break;
      case "additionalProperties":
      case "items":
      case "not":
        if (!isPlainSchema(value, false)) return false;
        break;
      case "required":
        if (!Array.isArray(value) || !value.every((r) => typeof r === "string") || new Set(value).size !== value.length) return false;
        break;
      case "enum":
        if (!Array.isArray(value)) return false;
        break;
      case "const":
        break;
      case "uniqueItems":
        if (typeof value !== "boolean") return false;
        break;
      case "allOf":
      case "anyOf":
      case "oneOf":
        if (!Array.isArray(value) || value.length === 0 || !value.every((s) => isPlainSchema(s, false))) return false;
        break;
      default:
        if (COUNTS.includes(key)) {
          if (!isCount(value)) return false;
        } else if (BOUNDS.includes(key)) {
          if (typeof value !== "number") return false;
        } else {
          return false;
        }
    }
  }
  return true;
}

function typeMatches(type, value) {
  switch (type) {
    case "null":
      return value === null;
    case "boolean":
      return typeof value === "boolean";
    case "object":
      return isObject(value);
    case "array":
      return Array.isArray(value);
    case "number":
      return typeof value === "number";
    case "integer":
      return Number.isInteger(value);
    case "string":
      return typeof value === "string";
    default:
      return false;
  }
}

function equal(a, b) {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
  }
  return false;
}

const pointer = (base, token) => `${base}/${String(token).replaceAll("~", "~0").replaceAll("/", "~1")}`;

/**
 * The violations of `value` against a plain `schema`: `{instancePath, schemaPath, message}`
 * each, instancePath and schemaPath as JSON pointers; empty when it is valid.
 * @param {unknown} schema
 * @param {unknown} value
 */
export function plainViolations(schema, value, at = "", schemaAt = "#") {
  if (schema === true) return [];
  if (schema === false) return [{ instancePath: at, schemaPath: schemaAt, message: "no value is allowed here" }];
  const out = [];
  const fail = (keyword, message) => out.push({ instancePath: at, schemaPath: `${schemaAt}/${keyword}`, message });
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => typeMatches(t, value))) {
      fail("type", `must be ${types.join(" or ")}`);
      return out;
    }
  }
  if (schema.enum !== undefined && !schema.enum.some((e) => equal(e, value))) {
    fail("enum", "must be equal to one of the allowed values");
  }
  if (schema.const !== undefined && !equal(schema.const, value)) fail("const", "must be equal to constant");
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) fail("minimum", `must be >= ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) fail("maximum", `must be <= ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) {
      fail("exclusiveMinimum", `must be > ${schema.exclusiveMinimum}`);
    }
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) {
      fail("exclusiveMaximum", `must be < ${schema.exclusiveMaximum}`);
    }
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) {
      fail("minLength", `must NOT have fewer than ${schema.minLength} characters`);
    }
    if (schema.maxLength !== undefined && length > schema.maxLength) {
      fail("maxLength", `must NOT have more than ${schema.maxLength} characters`);
    }
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) fail("minItems", `must NOT have fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) fail("maxItems", `must NOT have more than ${schema.maxItems} items`);
    if (schema.uniqueItems === true) {
      outer: for (let i = 0; i < value.length; i++) {
        for (let j = i + 1; j < value.length; j++) {
          if (equal(value[i], value[j])) {
            fail("uniqueItems", `must NOT have duplicate items (items ## ${j} and ${i} are identical)`);
            break outer;
          }
        }
      }
    }
    if (schema.items !== undefined) {
      value.forEach((item, i) => out.push(...plainViolations(schema.items, item, pointer(at, i), `${schemaAt}/items`)));
    }
  }
  if (isObject(value)) {
    const keys = Object.keys(value);
    if (schema.minProperties !== undefined && keys.length < schema.minProperties) {
      fail("minProperties", `must NOT have fewer than ${schema.minProperties} properties`);
    }
    if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) {
      fail("maxProperties", `must NOT have more than ${schema.maxProperties} properties`);
    }
    for (const name of schema.required ?? []) {
      if (!Object.hasOwn(value, name)) fail("required", `must have required property '${name}'`);
    }
    const properties = schema.properties ?? {};
    for (const key of keys) {
      if (Object.hasOwn(properties, key)) {
        out.push(...plainViolations(properties[key], value[key], pointer(at, key), pointer(`${schemaAt}/properties`, key)));
      } else if (schema.additionalProperties === false) {
        out.push({
          instancePath: pointer(at, key),
          schemaPath: `${schemaAt}/additionalProperties`,
          message: `must NOT have additional properties (\`${key}\` is not allowed)`,
        });
      } else if (schema.additionalProperties !== undefined) {
        out.push(...plainViolations(schema.additionalProperties, value[key], pointer(at, key), `${schemaAt}/additionalProperties`));
      }
    }
  }
  if (schema.allOf !== undefined) {
    schema.allOf.forEach((s, i) => out.push(...plainViolations(s, value, at, `${schemaAt}/allOf/${i}`)));
  }
  if (schema.anyOf !== undefined && !schema.anyOf.some((s) => plainViolations(s, value, at).length === 0)) {
    fail("anyOf", "must match a schema in anyOf");
  }
  if (schema.oneOf !== undefined) {
    const matching = schema.oneOf.filter((s) => plainViolations(s, value, at).length === 0).length;
    if (matching !== 1) fail("oneOf", "must match exactly one schema in oneOf");
  }
  if (schema.not !== undefined && plainViolations(schema.not, value, at).length === 0) fail("not", "must NOT be valid");
  return out;
}
