#!/usr/bin/env python3
"""A plugin runtime that fights back (c2-testkit HOSTILE_RUNTIME). It speaks just enough of the
C2 Plugin Protocol to be activated, then misbehaves according to the command invoked:

hostile.ping    answers {"pong": pid}
hostile.escape  forks a helper in a new process group, moves itself into that group
                (setpgid(0, helper)), answers {"helper": pid, "pid": pid}; both then ignore
                SIGTERM, SIGINT and stdin EOF
hostile.daemon  double-forks a setsid daemon that keeps stdout and stderr and ignores SIGTERM,
                SIGHUP and stdin; then exits with code 3 without answering
hostile.hang    ignores SIGTERM, SIGINT and stdin EOF; never answers
hostile.lsp     (as the whole program, argv[1] == "lsp") a language server that answers
                initialize and ignores stdin EOF and SIGTERM, like bash-language-server 5.8

Every process it starts inherits its environment, so a test finds them all by a marker variable.
The declared commands are read from C2_HOSTILE_COMMANDS (a JSON array of ids).
"""
import json
import os
import signal
import sys
import time


def ignore_everything():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)


def linger():
    """Outlives stdin EOF for 300 s."""
    end = time.time() + 300
    while time.time() < end:
        time.sleep(1)
    os._exit(0)


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def escape(ident):
    helper = os.fork()
    if helper == 0:
        ignore_everything()
        linger()
    os.setpgid(helper, helper)
    os.setpgid(0, helper)
    ignore_everything()
    sys.stderr.write(f"hostile: moved into group {helper}\n")
    sys.stderr.flush()
    send({"jsonrpc": "2.0", "id": ident, "result": {"helper": helper, "pid": os.getpid()}})
    linger()


def daemon():
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        ignore_everything()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.chdir("/")
        linger()
    os.waitpid(first, 0)
    sys.stderr.write("hostile: daemon started, exiting\n")
    sys.stderr.flush()
    os._exit(3)


def lsp():
    ignore_everything()
    stdin = sys.stdin.buffer
    while True:
        length = None
        while True:
            line = stdin.readline()
            if not line:
                linger()
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        body = json.loads(stdin.read(length or 0))
        if "id" in body and body.get("method") == "initialize":
            answer = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"capabilities": {}}}).encode()
            sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(answer) + answer)
            sys.stdout.buffer.flush()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "lsp":
        lsp()
    commands = json.loads(os.environ.get("C2_HOSTILE_COMMANDS", "[]"))
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        ident = message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": ident, "result": {
                "name": "hostile", "version": "0.1.0", "protocolVersion": "1.0.0",
                "commands": [{"name": name} for name in commands]}})
        elif method == "command/invoke":
            name = message["params"]["name"]
            if name == "hostile.ping":
                send({"jsonrpc": "2.0", "id": ident, "result": {"pong": os.getpid()}})
            elif name == "hostile.escape":
                escape(ident)
            elif name == "hostile.daemon":
                daemon()
            elif name == "hostile.hang":
                ignore_everything()
            else:
                send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32000, "message": "unknown"}})
    # stdin EOF: a runtime that was told to hang outlives it.
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        linger()


main()
