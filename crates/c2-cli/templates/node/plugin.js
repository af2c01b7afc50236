#!/usr/bin/env node
// {{name}}: a C2 Plugin Protocol 1.0.0 runtime in one file, with no dependencies.
//
// - stdout carries protocol frames only, one JSON object per line. Log to stderr
//   (console.error) or with the `log` notification, never with console.log.
// - The commands confirmed in `initialize` are read from plugin.json, so they cannot drift.
// - Args are checked before a handler runs; the runtime is responsible for that.
// - The process exits when stdin closes.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "plugin.json"), "utf8"));
const declared = manifest.extensions["dev.codetwo"].commands;

function send(message) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
}

class InvalidParams extends Error {}

// One handler per declared command id.
const handlers = {
  "{{command}}": (args) => {
    if (args.name !== undefined && (typeof args.name !== "string" || args.name.length === 0)) {
      throw new InvalidParams("/name must be a non-empty string");
    }
    return { greeting: `Hello, ${args.name || "world"}!` };
  },
};

function answer(id, method, params) {
  if (method === "initialize") {
    return {
      name: manifest.name,
      version: manifest.version,
      protocolVersion: "1.0.0",
      commands: declared.map((c) => ({
        name: c.id,
        description: c.description,
        ...(c.argsSchema === undefined ? {} : { schema: c.argsSchema }),
      })),
      events: [],
    };
  }
  if (method === "command/invoke") {
    const handler = handlers[params.name];
    if (!handler) {
      const error = new Error(`unknown command ${params.name}`);
      error.code = -32001;
      throw error;
    }
    const args = params.args || {};
    if (typeof args !== "object" || Array.isArray(args)) throw new InvalidParams("args must be an object");
    return handler(args);
  }
  const error = new Error(`method not found: ${method}`);
  error.code = -32601;
  throw error;
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", (line) => {
  if (line.trim() === "") return;
  let message;
  try {
    message = JSON.parse(line);
  } catch (error) {
    console.error(`{{name}}: ignoring a line that is not JSON: ${error.message}`);
    return;
  }
  if (message.method === undefined || message.id === undefined) return; // notifications, responses
  try {
    send({ id: message.id, result: answer(message.id, message.method, message.params || {}) });
  } catch (error) {
    const code = error instanceof InvalidParams ? -32602 : error.code || -32000;
    send({ id: message.id, error: { code, message: error.message } });
  }
});
input.on("close", () => process.exit(0));
