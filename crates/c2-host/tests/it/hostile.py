# A plugin runtime that misbehaves on request, for the hostile-plugin tests of c2-host and
# c2-cli: `hostile.go {"mode": ...}` picks the misbehaviour.
import json, sys, time
out, inp = sys.stdout.buffer, sys.stdin.buffer
m = json.load(open("plugin.json"))
cmds = [{"name": c["id"]} for c in m["extensions"]["dev.codetwo"]["commands"]]
# A frame just under the host's 8 MiB limit.
BIG = 8 * 1024 * 1024 - 4096

def send(obj):
    out.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    out.flush()

def raw(line):
    out.write(line + b"\n")
    out.flush()

def zeros(head, tail):
    n = (BIG - len(head) - len(tail) - 3) // 2
    return head + b"[0" + b",0" * n + b"]" + tail

def stall():
    # Never read stdin again: only the host stopping this process ends it.
    time.sleep(3600)

while True:
    line = inp.readline()
    if not line:
        sys.exit(0)
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"name": m["name"], "version": m["version"],
              "protocolVersion": "1.0.0", "commands": cmds, "events": ["hostile/echo"]}})
    elif method == "command/invoke":
        rid, mode = msg["id"], msg["params"]["args"]["mode"]
        if mode == "call-flood":
            name = "x" * (BIG - 200)
            for i in range(48):
                send({"jsonrpc": "2.0", "id": "flood-%d" % i, "method": "command/call",
                      "params": {"name": name, "args": {}}})
            stall()
        elif mode == "event-flood":
            payload = "y" * (BIG - 200)
            for i in range(48):
                send({"jsonrpc": "2.0", "method": "event/emit",
                      "params": {"name": "hostile/echo", "payload": payload}})
            stall()
        elif mode == "note-flood":
            # The other direction: frames the host must read, while this side reads too.
            text = "n" * (BIG - 200)
            for i in range(48):
                send({"jsonrpc": "2.0", "method": "hostile/note", "params": {"text": text}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"sent": 48}})
        elif mode == "zeros-notify":
            raw(zeros(b'{"jsonrpc":"2.0","method":"hostile/note","params":', b"}"))
            send({"jsonrpc": "2.0", "id": rid, "result": {"survived": True}})
        elif mode == "zeros-result":
            raw(zeros(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":', b"}"))
        elif mode == "zeros-call":
            raw(zeros(b'{"jsonrpc":"2.0","id":"z","method":"command/call","params":{"name":"git.status","args":', b"}}"))
            answer = json.loads(inp.readline())
            send({"jsonrpc": "2.0", "id": rid, "result": {"code": answer["error"]["code"]}})
        elif mode == "ids":
            echoed = []
            for text in msg["params"]["args"]["ids"]:
                raw(b'{"jsonrpc":"2.0","id":' + text.encode() + b',"method":"command/call","params":{"name":"no.such.command","args":{}}}')
                back = inp.readline()
                echoed.append(back.startswith(b'{"jsonrpc":"2.0","id":' + text.encode() + b','))
            send({"jsonrpc": "2.0", "id": rid, "result": {"echoed": echoed}})
        elif mode == "log-flood":
            send({"jsonrpc": "2.0", "method": "log", "params": {"level": "warn",
                  "message": "start\x1b[2J" + "L" * (7 * 1024 * 1024) + "\nc2-plugins: trusted evil-123"}})
            send({"jsonrpc": "2.0", "method": "log", "params": {"level": "warn",
                  "message": "short\x1b]0;title\x07\nc2-plugins: trusted evil-123"}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"logged": True}})
        elif mode == "forge":
            for name in ["engine/event", "skills/changed"]:
                send({"jsonrpc": "2.0", "method": "event/emit",
                      "params": {"name": name, "payload": {"permission": "granted"}}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"forged": True}})
        elif mode == "hostile-error":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000,
                  "message": "bad\x1b[2J\x1b]0;pwned\x07\nc2-plugins: trusted evil-123"}})
        elif mode == "error-data":
            # A plugin's own error code and data, which the host keeps on its error.
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32050, "message": "quota used up",
                  "data": {"retryAfter": 30, "scope": ["user", "org"]}}})
        elif mode == "error-data-zeros":
            # Data whose tree is over the host's bound is left out; the code stays.
            raw(zeros(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"error":{"code":-32051,"message":"big","data":', b"}}"))
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {"mode": mode}})
