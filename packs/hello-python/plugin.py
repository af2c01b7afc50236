#!/usr/bin/env python3
"""hello-python: a C2 Plugin Protocol 1.0.0 runtime with the standard library only.

stdout carries protocol frames only: print() is redirected to stderr at start, so a stray
print cannot corrupt the protocol. The command set confirmed in `initialize` is read from this
bundle's plugin.json, arguments are checked before the command runs (the runtime is responsible
for that), and the process exits when stdin closes.
"""

import json
import os
import sys

_protocol_out = sys.stdout
sys.stdout = sys.stderr  # anything printed by accident goes to the log channel

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "plugin.json"), encoding="utf-8") as f:
    MANIFEST = json.load(f)
DECLARED = MANIFEST["extensions"]["dev.codetwo"]["commands"]

greetings = 0


def send(message):
    message["jsonrpc"] = "2.0"
    _protocol_out.write(json.dumps(message, separators=(",", ":")) + "\n")
    _protocol_out.flush()


def log(level, message):
    send({"method": "log", "params": {"level": level, "message": message}})


class InvalidArgs(Exception):
    pass


def greet(args):
    global greetings
    if not isinstance(args, dict):
        raise InvalidArgs("args must be an object")
    unknown = sorted(set(args) - {"name"})
    if unknown:
        raise InvalidArgs(f"/{unknown[0]}: unknown property")
    name = args.get("name", "world")
    if not isinstance(name, str) or not 1 <= len(name) <= 100:
        raise InvalidArgs("/name: must be a string of 1 to 100 characters")
    greetings += 1
    return {"greeting": f"Hello, {name}!", "greetings": greetings, "pid": os.getpid()}


COMMANDS = {"hello-python.greet": greet}


def handle(message):
    method, msg_id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "initialize":
        commands = []
        for c in DECLARED:
            entry = {"name": c["id"], "description": c.get("description")}
            if "argsSchema" in c:
                entry["schema"] = c["argsSchema"]
            commands.append(entry)
        send({"id": msg_id, "result": {
            "name": MANIFEST["name"], "version": MANIFEST["version"],
            "protocolVersion": "1.0.0", "commands": commands, "events": [],
        }})
        log("info", "hello-python initialized")
    elif method == "command/invoke":
        handler = COMMANDS.get(params.get("name"))
        if handler is None:
            send({"id": msg_id, "error": {"code": -32001, "message": f"unknown command {params.get('name')}"}})
            return
        try:
            send({"id": msg_id, "result": handler(params.get("args", {}))})
        except InvalidArgs as error:
            send({"id": msg_id, "error": {"code": -32602, "message": str(error)}})
        except Exception as error:  # a bug in a command is a command failure, not a crash
            send({"id": msg_id, "error": {"code": -32000, "message": str(error)}})
    elif msg_id is not None:
        send({"id": msg_id, "error": {"code": -32601, "message": f"method not found: {method}"}})


def main():
    for line in sys.stdin.buffer:  # ends when stdin closes
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError as error:
            print(f"hello-python: ignoring a line that is not JSON: {error}")
            continue
        if isinstance(message, dict) and "method" in message:
            handle(message)


if __name__ == "__main__":
    main()
