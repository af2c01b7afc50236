#!/usr/bin/env node
// hello-runtime: a C2 plugin runtime on the TypeScript/JavaScript SDK, which this bundle carries
// as c2-plugin-sdk.mjs (installing a bundle runs nothing, so it cannot npm install).
//
// The SDK confirms exactly the commands of plugin.json at `initialize`, checks args against
// their argsSchema, keeps stdout for protocol frames and exits when stdin closes. What is left
// here is the plugin itself:
// - `hello.status` feature-detects `git.status` in the host's public commands and calls it back
//   through the host (`ctx.call`), never running git itself. The UI descriptor in plugin.json
//   invokes the same command with `{context, input}`.
// - It subscribes to `skills/changed` and counts the events; it logs through the host.
import { definePlugin } from "./c2-plugin-sdk.mjs";

let skillsChanged = 0;

definePlugin()
  .command("hello.status", async (args, ctx) => {
    const greeting = process.env.HELLO_RUNTIME_GREETING || "Hello";
    const cwd = args.cwd || args.context?.cwd || ctx.projectPath || ".";
    if (!ctx.host.commands.includes("git.status")) {
      return { greeting, git: null, note: "this host does not publish git.status to extensions" };
    }
    const status = await ctx.call("git.status", { cwd });
    const changed = status.files.length;
    const where = status.branch ? `on ${status.branch}` : "with a detached HEAD";
    ctx.log("debug", `git.status answered for ${cwd}`);
    return {
      greeting,
      summary: `${where}, ${changed} changed file${changed === 1 ? "" : "s"}`,
      git: status,
      skillsChangedEvents: skillsChanged,
    };
  })
  .on("skills/changed", (_payload, ctx) => {
    skillsChanged += 1;
    ctx.log("debug", "the skill library was rebuilt");
  })
  .run();
