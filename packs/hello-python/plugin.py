#!/usr/bin/env python3
"""hello-python: a C2 plugin runtime on the Python SDK, which this bundle carries as
c2_plugin_sdk.py (installing a bundle runs nothing, so it cannot pip install).

The SDK confirms exactly the commands of plugin.json at `initialize`, checks args against their
argsSchema before the handler runs (a violation is a -32602 error naming the path), keeps stdout
for protocol frames (a stray print goes to stderr) and exits when stdin closes. What is left
here is the plugin itself: a greeting, and a count of greetings per process.
"""

import os

from c2_plugin_sdk import Plugin

plugin = Plugin()
greetings = 0


@plugin.command("hello-python.greet")
def greet(args, ctx):
    global greetings
    greetings += 1
    name = args.get("name", "world")
    return {"greeting": f"Hello, {name}!", "greetings": greetings, "pid": os.getpid()}


if __name__ == "__main__":
    plugin.run()
