// Test harness shared by the suites: runs a plugin on this SDK as the host would (a child
// process on pipes, in its bundle directory) and speaks the protocol to it. Works under
// `node --test` and `bun test`; the child runs on the same runtime as the test.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const sdkUrl = pathToFileURL(path.join(here, "..", "src", "index.js")).href;

const runner = globalThis.Bun ? await import("bun:test") : await import("node:test");
/** `test` from node:test, or from bun:test under Bun. */
export const test = runner.test;

/** A manifest declaring `commands` (id -> argsSchema). */
export function manifest(commands) {
  return {
    $schema: "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
    name: "fixture",
    version: "1.2.3",
    extensions: {
      "dev.codetwo": {
        standardVersion: "1.2.0",
        commands: Object.entries(commands).map(([id, argsSchema]) => ({
          id,
          title: id,
          description: `the ${id} command`,
          ...(argsSchema === undefined ? {} : { argsSchema }),
        })),
        runtime: { protocol: "1.0.0", command: "node", args: ["plugin.mjs"] },
      },
    },
  };
}

const made = [];
(runner.afterAll ?? runner.after)(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A bundle directory with plugin.json and plugin.mjs (`source`, with SDK_URL substituted). */
export function bundle(commands, source) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "c2-sdk-ts-"));
  made.push(dir);
  fs.writeFileSync(path.join(dir, "plugin.json"), JSON.stringify(manifest(commands), null, 2));
  fs.writeFileSync(path.join(dir, "plugin.mjs"), source.replaceAll("SDK_URL", JSON.stringify(sdkUrl)));
  return dir;
}

/** A running plugin: frames in, frames out, everything on stdout checked to be JSON. */
export class Running {
  constructor(dir, env = {}) {
    this.child = spawn(process.execPath, ["plugin.mjs"], {
      cwd: dir,
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.frames = [];
    this.waiters = [];
    this.stderr = "";
    this.stdoutNoise = [];
    let buffer = "";
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk) => {
      buffer += chunk;
      let newline;
      while ((newline = buffer.indexOf("\n")) !== -1) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        let frame;
        try {
          frame = JSON.parse(line);
        } catch {
          this.stdoutNoise.push(line);
          continue;
        }
        this.frames.push(frame);
        this.wake();
      }
    });
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => this.child.on("exit", (code, signal) => resolve({ code, signal })));
    this.nextId = 1;
  }

  wake() {
    for (const waiter of [...this.waiters]) waiter();
  }

  send(message) {
    this.child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
  }

  /** The first frame (removed from the queue) matching `predicate`, within `ms`. */
  next(predicate, ms = 10000) {
    return new Promise((resolve, reject) => {
      const look = () => {
        const at = this.frames.findIndex(predicate);
        if (at === -1) return false;
        const [frame] = this.frames.splice(at, 1);
        this.waiters = this.waiters.filter((w) => w !== look);
        clearTimeout(timer);
        resolve(frame);
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== look);
        reject(new Error(`no matching frame in ${ms} ms; stderr:\n${this.stderr}`));
      }, ms);
      if (!look()) this.waiters.push(look);
    });
  }

  async request(method, params) {
    const id = this.nextId++;
    this.send({ id, method, params });
    return this.next((f) => f.id === id && f.method === undefined);
  }

  initialize(extra = {}) {
    return this.request("initialize", {
      protocolVersion: "1.0.0",
      host: { name: "test", version: "0.0.0", commands: ["git.status"] },
      config: null,
      dataDir: "/tmp/data",
      ...extra,
    });
  }

  invoke(name, args) {
    return this.request("command/invoke", { name, args });
  }

  close() {
    this.child.stdin.end();
    return this.exited;
  }
}
