// Compiled (not run) by `npm run typecheck`: the hand-written types accept a typical plugin.
import { definePlugin, PluginError, protocolVersion, type Context } from "../src/index.js";
const v: "1.0.0" = protocolVersion;
definePlugin()
  .command<{ name?: string }, { greeting: string }>("g.hello", async (args, ctx: Context) => {
    const s = await ctx.call<{ branch: string }>("git.status", { cwd: ctx.projectPath ?? "." });
    ctx.log("info", s.branch);
    ctx.emit("g.x", { a: 1 });
    if (!args.name) throw new PluginError("no", { data: { x: 1 }, code: -32000 });
    return { greeting: args.name };
  })
  .on("skills/changed", (_p, ctx) => { ctx.log("debug", String(ctx.dataDir)); })
  .run();
