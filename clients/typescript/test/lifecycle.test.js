// The client's connection lifecycle against a real `c2-plugins serve` (C2_PLUGINS_BIN,
// C2_HELLO_RUNTIME and C2_FIXTURE_BIN, as relay.test.js): connectOrSpawn on the service's ready
// line, owned and detached services, two windows on one socket service and their
// cancellation, a SIGKILLed service seen as typed, retryable errors and reconnection, events
// as async iterators and subscriptions that end visibly, structured next actions, the busy
// relay's kind, and the typed methods of every relay method, on both transports.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import {
  CLIENT_METHODS,
  ConnectionClosedError,
  EventStream,
  RelayClient,
  RelayError,
  RuntimeStoppedError,
  SpawnError,
} from "../src/index.js";
import { test } from "./runner.js";
import { alive, panelBundle, required, sandbox, sleeperBundle, until } from "./service.js";

const binary = required("C2_PLUGINS_BIN");
const helloRuntime = required("C2_HELLO_RUNTIME");

/** A client on each transport for `box`: a spawned stdio service, and a socket service it owns. */
async function onBothTransports(box, run) {
  const stdio = RelayClient.spawn(binary, { pluginsDir: join(box.root, "stdio"), cwd: box.root, stderr: "ignore" });
  try {
    await stdio.initialize();
    await run(stdio, "stdio");
  } finally {
    stdio.close();
    await stdio.exited().catch(() => {});
  }
  const socket = await RelayClient.connectOrSpawn(binary, { pluginsDir: join(box.root, "socket"), cwd: box.root });
  try {
    await socket.initialize();
    await run(socket, "socket");
  } finally {
    socket.close();
    await socket.exited().catch(() => {});
  }
}

