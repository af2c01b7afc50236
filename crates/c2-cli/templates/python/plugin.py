#!/usr/bin/env python3
"""{{name}}: a C2 Plugin Protocol 1.0.0 runtime in one file, standard library only.

- stdout carries protocol frames only, one JSON object per line. Log to stderr
  (print(..., file=sys.stderr)) or with the `log` notification, never with a bare print().
- The commands confirmed in `initialize` are read from plugin.json, so they cannot drift.
- Args are checked before a handler runs; the runtime is responsible for that.
- The process exits when stdin closes.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "plugin.json"), encoding="utf-8") as f:
    MANIFEST = json.load(f)
DECLARED = MANIFEST["extensions"]["dev.codetwo"]["commands"]


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def send(message):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def hello(args):
    name = args.get("name", "world")
    if not isinstance(name, str) or not name:
        raise RpcError(-32602, "/name must be a non-empty string")
    return {"greeting": f"Hello, {name}!"}


# One handler per declared command id.
HANDLERS = {"{{command}}": hello}


def answer(method, params):
    if method == "initialize":
        commands = []
        for c in DECLARED:
            entry = {"name": c["id"], "description": c.get("description")}
            if "argsSchema" in c:
                entry["schema"] = c["argsSchema"]
            commands.append(entry)
        return {
            "name": MANIFEST["name"],
            "version": MANIFEST["version"],
            "protocolVersion": "1.0.0",
            "commands": commands,
            "events": [],
        }
    if method == "command/invoke":
        handler = HANDLERS.get(params.get("name"))
        if handler is None:
            raise RpcError(-32001, f"unknown command {params.get('name')}")
        args = params.get("args") or {}
        if not isinstance(args, dict):
            raise RpcError(-32602, "args must be an object")
        return handler(args)
    raise RpcError(-32601, f"method not found: {method}")


def main():
    for line in sys.stdin:  # ends when stdin closes, and so does the process
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError as error:
            print(f"{{name}}: ignoring a line that is not JSON: {error}", file=sys.stderr)
            continue
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            continue  # notifications and responses
        try:
            send({"id": message["id"], "result": answer(message["method"], message.get("params") or {})})
        except RpcError as error:
            send({"id": message["id"], "error": {"code": error.code, "message": str(error)}})
        except Exception as error:  # a bug in a handler is an error answer, not a crash
            send({"id": message["id"], "error": {"code": -32000, "message": str(error)}})


if __name__ == "__main__":
    main()
