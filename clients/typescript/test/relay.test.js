// Runs against a real `c2-plugins serve --stdio`: C2_PLUGINS_BIN names the binary,
// C2_HELLO_RUNTIME the packs/hello-runtime directory and C2_FIXTURE_BIN the c2-testkit fixture
// (the Rust test `serve::the_javascript_client_passes_its_node_tests_against_a_real_service`
// sets all three).

import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { CancelledError, REQUEST_CANCELLED, RelayClient, RelayError, SpawnError } from "../src/index.js";
import { test } from "./runner.js";
import { alive, panelBundle, required, sandbox, sleeperBundle, until } from "./service.js";

const binary = required("C2_PLUGINS_BIN");
const helloRuntime = required("C2_HELLO_RUNTIME");

test("install, trust, enable, invoke warm twice, receive an event, cancel a hanging call, shut down", async () => {
  const box = sandbox();
  const client = RelayClient.spawn(binary, { pluginsDir: box.plugins, cwd: box.root, stderr: "ignore" });
  try {
    const hello = await client.initialize();
    assert.equal(hello.protocolVersion, "2.0.0");
    const described = JSON.parse(readFileSync(new URL("../../../docs/schemas/relay.json", import.meta.url), "utf8"));
    assert.equal(hello.protocolVersion, described.protocolVersion);
    assert.deepEqual(
      hello.capabilities.methods,
      described.methods.map((m) => m.name),
      "the service answers exactly the methods docs/schemas/relay.json describes",
    );

    assert.deepEqual(await client.mcpServers(), [], "no bundle ships an mcp.json yet");
    assert.deepEqual(await client.skills(), [], "no bundle ships skills yet");
    assert.deepEqual(await client.scenes(), [], "no bundle ships scenes yet");
    const changes = [];
    const storeSubscription = await client.subscribe("store/changed", (event) => changes.push(event.payload));
    const installed = await client.install(helloRuntime);
    await until("the store/changed event of the install", () =>
      changes.some((change) => change.installed.includes(installed.id)),
    );
    assert.equal(await client.unsubscribe(storeSubscription), true);
    assert.deepEqual(await client.refresh(), { changed: null }, "the service has seen its own install");
    const untrusted = await client.invoke("hello.status", { cwd: box.repo }).catch((e) => e);
    assert.ok(untrusted instanceof RelayError);
    assert.equal(untrusted.kind, "not_trusted");
    const trusted = await client.trust(installed.id);
    assert.equal(typeof trusted.revision, "string", "policy revisions travel as decimal strings");
    // A plan's and the catalog's 64-bit revisions are decimal strings a JavaScript client
    // holds exactly; the plan goes back unchanged.
    const plan = await client.plan(installed.id, { action: "enable" });
    assert.match(plan.revisions.graph, /^\d+$/);
    assert.match(plan.revisions.config, /^\d+$/);
    const row = (await client.catalog()).find((r) => r.name === `bundle:${installed.id}`);
    assert.match(row.revision, /^\d+$/);
    const applied = await client.apply(plan);
    assert.match(applied.revision, /^\d+$/);
    assert.ok(BigInt(applied.revision) > BigInt(trusted.revision));

    const first = await client.invoke("hello.status", { cwd: box.repo });
    assert.equal(first.git.branch, "main");
    const pid = await client.runtimePid(installed.id);
    assert.ok(pid > 0);
    const second = await client.invoke("hello.status", { cwd: box.repo });
    assert.equal(second.git.branch, "main");
    assert.equal(await client.runtimePid(installed.id), pid, "the second invoke is warm");

    // One component switched off: the command is refused as `disabled`, the listing marks it,
    // and inherit brings it back.
    const off = await client.setComponent(installed.id, "runtime-command:hello.status", "disable");
    assert.equal(off.component, `${installed.id}:runtime-command:hello.status`);
    const refused = await client.invoke("hello.status", { cwd: box.repo }).catch((e) => e);
    assert.ok(refused instanceof RelayError);
    assert.equal(refused.kind, "disabled");
    assert.match(refused.message, /runtime-command:hello\.status .* is disabled/);
    assert.match(refused.hint, /--component runtime-command:hello\.status/);
    const listed = (await client.list()).find((b) => b.id === installed.id);
    assert.deepEqual(
      listed.components.find((c) => c.component === "runtime-command:hello.status"),
      { component: "runtime-command:hello.status", state: "disabled" },
    );
    const unknown = await client.setComponent(installed.id, "skill:nope", "disable").catch((e) => e);
    assert.equal(unknown.kind, "unknown_component");
    await client.setComponent(installed.id, "runtime-command:hello.status", "inherit");
    assert.equal((await client.invoke("hello.status", { cwd: box.repo })).git.branch, "main");

    const events = [];
    const subscription = await client.subscribe("skills/changed", (event) => events.push(event));
    assert.ok((await client.publish("skills/changed", { skills: ["review"] })) >= 1);
    await until("the skills/changed event", () => events.length === 1);
    assert.equal(events[0].subscription, subscription);
    assert.deepEqual(events[0].payload, { skills: ["review"] });
    assert.equal(await client.unsubscribe(subscription), true);

    const sleeper = await client.install(sleeperBundle(box.root), { trust: true, enable: true });
    const abort = new AbortController();
    const hanging = client.invoke("fixture.sleep", { ms: 600_000 }, { signal: abort.signal });
    let sleeperPid = null;
    await until("the fixture start", async () => {
      sleeperPid = await client.runtimePid(sleeper.id);
      return sleeperPid !== null;
    });
    abort.abort();
    const cancelled = await hanging.catch((e) => e);
    assert.ok(cancelled instanceof RelayError);
    assert.equal(cancelled.code, REQUEST_CANCELLED);
    await until("the cancelled fixture's exit", () => !alive(sleeperPid));

    client.close();
    assert.equal(await client.exited(), 0);
    await until("the node runtime's exit", () => !alive(pid));
  } finally {
    client.child?.kill("SIGKILL");
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("the hub: add a catalog, search it, install an entry, see it outdated and update it", async () => {
  const box = sandbox();
  const catalogDir = join(box.root, "hub");
  const writeEntry = (version) => {
    const bundle = join(catalogDir, "bundles", version);
    mkdirSync(bundle, { recursive: true });
    writeFileSync(
      join(bundle, "plugin.json"),
      JSON.stringify({
        $schema: "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        name: "relay-hub",
        version,
        extensions: { "dev.codetwo": { standardVersion: "1.2.0" } },
      }),
    );
    writeFileSync(
      join(catalogDir, "marketplace.json"),
      JSON.stringify({
        standardVersion: "1.0.0",
        name: "relay-catalog",
        plugins: [
          { name: "relay-hub", version, keywords: ["Relay"], source: { kind: "local", path: `bundles/${version}` } },
        ],
      }),
    );
  };
  writeEntry("1.0.0");
  const client = RelayClient.spawn(binary, { pluginsDir: box.plugins, cwd: box.root, stderr: "ignore" });
  try {
    await client.initialize();
    const added = await client.addMarketplace(catalogDir);
    assert.equal(added.name, "relay-catalog");
    assert.deepEqual(await client.marketplaces(), [added]);
    const duplicate = await client.addMarketplace(catalogDir).catch((e) => e);
    assert.ok(duplicate instanceof RelayError);
    assert.equal(duplicate.kind, "duplicate_marketplace");
    const hits = await client.search("relay");
    assert.deepEqual(
      hits.map((h) => [h.name, h.version, h.sourceKind, h.installed]),
      [["relay-hub", "1.0.0", "local", null]],
    );
    const installed = await client.install("relay-hub@1.0.0", {
      marketplace: "relay-catalog",
      enable: true,
      trust: true,
    });
    const changes = [];
    await client.subscribe("store/changed", (event) => changes.push(event.payload));
    assert.equal(installed.origin.entry, "relay-hub");
    assert.equal((await client.outdated())[0].status, "current");
    writeEntry("1.1.0");
    const outdated = await client.outdated();
    assert.deepEqual([outdated[0].status, outdated[0].available], ["outdated", "1.1.0"]);
    const updated = await client.update(installed.id);
    assert.deepEqual(
      updated.updated.map((u) => [u.id, u.from, u.to]),
      [[installed.id, "1.0.0", "1.1.0"]],
    );
    const listed = await client.list();
    assert.deepEqual(
      [listed[0].id, listed[0].version, listed[0].enabled, listed[0].trusted],
      [installed.id, "1.1.0", true, false],
    );
    // The update replaced the bundle and dropped its trust: both are in the change.
    await until("the store/changed event of the update", () =>
      changes.some((change) => change.replaced.includes(installed.id)),
    );
    const change = changes.find((c) => c.replaced.includes(installed.id));
    assert.deepEqual(change.policy, [installed.id]);
    assert.deepEqual(await client.removeMarketplace("relay-catalog"), added);
    // Uninstall keeps the bundle's data directory only when asked to.
    const data = join(box.plugins, ".data", installed.id);
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, "state.json"), "{}");
    assert.equal((await client.uninstall(installed.id, { keepData: true })).id, installed.id);
    assert.equal(readFileSync(join(data, "state.json"), "utf8"), "{}");
    const again = await client.install(join(catalogDir, "bundles", "1.1.0"));
    const againData = join(box.plugins, ".data", again.id);
    mkdirSync(againData, { recursive: true });
    writeFileSync(join(againData, "state.json"), "{}");
    assert.equal((await client.uninstall(again.id)).id, again.id);
    assert.equal((await import("node:fs")).existsSync(againData), false);
    client.close();
    assert.equal(await client.exited(), 0);
  } finally {
    client.child?.kill("SIGKILL");
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("connect on the Unix socket, and SIGTERM ends the service", async () => {
  const { spawn } = await import("node:child_process");
  const { existsSync } = await import("node:fs");
  const box = sandbox();
  const service = spawn(binary, ["serve", "--socket", "--plugins-dir", box.plugins], {
    cwd: box.root,
    stdio: ["ignore", "ignore", "ignore"],
  });
  const socket = join(box.plugins, ".serve.sock");
  try {
    let client;
    await until("the socket", async () => {
      client = await RelayClient.connect(socket).catch(() => undefined);
      return client !== undefined;
    });
    const hello = await client.initialize();
    assert.equal(hello.pid, service.pid);
    assert.deepEqual(await client.list(), []);

    // Two connections render one host.actions slot; each invokes the item it rendered.
    const other = await RelayClient.connect(socket);
    await other.initialize();
    const panel = await client.install(panelBundle(box.root), { trust: true, enable: true });
    const mine = (await client.invokeUi(panel.id, "panel")).actions[0];
    const theirs = (await other.invokeUi(panel.id, "panel", { operation: "render" })).actions[0];
    assert.notEqual(mine.id, theirs.id);
    const invoked = await client.invokeUi(panel.id, "panel", { operation: "invoke", actionId: mine.id });
    assert.deepEqual(invoked, { invoked: mine.id, input: mine.input, cwd: box.root, sessionId: null });
    const invokedOther = await other.invokeUi(panel.id, "panel", { operation: "invoke", actionId: theirs.id });
    assert.deepEqual(invokedOther, { invoked: theirs.id, input: theirs.input, cwd: box.root, sessionId: null });
    const crossed = await client.invokeUi(panel.id, "panel", { operation: "invoke", actionId: theirs.id }).catch((e) => e);
    assert.ok(crossed instanceof RelayError);
    assert.equal(crossed.kind, "unknown_action");

    // Two sessions of one connection name themselves in `context`: each invokes what it
    // rendered, and the session's `cwd` reaches the plugin.
    const first = { sessionId: "window-1", cwd: box.repo };
    const second = { sessionId: "window-2", cwd: box.root };
    const one = (await client.invokeUi(panel.id, "panel", { context: first })).actions[0];
    const two = (await client.invokeUi(panel.id, "panel", { context: second })).actions[0];
    assert.deepEqual(
      await client.invokeUi(panel.id, "panel", { operation: "invoke", actionId: one.id, context: first }),
      { invoked: one.id, input: one.input, cwd: box.repo, sessionId: "window-1" },
    );
    assert.deepEqual(
      await client.invokeUi(panel.id, "panel", { operation: "invoke", actionId: two.id, context: second }),
      { invoked: two.id, input: two.input, cwd: box.root, sessionId: "window-2" },
    );
    other.close();

    const exited = new Promise((resolve) => service.once("exit", (code) => resolve(code)));
    service.kill("SIGTERM");
    assert.equal(await exited, 0);
    assert.equal(existsSync(socket), false, "the service removed its socket");
    client.close();
  } finally {
    service.kill("SIGKILL");
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("spawn of a missing or non-executable binary rejects with a SpawnError", async () => {
  const box = sandbox();
  try {
    const notExecutable = join(box.root, "c2-plugins");
    writeFileSync(notExecutable, "not a program\n", { mode: 0o644 });
    for (const path of [join(box.root, "missing", "c2-plugins"), notExecutable]) {
      const client = RelayClient.spawn(path, { pluginsDir: box.plugins, stderr: "ignore" });
      const failed = await client.initialize().catch((e) => e);
      assert.ok(failed instanceof SpawnError, `${path}: ${failed}`);
      assert.equal(failed.kind, "spawn_failed");
      assert.equal(failed.code, "ERR_RELAY_SPAWN");
      assert.equal(failed.binary, path);
      assert.ok(failed.cause, "the spawn's own error is the cause");
      assert.equal(await client.exited().catch((e) => e), failed);
      assert.equal(await client.list().catch((e) => e), failed);
      client.close();
    }
  } finally {
    rmSync(box.root, { recursive: true, force: true });
  }
});

test("a call right after a cancelled one starts the runtime again, 20 times over", async () => {
  const box = sandbox();
  const client = RelayClient.spawn(binary, { pluginsDir: box.plugins, cwd: box.root, stderr: "ignore" });
  try {
    await client.initialize();
    const sleeper = await client.install(sleeperBundle(box.root), { trust: true, enable: true });
    for (let round = 0; round < 20; round++) {
      const abort = new AbortController();
      const hanging = client.invoke("fixture.sleep", { ms: 600_000 }, { signal: abort.signal });
      await until("the fixture start", async () => (await client.runtimePid(sleeper.id)) !== null);
      await new Promise((resolve) => setTimeout(resolve, round % 4));
      abort.abort(new Error(`round ${round}`));
      const cancelled = await hanging.catch((e) => e);
      assert.ok(cancelled instanceof CancelledError, `round ${round}: ${cancelled}`);
      assert.equal(cancelled.cause.message, `round ${round}`);
      const echoed = await client.invoke("fixture.echo", { round });
      assert.deepEqual(echoed, { round }, `round ${round}`);
    }
    client.close();
    assert.equal(await client.exited(), 0);
  } finally {
    client.child?.kill("SIGKILL");
    rmSync(box.root, { recursive: true, force: true });
  }
});
