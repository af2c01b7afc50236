#!/usr/bin/env node
// hello-runtime: a complete C2 Plugin Protocol 1.0.0 runtime in one file, with no dependencies.
//
// - stdout carries protocol frames only (one JSON object per line); diagnostics go to stderr or
//   through the `log` notification.
// - The command set confirmed in `initialize` is read from this bundle's own plugin.json, so the
//   confirmation can never drift from the manifest.
// - `hello.status` feature-detects `git.status` in `host.commands` and calls it back through
//   `command/call`, correlating the host's answer by request id.
// - The process exits when stdin closes: that is how a host that died leaves no orphan behind.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "plugin.json"), "utf8"));
const declared = manifest.extensions["dev.codetwo"].commands;

let hostCommands = [];
let projectPath = null;
let skillsChanged = 0;
let nextCallId = 1;
const pendingCalls = new Map(); // our request id -> { resolve, reject }

function send(message) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
}

function log(level, message) {
  send({ method: "log", params: { level, message } });
}

function callHost(name, args) {
  const id = `hello-${nextCallId++}`;
  return new Promise((resolve, reject) => {
    pendingCalls.set(id, { resolve, reject });
    send({ id, method: "command/call", params: { name, args } });
  });
}

async function helloStatus(args) {
  const greeting = process.env.HELLO_RUNTIME_GREETING || "Hello";
  const cwd = args.cwd || (args.context && args.context.cwd) || projectPath || ".";
  if (!hostCommands.includes("git.status")) {
    return { greeting, git: null, note: "this host does not publish git.status to extensions" };
  }
  const status = await callHost("git.status", { cwd });
  const changed = status.files.length;
  const where = status.branch ? `on ${status.branch}` : "with a detached HEAD";
  return {
    greeting,
    summary: `${where}, ${changed} changed file${changed === 1 ? "" : "s"}`,
    git: status,
    skillsChangedEvents: skillsChanged,
  };
}

async function handleRequest(message) {
  const { id, method, params } = message;
  try {
    if (method === "initialize") {
      hostCommands = (params.host && params.host.commands) || [];
      projectPath = params.projectPath || null;
      send({
        id,
        result: {
          name: manifest.name,
          version: manifest.version,
          protocolVersion: "1.0.0",
          commands: declared.map((c) => ({
            name: c.id,
            description: c.description,
            ...(c.argsSchema === undefined ? {} : { schema: c.argsSchema }),
          })),
          events: ["skills/changed"],
        },
      });
      log("info", `initialized; host publishes ${hostCommands.length} command(s) to extensions`);
    } else if (method === "command/invoke") {
      if (params.name !== "hello.status") {
        send({ id, error: { code: -32001, message: `unknown command ${params.name}` } });
        return;
      }
      send({ id, result: await helloStatus(params.args || {}) });
    } else {
      send({ id, error: { code: -32601, message: `method not found: ${method}` } });
    }
  } catch (error) {
    send({ id, error: { code: -32000, message: error.message || String(error) } });
  }
}

function handleResponse(message) {
  const pending = pendingCalls.get(message.id);
  if (!pending) {
    process.stderr.write(`hello-runtime: response to unknown id ${JSON.stringify(message.id)}\n`);
    return;
  }
  pendingCalls.delete(message.id);
  if (message.error) pending.reject(new Error(message.error.message));
  else pending.resolve(message.result);
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", (line) => {
  if (line.trim() === "") return;
  let message;
  try {
    message = JSON.parse(line);
  } catch (error) {
    process.stderr.write(`hello-runtime: ignoring a line that is not JSON: ${error.message}\n`);
    return;
  }
  if (message.method !== undefined && message.id !== undefined) {
    handleRequest(message);
  } else if (message.method === "event/emit") {
    if (message.params && message.params.name === "skills/changed") {
      skillsChanged += 1;
      log("debug", "the skill library was rebuilt");
    }
  } else if (message.id !== undefined) {
    handleResponse(message);
  }
});
input.on("close", () => process.exit(0));
