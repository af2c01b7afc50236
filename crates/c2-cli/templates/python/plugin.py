#!/usr/bin/env python3
"""{{name}}: a C2 plugin runtime on the C2 plugin SDK for Python (3.10+).

c2_plugin_sdk.py beside this file is the whole SDK, carried in the bundle because installing a
bundle runs nothing (no pip install). It confirms exactly the commands of plugin.json at
`initialize`, checks args against their argsSchema before a handler runs, keeps stdout for
protocol frames (print goes to stderr once the plugin runs), and exits when stdin closes.

A handler gets `(args, ctx)`, may be sync or async, and returns the result; raise
`PluginError(message, data=...)` to answer with an error. `await ctx.call(name, args)` calls a
public host command such as git.status, `ctx.emit` and `ctx.log` notify the host, and
`ctx.data_dir` / `ctx.project_path` say where this instance lives.
"""

from c2_plugin_sdk import Plugin

plugin = Plugin()


# One handler per command declared in plugin.json.
@plugin.command("{{command}}")
def hello(args, ctx):
    return {"greeting": f"Hello, {args.get('name', 'world')}!"}


def main():
    plugin.run()


if __name__ == "__main__":
    main()
