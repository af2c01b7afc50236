from __future__ import annotations

import time

import c2_plugin_sdk
from c2_plugin_sdk import Plugin, is_plain_schema, plain_violations
from harness import Running, bundle

GREET = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 100}},
    "additionalProperties": False,
}

SOURCE = r'''
import asyncio, os, sys
from c2_plugin_sdk import Plugin, PluginError

plugin = Plugin()
state = {"seen": 0, "in_flight": 0, "peak": 0}
released = asyncio.Event()

@plugin.command("fx.greet")
def greet(args, ctx):
    return {"greeting": f"Hello, {args.get('name', 'world')}!", "dataDir": ctx.data_dir, "projectPath": ctx.project_path}

@plugin.command("fx.fail")
def fail(args, ctx):
    raise PluginError("it broke", data={"reason": "on purpose", "n": 7})

@plugin.command("fx.crash")
def crash(args, ctx):
    raise RuntimeError("plain failure")

@plugin.command("fx.noisy")
async def noisy(args, ctx):
    print("print noise")
    sys.__stdout__.write("sys.__stdout__ noise\n")
    sys.__stdout__.flush()
    os.write(1, b"fd 1 noise\n")
    return {"quiet": True}

@plugin.command("fx.status")
async def status(args, ctx):
    ctx.log("info", "asking the host")
    try:
        return {"status": await ctx.call("git.status", {"cwd": args.get("cwd")})}
    except PluginError as error:
        return {"failed": error.message, "code": error.code, "data": error.data}

@plugin.command("fx.gather")
async def gather(args, ctx):
    state["in_flight"] += 1
    state["peak"] = max(state["peak"], state["in_flight"])
    if state["in_flight"] >= args["n"]:
        released.set()
    await released.wait()
    state["in_flight"] -= 1
    return {"peak": state["peak"]}

@plugin.command("fx.size")
def size(args, ctx):
    return {"length": len(args["text"])}

@plugin.command("fx.slow")
async def slow(args, ctx):
    await asyncio.sleep(0.15)
    return "late"

@plugin.command("fx.seen")
def seen(args, ctx):
    return state["seen"]

@plugin.command("fx.pattern")
def pattern(args, ctx):
    return args["code"]

@plugin.on("skills/changed")
def changed(payload, ctx):
    state["seen"] += 1
    ctx.emit("fx.changed", {"seen": state["seen"]})

plugin.run()
'''

COMMANDS = {
    "fx.greet": GREET,
    "fx.fail": None,
    "fx.crash": {"type": "object"},
    "fx.noisy": {"type": "object"},
    "fx.status": {"type": "object", "properties": {"cwd": {"type": "string"}}},
    "fx.gather": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]},
    "fx.size": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "fx.slow": {"type": "object"},
    "fx.seen": {"type": "object"},
    "fx.pattern": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}, "required": ["code"]},
}


def start() -> Running:
    return Running(bundle(COMMANDS, SOURCE))


def test_the_version_names_the_protocol_it_speaks() -> None:
    assert c2_plugin_sdk.PROTOCOL_VERSION == "1.0.0"
    assert c2_plugin_sdk.__version__ == "0.1.0"


def test_initialize_confirms_exactly_the_manifest() -> None:
    plugin = start()
    answer = plugin.initialize()["result"]
    assert answer["name"] == "fixture"
    assert answer["version"] == "1.2.3"
    assert answer["protocolVersion"] == "1.0.0"
    assert [c["name"] for c in answer["commands"]] == list(COMMANDS)
    assert answer["commands"][0]["schema"] == GREET
    assert "schema" not in answer["commands"][1]
    assert answer["events"] == ["skills/changed"]
    assert plugin.close() == 0


