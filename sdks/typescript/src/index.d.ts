// Types of @codetwo/c2-plugin-sdk 0.1.0 (C2 Plugin Protocol 1.0.0).

/** The version of this SDK. */
export declare const version: "0.1.0";
/** The C2 Plugin Protocol version this SDK speaks. */
export declare const protocolVersion: "1.0.0";
/** The largest line read or written, in bytes. */
export declare const MAX_LINE_BYTES: number;
/** The longest `log` message, in bytes; longer ones are cut. */
export declare const MAX_LOG_BYTES: number;

/** JSON-RPC error codes of the protocol. */
export declare const codes: Readonly<{
  INVALID_REQUEST: -32600;
  METHOD_NOT_FOUND: -32601;
  INVALID_PARAMS: -32602;
  INTERNAL_ERROR: -32603;
  COMMAND_FAILED: -32000;
  UNKNOWN_COMMAND: -32001;
}>;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** `log` levels, most severe first. */
export type LogLevel = "error" | "warn" | "info" | "debug" | "trace";

/** What a command or event handler gets besides its args or payload. */
export interface Context {
  /** The directory the host created for this instance's files. */
  readonly dataDir: string | null;
  /** The project of a project-scoped instance; null for the user-scoped one. */
  readonly projectPath: string | null;
  /** This plugin's entry of the host's plugin config, verbatim. */
  readonly config: Json | null;
  /** The host, and the extension-public commands visible from this realm. */
  readonly host: { name: string | null; version: string | null; commands: string[] };
  /** Calls an extension-public host command (`git.status`, ...); rejects with a PluginError. */
  call<T = any>(name: string, args?: Json | object): Promise<T>;
  /** Emits an event on the host's JSON bus; host event names are refused. */
  emit(name: string, payload?: Json | object): void;
  /** Sends a `log` notification (cut at 64 KiB). */
  log(level: LogLevel, message: string): void;
}

export type CommandHandler<A = any, R = any> = (args: A, ctx: Context) => R | Promise<R>;
export type EventHandler<P = any> = (payload: P, ctx: Context) => void | Promise<void>;

export interface PluginOptions {
  /** The manifest file [default: plugin.json in the working directory]. */
  manifestPath?: string;
  /** The manifest itself, instead of reading manifestPath. */
  manifest?: Record<string, any>;
  /** Handlers by command id, as with `plugin.command`. */
  commands?: Record<string, CommandHandler>;
  /** Handlers by event name, as with `plugin.on`. */
  events?: Record<string, EventHandler>;
  /** The largest line read or written [default: 8 MiB]. */
  maxLineBytes?: number;
  /** How long running handlers may finish once stdin closed [default: 500 ms]. */
  shutdownGraceMs?: number;
  /** How many violations an args rejection lists in `data.violations` [default: 10]. */
  maxReportedViolations?: number;
}

export interface RunOptions {
  /** The protocol input [default: process.stdin]. */
  input?: NodeJS.ReadableStream;
  /** The protocol output [default: process.stdout, which is then reserved for frames]. */
  output?: { write(text: string, done?: () => void): unknown };
  /** Exit the process when the input ends [default: true with the standard streams]. */
  exit?: boolean;
}

/** An error that chooses its JSON-RPC answer. */
export declare class PluginError extends Error {
  constructor(message: string, options?: { code?: number; data?: unknown });
  code: number;
  data?: unknown;
}

/** One schema violation, as reported in `data.violations`. */
export interface Violation {
  instancePath: string;
  schemaPath: string;
  message: string;
}

export declare class Plugin {
  constructor(options?: PluginOptions);
  readonly manifest: Record<string, any>;
  /** Binds the handler of a command declared in plugin.json. */
  command<A = any, R = any>(id: string, handler: CommandHandler<A, R>): this;
  /** Subscribes to an event; the name is listed in `initialize.events`. */
  on<P = any>(name: string, handler: EventHandler<P>): this;
  /** The `initialize` answer: exactly the manifest's commands and schemas. */
  confirmation(): {
    name: string;
    version: string;
    protocolVersion: "1.0.0";
    commands: Array<{ name: string; description?: string; schema?: Json }>;
    events: string[];
  };
  /** Serves until the input ends; with the standard streams, then exits the process. */
  run(options?: RunOptions): Promise<void>;
}

/** Creates a plugin from the bundle's manifest. */
export declare function definePlugin(options?: PluginOptions): Plugin;

/** Whether the built-in evaluator decides `schema` without ajv. */
export declare function isPlainSchema(schema: unknown): boolean;
/** The violations of `value` against a plain schema; empty when valid. */
export declare function plainViolations(schema: unknown, value: unknown): Violation[];