test("connectOrSpawn starts an owned service on its ready line, a second window joins it, and close stops it", async () => {
  const box = sandbox();
  try {
    // The ready line itself: what a frontend that starts the service waits for.
    const probeDir = join(box.root, "probe");
    const probe = spawn(binary, ["serve", "--format", "json", "--plugins-dir", probeDir, "--socket"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    const line = await new Promise((resolve, reject) => {
      let text = "";
      probe.stdout.on("data", (chunk) => {
        text += chunk;
        if (text.includes("\n")) resolve(text.slice(0, text.indexOf("\n")));
      });
      probe.once("exit", (code) => reject(new Error(`the service exited (${code}) before its ready line`)));
    });
    const ready = JSON.parse(line);
    assert.deepEqual(ready, {
      ready: true,
      socket: join(probeDir, ".serve.sock"),
      pluginsDir: probeDir,
      pid: probe.pid,
      relayVersion: "2.0.0",
    });
    assert.ok(existsSync(ready.socket), "the socket exists when the line is printed");
    const probed = await RelayClient.connect(ready.socket);
    assert.equal((await probed.initialize()).pid, probe.pid);
    probed.close();
    const probeExit = new Promise((resolve) => probe.once("exit", resolve));
    probe.kill("SIGTERM");
    assert.equal(await probeExit, 0);

    const first = await RelayClient.connectOrSpawn(binary, { pluginsDir: box.plugins, cwd: box.root });
    assert.equal(first.service.spawned, true);
    assert.equal(first.service.owned, true);
    assert.equal(first.service.socket, join(box.plugins, ".serve.sock"));
    const hello = await first.initialize();
    assert.equal(hello.pid, first.service.pid, "the ready line names the service's pid");
    const second = await RelayClient.connectOrSpawn(binary, { pluginsDir: box.plugins });
    assert.deepEqual(second.service, { socket: first.service.socket, pid: undefined, spawned: false, owned: false });
    assert.equal((await second.initialize()).pid, hello.pid, "the second window joined the same service");
    second.close();
    assert.equal((await second.closed).reason, "client_closed");
    assert.deepEqual(await first.list(), [], "closing one window leaves the service to the others");

    const closes = [];
    first.on("close", (error) => closes.push(error));
    first.close();
    assert.equal(await first.exited(), 0, "close() stopped the owned service");
    assert.equal(closes.length, 1);
    assert.equal(closes[0].reason, "client_closed");
    assert.equal(existsSync(first.service.socket), false, "the service removed its socket");
    assert.equal(alive(hello.pid), false);
  } finally {
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("a detached service outlives its client; a failing start and a missing binary are SpawnErrors", async () => {
  const box = sandbox();
  let pid;
  try {
    const client = await RelayClient.connectOrSpawn(binary, { pluginsDir: box.plugins, cwd: box.root, service: "detached" });
    assert.equal(client.service.owned, false);
    pid = client.service.pid;
    await client.initialize();
    client.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(alive(pid), "the detached service still runs");
    const again = await RelayClient.connectOrSpawn(binary, { pluginsDir: box.plugins });
    assert.equal(again.service.spawned, false);
    assert.equal((await again.initialize()).pid, pid);
    again.close();

    const missing = await RelayClient.connectOrSpawn(join(box.root, "missing", "c2-plugins"), {
      pluginsDir: join(box.root, "other"),
    }).catch((e) => e);
    assert.ok(missing instanceof SpawnError, `${missing}`);
    assert.equal(missing.reason, "spawn");
    assert.equal(missing.errno, "ENOENT");
    assert.equal(missing.retryable, false);

    // A plugins directory that is a file: the service exits before it is ready and says why.
    const file = join(box.root, "a-file");
    writeFileSync(file, "");
    const failed = await RelayClient.connectOrSpawn(binary, { pluginsDir: file }).catch((e) => e);
    assert.ok(failed instanceof SpawnError, `${failed}`);
    assert.equal(failed.reason, "exited");
    assert.equal(typeof failed.failure?.kind, "string", JSON.stringify(failed.failure));
  } finally {
    if (pid !== undefined && alive(pid)) process.kill(pid, "SIGTERM");
    if (pid !== undefined) await until("the detached service's exit", () => !alive(pid));
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("two windows on one socket service: one window's cancel fails the other's call with a retryable RuntimeStoppedError", async () => {
  const box = sandbox();
  const one = await RelayClient.connectOrSpawn(binary, { pluginsDir: box.plugins, cwd: box.root });
  const two = await RelayClient.connectOrSpawn(binary, { pluginsDir: box.plugins });
  try {
    await one.initialize();
    await two.initialize();
    const sleeper = await one.install(sleeperBundle(box.root), { trust: true, enable: true });
    const abort = new AbortController();
    const mine = one.invoke("fixture.sleep", { ms: 600_000 }, { signal: abort.signal });
    await until("the fixture start", async () => (await one.runtimePid(sleeper.id)) !== null);
    const theirs = two.invoke("fixture.sleep", { ms: 600_000 });
    // The other window's call reaches the same runtime before the cancel.
    await new Promise((resolve) => setTimeout(resolve, 300));
    abort.abort(new Error("window one closed its panel"));
    const cancelled = await mine.catch((e) => e);
    assert.equal(cancelled.name, "CancelledError");
    assert.equal(cancelled.retryable, false);
    assert.equal(cancelled.cause.message, "window one closed its panel");
    const stopped = await theirs.catch((e) => e);
    assert.ok(stopped instanceof RuntimeStoppedError, `${stopped}`);
    assert.ok(stopped instanceof RelayError);
    assert.equal(stopped.kind, "cancelled");
    assert.equal(stopped.retryable, true);
    assert.deepEqual(await two.invoke("fixture.echo", { retried: true }), { retried: true }, "the retry starts the runtime again");
  } finally {
    two.close();
    one.close();
    await one.exited().catch(() => {});
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("a SIGKILLed service: typed retryable errors, ended subscriptions and streams, then reconnect", async () => {
  const box = sandbox();
  const client = await RelayClient.connectOrSpawn(binary, { pluginsDir: box.plugins, cwd: box.root });
  let next;
  try {
    await client.initialize();
    const sleeper = await client.install(sleeperBundle(box.root), { trust: true, enable: true });
    const errors = [];
    const closes = [];
    client.on("error", (error) => errors.push(error));
    const listener = client.on("close", (error) => closes.push(error));
    let ended;
    await client.subscribe("skills/changed", () => {}, { onEnd: (error) => (ended = error) });
    const stream = client.events("scenes/changed");
    await stream.ready;
    const hanging = client.invoke("fixture.sleep", { ms: 600_000 });
    await until("the fixture start", async () => (await client.runtimePid(sleeper.id)) !== null);
    process.kill(client.service.pid, "SIGKILL");

    const lost = await hanging.catch((e) => e);
    assert.ok(lost instanceof ConnectionClosedError, `${lost}`);
    assert.ok(lost.retryable);
    assert.equal(await client.closed, lost, "`closed` resolves with the same error");
    assert.equal(closes.length, 1);
    assert.equal(closes[0], lost);
    assert.ok(errors.length <= 1, "at most one error event before the close");
    assert.equal(ended, lost, "the callback subscription ended visibly");
    assert.equal(await stream.ended, lost);
    const thrown = await (async () => {
      for await (const _ of stream) return "an event";
      return "a normal end";
    })().catch((e) => e);
    assert.equal(thrown, lost, "the for-await loop throws the connection's end");
    assert.equal(await client.list().catch((e) => e), lost, "later calls reject the same way");
    listener.dispose();

    // The stale socket and lock are taken over: reconnecting starts a fresh service.
    next = await RelayClient.connectOrSpawn(binary, { pluginsDir: box.plugins, cwd: box.root });
    assert.equal(next.service.spawned, true);
    await next.initialize();
    assert.deepEqual((await next.list()).map((b) => b.id), [sleeper.id]);
    assert.deepEqual(await next.invoke("fixture.echo", { again: 1 }), { again: 1 });
  } finally {
    client.close();
    next?.close();
    await next?.exited().catch(() => {});
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("events as async iterators end when the loop leaves; the subscription limit answers kind host_busy", async () => {
  const box = sandbox();
  try {
    await onBothTransports(box, async (client, transport) => {
      const stream = client.events("skills/changed");
      assert.ok(stream instanceof EventStream);
      const subscription = await stream.ready;
      assert.ok((await client.publish("skills/changed", { n: 1 })) >= 1, transport);
      const seen = [];
      for await (const event of stream) {
        seen.push(event.payload);
        break;
      }
      assert.deepEqual(seen, [{ n: 1 }], transport);
      assert.equal(await stream.ended, undefined, `${transport}: leaving the loop ends the stream normally`);
      assert.equal(await client.unsubscribe(subscription), false, `${transport}: the loop unsubscribed`);

      const abort = new AbortController();
      const aborted = client.events("scenes/changed", { signal: abort.signal });
      await aborted.ready;
      abort.abort();
      assert.equal(await aborted.ended, undefined, transport);

      // The relay's subscription limit (64 by default) is a busy answer with its kind.
      const held = [];
      for (let i = 0; i < 64; i++) held.push(await client.subscribe("engine/event", () => {}));
      const busy = await client.subscribe("engine/event", () => {}).catch((e) => e);
      assert.ok(busy instanceof RelayError, `${transport}: ${busy}`);
      assert.equal(busy.code, -32003);
      assert.equal(busy.kind, "host_busy");
      assert.equal(busy.retryable, true);
      for (const number of held) await client.unsubscribe(number);
    });
  } finally {
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("every typed method answers; refusals carry a structured next action and no command line in the message", async () => {
  const box = sandbox();
  const project = join(box.root, "repo");
  try {
    await onBothTransports(box, async (client, transport) => {
      const described = await client.describe();
      assert.deepEqual(
        described.methods.map((m) => m.name).sort(),
        Object.keys(CLIENT_METHODS).sort(),
        `${transport}: relay/describe names the methods the client has`,
      );
      const installed = await client.install(helloRuntime);
      const untrusted = await client.invoke("hello.status", { cwd: project }, { project }).catch((e) => e);
      assert.equal(untrusted.kind, "not_trusted", transport);
      assert.deepEqual(untrusted.next, { action: "trust", id: installed.id }, transport);
      assert.doesNotMatch(untrusted.message, /c2-plugins /, `${transport}: the message names no command line`);
      assert.match(untrusted.hint, /trust/, transport);
      await client.trust(installed.id);
      const notEnabled = await client.invoke("hello.status", { cwd: project }, { project }).catch((e) => e);
      assert.ok(notEnabled instanceof RelayError, `${transport}: ${notEnabled}`);
      if (notEnabled.next) assert.equal(typeof notEnabled.next.action, "string");

      // Enabled in the project alone: its command and descriptor are listed before first use.
      await client.enable(installed.id, project);
      const row = (await client.commands(project)).find((c) => c.name === "hello.status");
      assert.equal(row?.state, "dormant", transport);
      const ui = await client.uiCatalog(project);
      assert.deepEqual(
        ui["composer.toolbar"].map((entry) => entry.id),
        ["status"],
        `${transport}: ${JSON.stringify(ui)}`,
      );
      assert.deepEqual(await client.uiCatalog(), {}, `${transport}: nothing in the user realm`);
      const result = await client.invoke("hello.status", { cwd: project }, { project });
      assert.equal(result.git.branch, "main", transport);
      await client.inherit(installed.id, project);
      assert.equal((await client.commands(project)).some((c) => c.name === "hello.status"), false, transport);

      const languages = await client.languages();
      assert.equal(typeof languages, "object", transport);
      const unresolved = await client.resolveLanguage("no-such-language", project).catch((e) => e);
      assert.ok(unresolved instanceof RelayError || typeof unresolved?.kind === "string", `${transport}: ${JSON.stringify(unresolved)}`);
      assert.deepEqual(await client.connectors(), [], transport);
      const connector = await client.invokeConnector(installed.id, "none", "message.send", { text: "hi" }).catch((e) => e);
      assert.ok(connector instanceof RelayError, `${transport}: ${connector}`);
    });
  } finally {
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("the package packs what it exports: src, types, README and examples, nothing of the tests", async () => {
  const root = new URL("..", import.meta.url).pathname;
  const { readFileSync } = await import("node:fs");
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  assert.equal(manifest.private, undefined, "publishable");
  assert.equal(manifest.types, "src/index.d.ts");
  assert.deepEqual(manifest.exports["."], { types: "./src/index.d.ts", default: "./src/index.js" });
  const packed = spawnSync("npm", ["pack", "--dry-run", "--json"], { cwd: root, encoding: "utf8" });
  assert.equal(packed.status, 0, packed.stderr);
  const [report] = JSON.parse(packed.stdout);
  const files = report.files.map((f) => f.path).sort();
  for (const file of ["README.md", "package.json", "src/index.d.ts", "src/index.js", "examples/quickstart.js"]) {
    assert.ok(files.includes(file), `npm pack ships ${file}: ${files}`);
  }
  assert.ok(!files.some((f) => f.startsWith("test/")), `no test file is packed: ${files}`);
  assert.equal(report.name, manifest.name);
});

test("examples/quickstart.js runs the README's flow against a real service and leaves nothing running", async () => {
  const box = sandbox();
  const project = join(box.root, "repo");
  try {
    const root = new URL("..", import.meta.url).pathname;
    const run = spawnSync(
      process.execPath,
      [join(root, "examples", "quickstart.js"), box.plugins, helloRuntime, project, "hello.status"],
      { cwd: root, encoding: "utf8", env: { ...process.env, C2_PLUGINS_BIN: binary }, timeout: 120_000 },
    );
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const steps = Object.fromEntries(
      run.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line))
        .map((step) => [step.step, step]),
    );
    assert.equal(steps.service.spawned, true);
    assert.equal(steps.refused.kind, "not_trusted");
    assert.equal(steps.refused.next.action, "trust");
    assert.equal(steps.listed.state, "dormant");
    assert.deepEqual(steps.ui.slots, ["composer.toolbar"]);
    assert.equal(steps.invoked.result.git.branch, "main");
    assert.equal(steps.exited.code, 0);
    assert.equal(existsSync(join(box.plugins, ".serve.sock")), false, "nothing left listening");
  } finally {
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("examples/windows.js: two windows' sessions, and a cancel retried at once, against a real service", async () => {
  const box = sandbox();
  try {
    const install = (dir) =>
      spawnSync(binary, ["--plugins-dir", box.plugins, "install", dir, "--trust", "--enable"], { encoding: "utf8" }).stdout.trim();
    const panel = install(panelBundle(box.root));
    install(sleeperBundle(box.root));
    const root = new URL("..", import.meta.url).pathname;
    const run = spawnSync(
      process.execPath,
      [join(root, "examples", "windows.js"), box.plugins, panel, "panel", "fixture.sleep", '{"ms":600000}', '{"ms":1}'],
      { cwd: box.repo, encoding: "utf8", env: { ...process.env, C2_PLUGINS_BIN: binary }, timeout: 120_000 },
    );
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const steps = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    assert.deepEqual(steps[0], { step: "windows", firstSpawned: true, secondSpawned: false });
    const invoked = steps.filter((s) => s.step === "invoked");
    assert.deepEqual(
      invoked.map((s) => [s.window, s.result.sessionId, s.result.cwd, s.result.invoked === s.action]),
      [
        ["window-1", "window-1", box.repo, true],
        ["window-2", "window-2", box.repo, true],
      ],
    );
    const byName = Object.fromEntries(steps.map((s) => [s.step, s]));
    assert.deepEqual(byName.cancelled, { step: "cancelled", cancelled: true, cause: "the user closed the panel" });
    assert.ok(byName.retried.result !== undefined);
    assert.equal(byName.exited.code, 0);
    assert.equal(existsSync(join(box.plugins, ".serve.sock")), false, "nothing left listening");
  } finally {
    rmSync(box.root, { recursive: true, force: true });
  }
});
