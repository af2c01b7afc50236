import assert from "node:assert/strict";
import { bundle, Running, test } from "./harness.js";
import { definePlugin, isPlainSchema, plainViolations, protocolVersion, version } from "../src/index.js";

const GREET = {
  type: "object",
  properties: { name: { type: "string", minLength: 1, maxLength: 100 } },
  additionalProperties: false,
};

// One plugin that exercises the whole surface.
const SOURCE = `
import { definePlugin, PluginError } from SDK_URL;
let seen = 0;
let inFlight = 0;
let peak = 0;
const waiting = [];
definePlugin()
  .command("fx.greet", (args, ctx) => ({ greeting: "Hello, " + (args.name ?? "world") + "!", dataDir: ctx.dataDir, projectPath: ctx.projectPath }))
  .command("fx.fail", () => { throw new PluginError("it broke", { data: { reason: "on purpose", n: 7 } }); })
  .command("fx.crash", () => { throw new Error("plain failure"); })
  .command("fx.noisy", async () => {
    console.log("console.log noise");
    console.info("console.info noise");
    process.stdout.write("raw stdout noise\\n");
    return { quiet: true };
  })
  .command("fx.status", async (args, ctx) => {
    ctx.log("info", "asking the host");
    try {
      return { status: await ctx.call("git.status", { cwd: args.cwd }) };
    } catch (error) {
      return { failed: error.message, code: error.code, data: error.data ?? null };
    }
  })
  .command("fx.gather", async (args) => {
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    if (inFlight >= args.n) for (const release of waiting.splice(0)) release();
    else await new Promise((resolve) => waiting.push(resolve));
    inFlight -= 1;
    return { peak };
  })
  .command("fx.size", (args) => ({ length: args.text.length }))
  .command("fx.slow", async () => { await new Promise((r) => setTimeout(r, 150)); return "late"; })
  .command("fx.seen", (args, ctx) => { ctx.emit("fx.pong", { seen }); return seen; })
  .command("fx.pattern", (args) => args.code)
  .on("skills/changed", (payload, ctx) => { seen += 1; ctx.emit("fx.changed", { seen }); })
  .run();
`;

