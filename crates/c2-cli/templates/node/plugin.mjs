#!/usr/bin/env node
// {{name}}: a C2 plugin runtime on the C2 plugin SDK for JavaScript/TypeScript (Node 20+ or Bun).
//
// c2-plugin-sdk.mjs beside this file is the whole SDK, carried in the bundle because installing
// a bundle runs nothing (no npm install). It confirms exactly the commands of plugin.json at
// `initialize`, checks args against their argsSchema before a handler runs, keeps stdout for
// protocol frames (console.log goes to stderr), and exits when stdin closes.
//
// A handler gets `(args, ctx)` and returns the result (or a Promise of it); throw
// `new PluginError(message, { data })` to answer with an error. `ctx.call(name, args)` calls a
// public host command such as git.status, `ctx.emit` and `ctx.log` notify the host, and
// `ctx.dataDir` / `ctx.projectPath` say where this instance lives.
import { definePlugin } from "./c2-plugin-sdk.mjs";

definePlugin()
  // One handler per command declared in plugin.json.
  .command("{{command}}", (args) => ({ greeting: `Hello, ${args.name ?? "world"}!` }))
  .run();