def test_results_argument_errors_unknown_commands_and_errors_with_data() -> None:
    plugin = start()
    plugin.initialize(projectPath="/work/p")
    assert plugin.invoke("fx.greet", {"name": "Ada"})["result"] == {
        "greeting": "Hello, Ada!", "dataDir": "/tmp/data", "projectPath": "/work/p"}
    assert plugin.invoke("fx.greet")["result"]["greeting"] == "Hello, world!"
    extra = plugin.invoke("fx.greet", {"name": "Ada", "age": 3})["error"]
    assert extra["code"] == -32602
    assert "`/age`" in extra["message"]
    assert extra["data"]["violations"][0]["instancePath"] == "/age"
    wrong = plugin.invoke("fx.greet", {"name": 5})["error"]
    assert wrong["data"]["violations"][0]["schemaPath"] == "#/properties/name/type"
    assert "the top level" in plugin.invoke("fx.greet", [1])["error"]["message"]
    assert plugin.invoke("fx.nope", {})["error"]["code"] == -32001
    assert plugin.invoke("fx.fail", {})["error"] == {
        "code": -32000, "message": "it broke", "data": {"reason": "on purpose", "n": 7}}
    crash = plugin.invoke("fx.crash", {})["error"]
    assert crash == {"code": -32000, "message": "plain failure"}
    assert plugin.request("frobnicate", {})["error"]["code"] == -32601
    assert plugin.process.stdin is not None
    plugin.process.stdin.write(b"not json\n[1, 2]\n")
    assert plugin.request("command/invoke", [1])["error"]["code"] == -32001
    plugin.send({"method": "event/emit", "params": "nonsense"})
    assert plugin.invoke("fx.greet", {"name": "C"})["result"]["greeting"] == "Hello, C!"
    plugin.close()


def test_a_schema_beyond_the_plain_subset_is_checked_by_jsonschema() -> None:
    plugin = start()
    plugin.initialize()
    assert plugin.invoke("fx.pattern", {"code": "ABC"})["result"] == "ABC"
    bad = plugin.invoke("fx.pattern", {"code": "abc"})["error"]
    assert bad["code"] == -32602
    assert bad["data"]["violations"][0]["instancePath"] == "/code"
    assert bad["data"]["violations"][0]["schemaPath"] == "#/properties/code/pattern"
    plugin.close()


def test_stdout_carries_frames_only() -> None:
    plugin = start()
    plugin.initialize()
    assert plugin.invoke("fx.noisy", {})["result"] == {"quiet": True}
    plugin.close()
    assert plugin.noise == []
    for noise in ("print noise", "sys.__stdout__ noise", "fd 1 noise"):
        assert noise in plugin.stderr


def test_command_call_and_log() -> None:
    plugin = start()
    plugin.initialize()
    plugin.send({"id": 50, "method": "command/invoke", "params": {"name": "fx.status", "args": {"cwd": "/repo"}}})
    log = plugin.next(lambda f: f.get("method") == "log")
    assert log["params"] == {"level": "info", "message": "asking the host"}
    call = plugin.next(lambda f: f.get("method") == "command/call")
    assert call["params"] == {"name": "git.status", "args": {"cwd": "/repo"}}
    plugin.send({"id": call["id"], "result": {"branch": "main", "files": []}})
    assert plugin.next(lambda f: f.get("id") == 50)["result"] == {"status": {"branch": "main", "files": []}}

    plugin.send({"id": 51, "method": "command/invoke", "params": {"name": "fx.status", "args": {}}})
    second = plugin.next(lambda f: f.get("method") == "command/call")
    plugin.send({"id": second["id"], "error": {"code": -32002, "message": "not public", "data": {"kind": "x"}}})
    assert plugin.next(lambda f: f.get("id") == 51)["result"] == {
        "failed": "not public", "code": -32002, "data": {"kind": "x"}}

    plugin.send({"id": 52, "method": "command/invoke", "params": {"name": "fx.status", "args": {}}})
    third = plugin.next(lambda f: f.get("method") == "command/call")
    plugin.send({"id": third["id"], "error": {"code": -32000, "message": "no repository"}})
    assert plugin.next(lambda f: f.get("id") == 52)["result"] == {
        "failed": "no repository", "code": -32000, "data": None}
    plugin.close()


def test_subscribed_events_reach_their_handler() -> None:
    plugin = start()
    plugin.initialize()
    plugin.send({"method": "event/emit", "params": {"name": "skills/changed", "payload": None}})
    plugin.send({"method": "event/emit", "params": {"name": "scenes/changed", "payload": None}})
    emitted = plugin.next(lambda f: f.get("method") == "event/emit")
    assert emitted["params"] == {"name": "fx.changed", "payload": {"seen": 1}}
    assert plugin.invoke("fx.seen", {})["result"] == 1
    plugin.close()


def test_64_calls_run_concurrently() -> None:
    plugin = start()
    plugin.initialize()
    for i in range(64):
        plugin.send({"id": 1000 + i, "method": "command/invoke", "params": {"name": "fx.gather", "args": {"n": 64}}})
    for i in range(64):
        assert plugin.next(lambda f, i=i: f.get("id") == 1000 + i)["result"]["peak"] == 64
    plugin.close()