const COMMANDS = {
  "fx.greet": GREET,
  "fx.fail": undefined,
  "fx.crash": { type: "object" },
  "fx.noisy": { type: "object" },
  "fx.status": { type: "object", properties: { cwd: { type: "string" } } },
  "fx.gather": { type: "object", properties: { n: { type: "integer", minimum: 1 } }, required: ["n"] },
  "fx.size": { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  "fx.slow": { type: "object" },
  "fx.seen": { type: "object" },
  "fx.pattern": { type: "object", properties: { code: { type: "string", pattern: "^[A-Z]{3}$" } }, required: ["code"] },
};

function start(env) {
  return new Running(bundle(COMMANDS, SOURCE), env);
}

test("the version names the protocol it speaks", () => {
  assert.equal(protocolVersion, "1.0.0");
  assert.equal(version, "0.1.0");
});

test("initialize confirms exactly the manifest's commands and schemas, and the subscriptions", async () => {
  const plugin = start();
  const answer = await plugin.initialize();
  assert.equal(answer.result.name, "fixture");
  assert.equal(answer.result.version, "1.2.3");
  assert.equal(answer.result.protocolVersion, "1.0.0");
  assert.deepEqual(
    answer.result.commands.map((c) => c.name),
    Object.keys(COMMANDS),
  );
  assert.deepEqual(answer.result.commands[0].schema, GREET);
  assert.equal(answer.result.commands[1].schema, undefined);
  assert.deepEqual(answer.result.events, ["skills/changed"]);
  assert.deepEqual(await plugin.close(), { code: 0, signal: null });
});

test("calls answer results, argument errors, unknown commands and plugin errors with data", async () => {
  const plugin = start();
  await plugin.initialize({ projectPath: "/work/p" });
  const ok = await plugin.invoke("fx.greet", { name: "Ada" });
  assert.deepEqual(ok.result, { greeting: "Hello, Ada!", dataDir: "/tmp/data", projectPath: "/work/p" });
  const defaulted = await plugin.invoke("fx.greet");
  assert.equal(defaulted.result.greeting, "Hello, world!");

  const extra = await plugin.invoke("fx.greet", { name: "Ada", age: 3 });
  assert.equal(extra.error.code, -32602);
  assert.match(extra.error.message, /`\/age`/);
  assert.equal(extra.error.data.violations[0].instancePath, "/age");
  const wrongType = await plugin.invoke("fx.greet", { name: 5 });
  assert.equal(wrongType.error.code, -32602);
  assert.equal(wrongType.error.data.violations[0].schemaPath, "#/properties/name/type");
  const notObject = await plugin.invoke("fx.greet", [1]);
  assert.match(notObject.error.message, /the top level/);

  const unknown = await plugin.invoke("fx.nope", {});
  assert.equal(unknown.error.code, -32001);
  const fail = await plugin.invoke("fx.fail", {});
  assert.deepEqual(fail.error, { code: -32000, message: "it broke", data: { reason: "on purpose", n: 7 } });
  const crash = await plugin.invoke("fx.crash", {});
  assert.equal(crash.error.code, -32000);
  assert.equal(crash.error.message, "plain failure");
  const method = await plugin.request("frobnicate", {});
  assert.equal(method.error.code, -32601);
  plugin.child.stdin.write("not json\n[1, 2]\n");
  assert.equal((await plugin.request("command/invoke", [1])).error.code, -32001);
  plugin.send({ method: "event/emit", params: "nonsense" });
  assert.equal((await plugin.invoke("fx.greet", { name: "C" })).result.greeting, "Hello, C!");
  await plugin.close();
});

test("a schema beyond the plain subset is checked by ajv", async () => {
  const plugin = start();
  await plugin.initialize();
  assert.equal((await plugin.invoke("fx.pattern", { code: "ABC" })).result, "ABC");
  const bad = await plugin.invoke("fx.pattern", { code: "abc" });
  assert.equal(bad.error.code, -32602);
  assert.equal(bad.error.data.violations[0].instancePath, "/code");
  assert.match(bad.error.data.violations[0].message, /pattern/);
  await plugin.close();
});

test("stdout carries frames only: console.log and stray writes go to stderr", async () => {
  const plugin = start();
  await plugin.initialize();
  const answer = await plugin.invoke("fx.noisy", {});
  assert.deepEqual(answer.result, { quiet: true });
  await plugin.close();
  assert.deepEqual(plugin.stdoutNoise, []);
  assert.match(plugin.stderr, /console.log noise/);
  assert.match(plugin.stderr, /raw stdout noise/);
});

test("command/call reaches the host and its answer or error comes back; log is a notification", async () => {
  const plugin = start();
  await plugin.initialize();
  plugin.send({ id: 50, method: "command/invoke", params: { name: "fx.status", args: { cwd: "/repo" } } });
  const log = await plugin.next((f) => f.method === "log");
  assert.deepEqual(log.params, { level: "info", message: "asking the host" });
  const call = await plugin.next((f) => f.method === "command/call");
  assert.deepEqual(call.params, { name: "git.status", args: { cwd: "/repo" } });
  plugin.send({ id: call.id, result: { branch: "main", files: [] } });
  const answer = await plugin.next((f) => f.id === 50);
  assert.deepEqual(answer.result, { status: { branch: "main", files: [] } });

  plugin.send({ id: 51, method: "command/invoke", params: { name: "fx.status", args: {} } });
  const second = await plugin.next((f) => f.method === "command/call");
  plugin.send({ id: second.id, error: { code: -32002, message: "not public", data: { kind: "x" } } });
  const failed = await plugin.next((f) => f.id === 51);
  assert.deepEqual(failed.result, { failed: "not public", code: -32002, data: { kind: "x" } });
  await plugin.close();
});

test("subscribed events reach their handler, which emits its own", async () => {
  const plugin = start();
  await plugin.initialize();
  plugin.send({ method: "event/emit", params: { name: "skills/changed", payload: null } });
  plugin.send({ method: "event/emit", params: { name: "scenes/changed", payload: null } });
  const emitted = await plugin.next((f) => f.method === "event/emit");
  assert.deepEqual(emitted.params, { name: "fx.changed", payload: { seen: 1 } });
  assert.equal((await plugin.invoke("fx.seen", {})).result, 1);
  await plugin.close();
});

test("64 calls run concurrently", async () => {
  const plugin = start();
  await plugin.initialize();
  const ids = [];
  for (let i = 0; i < 64; i++) {
    const id = 1000 + i;
    ids.push(id);
    plugin.send({ id, method: "command/invoke", params: { name: "fx.gather", args: { n: 64 } } });
  }
  const answers = await Promise.all(ids.map((id) => plugin.next((f) => f.id === id)));
  for (const answer of answers) assert.equal(answer.result.peak, 64);
  await plugin.close();
});

test("a 4 MiB argument arrives whole; an overlong line is skipped, not fatal", async () => {
  const plugin = start();
  await plugin.initialize();
  const text = "x".repeat(4 * 1024 * 1024);
  const answer = await plugin.invoke("fx.size", { text });
  assert.equal(answer.result.length, text.length);
  plugin.child.stdin.write("y".repeat(9 * 1024 * 1024) + "\n");
  assert.equal((await plugin.invoke("fx.greet", { name: "B" })).result.greeting, "Hello, B!");
  await plugin.close();
  assert.match(plugin.stderr, /skipped an input line/);
});

test("stdin EOF: what was asked is still answered, then the process exits 0", async () => {
  const plugin = start();
  await plugin.initialize();
  plugin.send({ id: 9, method: "command/invoke", params: { name: "fx.slow", args: {} } });
  const started = Date.now();
  const exit = await plugin.close();
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.ok(Date.now() - started < 5000);
  assert.equal(plugin.frames.find((f) => f.id === 9).result, "late");
});

test("a handler without a declaration, or a declaration without a handler, refuses to start", async () => {
  const source = `import { definePlugin } from SDK_URL; definePlugin().command("fx.other", () => 1).run();`;
  const plugin = new Running(bundle({ "fx.one": { type: "object" } }, source));
  const exit = await plugin.exited;
  assert.equal(exit.code, 1);
  assert.match(plugin.stderr, /declared in plugin.json but no handler bound: fx.one/);
  assert.match(plugin.stderr, /handler bound but not declared in plugin.json: fx.other/);
});

test("a manifest given in place of the file is what is confirmed", () => {
  const plugin = definePlugin({ manifest: { name: "x", extensions: { "dev.codetwo": { commands: [] } } } });
  assert.deepEqual(plugin.confirmation().commands, []);
});

test("plain schemas are recognised and evaluated", () => {
  assert.ok(isPlainSchema(GREET));
  assert.ok(isPlainSchema(true));
  assert.ok(isPlainSchema({ $schema: "https://json-schema.org/draft/2020-12/schema", anyOf: [{ type: "string" }, { type: "null" }] }));
  assert.ok(!isPlainSchema({ type: "string", pattern: "a" }));
  assert.ok(!isPlainSchema({ properties: { a: { $schema: "https://json-schema.org/draft/2020-12/schema" } } }));
  assert.ok(!isPlainSchema({ $ref: "#/x" }));
  assert.ok(!isPlainSchema({ minLength: -1 }));

  const schema = {
    type: "object",
    properties: {
      n: { type: "integer", minimum: 1, exclusiveMaximum: 10 },
      tags: { type: "array", items: { enum: ["a", "b"] }, uniqueItems: true, maxItems: 3 },
      mode: { oneOf: [{ const: "x" }, { const: "y" }] },
      s: { type: ["string", "null"], maxLength: 2 },
    },
    required: ["n"],
    additionalProperties: { type: "boolean" },
  };
  assert.deepEqual(plainViolations(schema, { n: 3, tags: ["a"], mode: "x", s: null, ok: true }), []);
  assert.deepEqual(plainViolations(schema, { n: 2.0 }), []);
  const paths = (value) => plainViolations(schema, value).map((v) => `${v.instancePath} ${v.schemaPath}`);
  assert.deepEqual(paths({}), [" #/required"]);
  assert.deepEqual(paths({ n: 10 }), ["/n #/properties/n/exclusiveMaximum"]);
  assert.deepEqual(paths({ n: 1.5 }), ["/n #/properties/n/type"]);
  assert.deepEqual(paths({ n: 1, tags: ["a", "a"] }), ["/tags #/properties/tags/uniqueItems"]);
  assert.deepEqual(paths({ n: 1, tags: ["c"] }), ["/tags/0 #/properties/tags/items/enum"]);
  assert.deepEqual(paths({ n: 1, mode: "z" }), ["/mode #/properties/mode/oneOf"]);
  assert.deepEqual(paths({ n: 1, s: "😀😀" }), []);
  assert.deepEqual(paths({ n: 1, s: "abc" }), ["/s #/properties/s/maxLength"]);
  assert.deepEqual(paths({ n: 1, extra: 1 }), ["/extra #/additionalProperties/type"]);
  assert.deepEqual(plainViolations({ not: { type: "string" } }, "a").length, 1);
  assert.deepEqual(plainViolations(false, 1).length, 1);
});
