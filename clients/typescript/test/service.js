// What the suites that run against a real `c2-plugins serve` share: the binaries the Rust test
// names in the environment, sandboxes with a git repository, and the test bundles.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function required(name) {
  const value = process.env[name];
  assert.ok(value, `${name} must be set (see the comment at the top of relay.test.js)`);
  return value;
}

export function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(")") + 1).trimStart().startsWith("Z");
  } catch {
    return false;
  }
}

export async function until(what, check, ms = 60_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export function sandbox() {
  const root = mkdtempSync(join(tmpdir(), "c2-relay-js-"));
  const repo = join(root, "repo");
  mkdirSync(repo);
  const git = (...args) =>
    execFileSync("git", args, {
      cwd: repo,
      env: {
        ...process.env,
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        GIT_AUTHOR_NAME: "T",
        GIT_AUTHOR_EMAIL: "t@example.invalid",
        GIT_COMMITTER_NAME: "T",
        GIT_COMMITTER_EMAIL: "t@example.invalid",
      },
    });
  git("init", "--quiet", "--initial-branch=main");
  writeFileSync(join(repo, "README.md"), "hello\n");
  git("add", "--all");
  git("commit", "--quiet", "--message", "first");
  return { root, repo, plugins: join(root, "plugins") };
}

/** A bundle whose runtime is the fixture, declaring `fixture.sleep` and `fixture.echo`. */
export function sleeperBundle(root, fixture = required("C2_FIXTURE_BIN")) {
  const dir = join(root, "sleeper");
  mkdirSync(join(dir, "bin"), { recursive: true });
  writeFileSync(join(dir, "bin", "launch"), '#!/bin/sh\nexec "$C2_TEST_PROGRAM" "$@"\n');
  chmodSync(join(dir, "bin", "launch"), 0o755);
  const manifest = {
    $schema: "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
    name: "sleeper",
    version: "1.0.0",
    extensions: {
      "dev.codetwo": {
        standardVersion: "1.2.0",
        commands: [
          { id: "fixture.sleep", title: "Sleep" },
          { id: "fixture.echo", title: "Echo" },
        ],
        runtime: {
          command: "bin/launch",
          env: {
            C2_TEST_PROGRAM: fixture,
            C2_FIXTURE_COMMANDS: JSON.stringify([{ name: "fixture.sleep" }, { name: "fixture.echo" }]),
          },
          scopeSupport: ["user"],
        },
      },
    },
  };
  writeFileSync(join(dir, "plugin.json"), JSON.stringify(manifest, null, 2));
  return dir;
}

/** A host.actions bundle whose render names its one item after the call count. */
export function panelBundle(root) {
  const dir = join(root, "panel");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "plugin.js"),
    `const readline = require("readline");
let calls = 0;
const send = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.method === "initialize") {
    send({ id: msg.id, result: { name: "panel", version: "1.0.0", protocolVersion: "1.0.0", commands: [{ name: "acts.panel" }], events: [] } });
  } else if (msg.method === "command/invoke") {
    const a = msg.params.args;
    calls += 1;
    if (a.context.operation === "render") send({ id: msg.id, result: [{ id: "item-" + calls, label: "Item", input: { n: calls } }] });
    else send({ id: msg.id, result: { invoked: a.context.actionId, input: a.input, cwd: a.context.cwd, sessionId: a.context.sessionId } });
  }
}).on("close", () => process.exit(0));
`,
  );
  const manifest = {
    $schema: "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
    name: "panel",
    version: "1.0.0",
    extensions: {
      "dev.codetwo": {
        standardVersion: "1.2.0",
        commands: [{ id: "acts.panel", title: "Panel" }],
        runtime: { command: "node", args: ["plugin.js"], scopeSupport: ["user"] },
        ui: [{ id: "panel", slot: "host.actions", label: "Panel", command: "acts.panel" }],
      },
    },
  };
  writeFileSync(join(dir, "plugin.json"), JSON.stringify(manifest, null, 2));
  return dir;
}