def test_a_4_mib_argument_arrives_and_an_overlong_line_is_skipped() -> None:
    plugin = start()
    plugin.initialize()
    text = "x" * (4 * 1024 * 1024)
    assert plugin.invoke("fx.size", {"text": text})["result"]["length"] == len(text)
    assert plugin.process.stdin is not None
    plugin.process.stdin.write(b"y" * (9 * 1024 * 1024) + b"\n")
    assert plugin.invoke("fx.greet", {"name": "B"})["result"]["greeting"] == "Hello, B!"
    plugin.close()
    assert "skipped an input line" in plugin.stderr


def test_stdin_eof_answers_what_was_asked_then_exits_0() -> None:
    plugin = start()
    plugin.initialize()
    plugin.send({"id": 9, "method": "command/invoke", "params": {"name": "fx.slow", "args": {}}})
    started = time.monotonic()
    assert plugin.close() == 0
    assert time.monotonic() - started < 5
    assert plugin.next(lambda f: f.get("id") == 9, timeout=1)["result"] == "late"


def test_handlers_and_declarations_must_match() -> None:
    source = "from c2_plugin_sdk import Plugin\np = Plugin()\np.command('fx.other', lambda a, c: 1)\np.run()\n"
    plugin = Running(bundle({"fx.one": {"type": "object"}}, source))
    assert plugin.process.wait(timeout=10) == 1
    time.sleep(0.05)
    assert "declared in plugin.json but no handler bound: fx.one" in plugin.stderr
    assert "handler bound but not declared in plugin.json: fx.other" in plugin.stderr


def test_a_manifest_given_in_place_of_the_file_is_confirmed() -> None:
    plugin = Plugin(manifest={"name": "x", "extensions": {"dev.codetwo": {"commands": []}}})
    assert plugin.confirmation()["commands"] == []
    assert plugin.prepare() == {}


def test_plain_schemas_are_recognised_and_evaluated() -> None:
    assert is_plain_schema(GREET)
    assert is_plain_schema(True)
    assert is_plain_schema({"$schema": "https://json-schema.org/draft/2020-12/schema",
                            "anyOf": [{"type": "string"}, {"type": "null"}]})
    assert not is_plain_schema({"type": "string", "pattern": "a"})
    assert not is_plain_schema({"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}})
    assert not is_plain_schema({"$ref": "#/x"})
    assert not is_plain_schema({"minLength": -1})
    assert not is_plain_schema({"minLength": True})

    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True, "maxItems": 3},
            "mode": {"oneOf": [{"const": "x"}, {"const": "y"}]},
            "s": {"type": ["string", "null"], "maxLength": 2},
            "flag": {"enum": [1]},
        },
        "required": ["n"],
        "additionalProperties": {"type": "boolean"},
    }
    assert plain_violations(schema, {"n": 3, "tags": ["a"], "mode": "x", "s": None, "ok": True}) == []
    assert plain_violations(schema, {"n": 2.0}) == []

    def paths(value: object) -> list[str]:
        return [f"{v['instancePath']} {v['schemaPath']}" for v in plain_violations(schema, value)]

    assert paths({}) == [" #/required"]
    assert paths({"n": 10}) == ["/n #/properties/n/exclusiveMaximum"]
    assert paths({"n": 1.5}) == ["/n #/properties/n/type"]
    assert paths({"n": True}) == ["/n #/properties/n/type"]
    assert paths({"n": 1, "tags": ["a", "a"]}) == ["/tags #/properties/tags/uniqueItems"]
    assert paths({"n": 1, "tags": ["c"]}) == ["/tags/0 #/properties/tags/items/enum"]
    assert paths({"n": 1, "mode": "z"}) == ["/mode #/properties/mode/oneOf"]
    assert paths({"n": 1, "s": "😀😀"}) == []
    assert paths({"n": 1, "s": "abc"}) == ["/s #/properties/s/maxLength"]
    assert paths({"n": 1, "flag": True}) == ["/flag #/properties/flag/enum"]
    assert paths({"n": 1, "extra": 1}) == ["/extra #/additionalProperties/type"]
    assert len(plain_violations({"not": {"type": "string"}}, "a")) == 1
    assert len(plain_violations(False, 1)) == 1
