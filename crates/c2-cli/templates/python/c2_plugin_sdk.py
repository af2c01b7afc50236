"""c2-plugin-sdk 0.1.0: write a C2 plugin runtime (C2 Plugin Protocol 1.0.0) in Python 3.10+.

This one module is the whole SDK: a bundle may carry it as a single file (``c2-plugins new``
puts it beside plugin.py as ``c2_plugin_sdk.py``), because installing a bundle executes
nothing, so no ``pip install`` ever runs for it.

What it does for a plugin: reads plugin.json and confirms exactly its declared commands and
schemas at ``initialize``; checks every call's args against its argsSchema before the handler
runs; answers raised errors as JSON-RPC errors (with ``data``); runs handlers concurrently on
asyncio; gives each handler a context to call the host's public commands, emit events and
log; keeps stdout for protocol frames (``print`` and anything else written to file descriptor
1 go to stderr); bounds the lines it reads and writes; and exits when stdin closes.

Validation: a "plain" argsSchema (type, properties, required, enum, bounds, allOf/anyOf/...;
see :func:`is_plain_schema`) is checked by the small evaluator below, with the standard library
only. Any other schema (pattern, format, $ref, ...) is checked by ``jsonschema`` (draft 2020-12
unless the schema names another), which must then be importable; without it the plugin refuses
to start, naming the command.

    from c2_plugin_sdk import Plugin

    plugin = Plugin()  # reads ./plugin.json

    @plugin.command("greeter.hello")
    async def hello(args, ctx):
        return {"greeting": f"Hello, {args.get('name', 'world')}!"}

    plugin.run()  # exits when stdin closes
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, NoReturn, Union

__all__ = [
    "__version__",
    "PROTOCOL_VERSION",
    "MAX_LINE_BYTES",
    "MAX_LOG_BYTES",
    "Codes",
    "Context",
    "Host",
    "Plugin",
    "PluginError",
    "define_plugin",
    "is_plain_schema",
    "plain_violations",
]

__version__ = "0.1.0"
#: The C2 Plugin Protocol version this SDK speaks.
PROTOCOL_VERSION = "1.0.0"
#: The largest line read or written, in bytes (the host's frame bound).
MAX_LINE_BYTES = 8 * 1024 * 1024
#: The longest ``log`` message the host keeps, in bytes; longer ones are cut here.
MAX_LOG_BYTES = 64 * 1024

LOG_LEVELS = ("error", "warn", "info", "debug", "trace")
_RESERVED_EVENT_PREFIXES = ("engine/", "host/", "plugins/", "kernel/")
_RESERVED_EVENTS = ("skills/changed", "scenes/changed")


class Codes:
    """JSON-RPC error codes of the protocol."""

    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    COMMAND_FAILED = -32000
    UNKNOWN_COMMAND = -32001


_NO_DATA: Any = object()


class PluginError(Exception):
    """An error a handler raises to choose its JSON-RPC answer: code (default -32000, command
    failed), message and data. A failed ``ctx.call`` raises one carrying the host's error."""

    def __init__(self, message: str, *, code: int = Codes.COMMAND_FAILED, data: Any = _NO_DATA):
        super().__init__(message)
        self.message = message
        self.code = code
        #: The error's ``data``; None when it has none (see :attr:`has_data`).
        self.data: Any = None if data is _NO_DATA else data
        self.has_data = data is not _NO_DATA


@dataclass(frozen=True)
class Host:
    """The host, and the extension-public commands visible from this realm."""

    name: str | None = None
    version: str | None = None
    commands: tuple[str, ...] = ()


@dataclass
class Context:
    """What a command or event handler gets besides its args or payload."""

    #: The directory the host created for this instance's files.
    data_dir: str | None
    #: The project of a project-scoped instance; None for the user-scoped one.
    project_path: str | None
    #: This plugin's entry of the host's plugin config, verbatim.
    config: Any
    host: Host
    _connection: "_Connection" = field(repr=False)

    async def call(self, name: str, args: Any = None) -> Any:
        """Calls an extension-public host command (``git.status``, ...); raises PluginError."""
        return await self._connection.call(name, {} if args is None else args)

    def emit(self, name: str, payload: Any = None) -> None:
        """Emits an event on the host's JSON bus; host event names are refused."""
        self._connection.emit(name, payload)

    def log(self, level: str, message: str) -> None:
        """Sends a ``log`` notification (cut at 64 KiB)."""
        self._connection.log(level, message)


Handler = Callable[[Any, Context], Union[Any, Awaitable[Any]]]
Validator = Callable[[Any], "list[dict[str, str]]"]


class Plugin:
    """A plugin runtime: the bundle's manifest and one handler per declared command."""

    def __init__(
        self,
        manifest_path: str | os.PathLike[str] = "plugin.json",
        *,
        manifest: Mapping[str, Any] | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        shutdown_grace: float = 0.5,
        max_reported_violations: int = 10,
    ) -> None:
        self.manifest_path = os.path.abspath(manifest_path)
        self.manifest: Mapping[str, Any] = (
            manifest if manifest is not None else _read_manifest(self.manifest_path)
        )
        codetwo = (self.manifest.get("extensions") or {}).get("dev.codetwo") or {}
        commands = codetwo.get("commands")
        self.declared: list[Mapping[str, Any]] = commands if isinstance(commands, list) else []
        self.max_line_bytes = max_line_bytes
        self.shutdown_grace = shutdown_grace
        self.max_reported_violations = max_reported_violations
        self.handlers: dict[str, Handler] = {}
        self.event_handlers: dict[str, Handler] = {}
        self._problems: list[str] = []

    def command(self, command_id: str, handler: Handler | None = None) -> Any:
        """Binds the handler of a declared command: ``(args, ctx) -> result``, sync or async.
        Without ``handler`` it is a decorator."""
        if handler is None:
            def decorate(function: Handler) -> Handler:
                self.command(command_id, function)
                return function

            return decorate
        if command_id in self.handlers:
            self._problems.append(f"two handlers for {command_id}")
        self.handlers[command_id] = handler
        return self

    def on(self, name: str, handler: Handler | None = None) -> Any:
        """Subscribes to an event: ``(payload, ctx) -> None``, sync or async. The names are
        listed in ``initialize.events``. Without ``handler`` it is a decorator."""
        if handler is None:
            def decorate(function: Handler) -> Handler:
                self.on(name, function)
                return function

            return decorate
        self.event_handlers[name] = handler
        return self

    def confirmation(self) -> dict[str, Any]:
        """The ``initialize`` answer: exactly the manifest's commands and schemas."""
        commands = []
        for declared in self.declared:
            entry: dict[str, Any] = {"name": declared.get("id")}
            if "description" in declared:
                entry["description"] = declared["description"]
            if "argsSchema" in declared:
                entry["schema"] = declared["argsSchema"]
            commands.append(entry)
        return {
            "name": self.manifest.get("name"),
            "version": self.manifest.get("version", "0.0.0"),
            "protocolVersion": PROTOCOL_VERSION,
            "commands": commands,
            "events": list(self.event_handlers),
        }

    def prepare(self) -> dict[str, Validator]:
        """Checks handlers against declarations and compiles every schema; raises
        ``ValueError`` naming what is wrong."""
        problems = list(self._problems)
        ids: set[str] = set()
        for declared in self.declared:
            command_id = str(declared.get("id"))
            if command_id in ids:
                problems.append(f"{command_id} is declared twice in plugin.json")
            ids.add(command_id)
            if command_id not in self.handlers:
                problems.append(f"declared in plugin.json but no handler bound: {command_id}")
        for command_id in self.handlers:
            if command_id not in ids:
                problems.append(
                    f"handler bound but not declared in plugin.json: {command_id}; declare it"
                    " under extensions.dev.codetwo.commands or remove the handler"
                )
        if problems:
            raise ValueError("; ".join(problems))
        validators: dict[str, Validator] = {}
        for declared in self.declared:
            if "argsSchema" not in declared:
                continue
            validators[declared["id"]] = _validator(declared["id"], declared["argsSchema"])
        return validators

    def run(self) -> NoReturn:
        """Serves the protocol on stdin and stdout until stdin closes, then exits the process.
        Stdout is reserved for frames from here on."""
        name = self.manifest.get("name") or "plugin"
        try:
            validators = self.prepare()
        except ValueError as error:
            sys.stderr.write(f"{name}: {error}\n")
            sys.stderr.flush()
            os._exit(1)
        sys.stdout.flush()
        frames = os.fdopen(os.dup(1), "wb")
        # Whatever else writes to file descriptor 1 (print, a child process, a C library) lands
        # on stderr, the log channel.
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        connection = _Connection(self, validators, frames)
        try:
            asyncio.run(connection.serve(sys.stdin.buffer.fileno()))
        except BrokenPipeError:
            pass
        finally:
            try:
                frames.flush()
            except OSError:
                pass
            sys.stderr.flush()
        # Threads a handler left behind must not keep the process: the host is gone.
        os._exit(0)


def define_plugin(
    manifest_path: str | os.PathLike[str] = "plugin.json", **options: Any
) -> Plugin:
    """Creates a plugin from the bundle's manifest (default: plugin.json in the working
    directory, which the host sets to the bundle directory)."""
    return Plugin(manifest_path, **options)


def _read_manifest(path: str) -> Mapping[str, Any]:
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error}") from error
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{path} is not JSON: {error}") from error
    if not isinstance(value, dict):
        raise ValueError(f"{path} is not a JSON object")
    return value


def _validator(command_id: str, schema: Any) -> Validator:
    if is_plain_schema(schema):
        return lambda args: plain_violations(schema, args)
    try:
        from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
        from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped,unused-ignore]
        from jsonschema.validators import validator_for  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise ValueError(
            f"the argsSchema of {command_id} needs jsonschema (it uses keywords beyond the"
            " built-in validator's); install jsonschema where the plugin runs or keep the"
            " schema plain"
        ) from None
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as error:
        raise ValueError(f"the argsSchema of {command_id} does not compile: {error.message}") from None
    compiled = cls(schema)

    def check(args: Any) -> list[dict[str, str]]:
        return [
            {
                "instancePath": "".join("/" + _escape(part) for part in error.absolute_path),
                "schemaPath": "#" + "".join("/" + _escape(part) for part in error.absolute_schema_path),
                "message": error.message,
            }
            for error in compiled.iter_errors(args)
        ]

    return check


def _escape(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _cut(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def _error_object(error: BaseException) -> dict[str, Any]:
    if isinstance(error, PluginError):
        answer: dict[str, Any] = {"code": error.code, "message": error.message}
        if error.has_data:
            answer["data"] = error.data
        return answer
    answer = {"code": Codes.COMMAND_FAILED, "message": str(error) or type(error).__name__}
    data = getattr(error, "data", _NO_DATA)
    if data is not _NO_DATA:
        answer["data"] = data
    return answer


class _LineSplitter:
    """Splits a byte stream into lines of at most ``limit`` bytes; longer lines are skipped."""

    def __init__(
        self, limit: int, on_line: Callable[[bytes], Any], warn: Callable[[str], None]
    ) -> None:
        self.limit = limit
        self.on_line = on_line
        self.warn = warn
        self.pending: list[bytes] = []
        self.size = 0
        self.skipping = False

    def push(self, chunk: bytes) -> None:
        start = 0
        while start < len(chunk):
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline == -1 else newline
            if not self.skipping:
                if self.size + end - start > self.limit:
                    self.skipping = True
                    self.warn(f"skipped an input line over {self.limit} bytes")
                    self.pending, self.size = [], 0
                else:
                    self.pending.append(chunk[start:end])
                    self.size += end - start
            if newline == -1:
                break
            if not self.skipping:
                line = self.pending[0] if len(self.pending) == 1 else b"".join(self.pending)
                self.pending, self.size = [], 0
                self.on_line(line)
            self.skipping = False
            start = newline + 1


class _PipeReader(asyncio.Protocol):
    """Feeds what arrives on stdin to the splitter; sets ``done`` at the end."""

    def __init__(self, splitter: _LineSplitter, done: asyncio.Event) -> None:
        self.splitter = splitter
        self.done = done

    def data_received(self, data: bytes) -> None:
        self.splitter.push(data)

    def eof_received(self) -> bool:
        self.done.set()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.done.set()


def _awaitable(value: Any) -> bool:
    return hasattr(value, "__await__")


class _Connection:
    """One served connection: the handshake, invocations, events, calls to the host."""

    def __init__(self, plugin: Plugin, validators: dict[str, Validator], frames: Any) -> None:
        self.plugin = plugin
        self.validators = validators
        self.frames = frames
        self.name = plugin.manifest.get("name") or "plugin"
        self.init: dict[str, Any] = {}
        self.ended = False
        self.next_call = 1
        self.pending: dict[str, asyncio.Future[Any]] = {}
        self.running: set[asyncio.Task[Any]] = set()

    async def serve(self, fd: int) -> None:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        splitter = _LineSplitter(self.plugin.max_line_bytes, self.line, self.warn)
        reader = os.fdopen(os.dup(fd), "rb", buffering=0)
        try:
            # Pipes and sockets are read on the event loop itself: no thread hand-off per line.
            await loop.connect_read_pipe(lambda: _PipeReader(splitter, done), reader)
        except (OSError, ValueError):
            reader.close()
            # A regular file (`plugin.py < requests.jsonl`) cannot be watched: read it on a thread.
            threaded = _LineSplitter(
                self.plugin.max_line_bytes,
                lambda line: loop.call_soon_threadsafe(self.line, line),
                self.warn,
            )

            def read() -> None:
                while True:
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        break
                    threaded.push(chunk)
                loop.call_soon_threadsafe(done.set)

            threading.Thread(target=read, name="c2-plugin-sdk-stdin", daemon=True).start()
        await done.wait()
        await self.finish()

    async def finish(self) -> None:
        """The input ended: refuse new calls, let running handlers finish within the grace."""
        self.ended = True
        for future in self.pending.values():
            if not future.done():
                future.set_exception(PluginError("the host closed the connection"))
        self.pending.clear()
        if self.running:
            _, left = await asyncio.wait(set(self.running), timeout=self.plugin.shutdown_grace)
            for task in left:
                task.cancel()

    def warn(self, message: str) -> None:
        try:
            sys.stderr.write(f"{self.name}: {message}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def send(self, message: dict[str, Any]) -> None:
        frame = {"jsonrpc": "2.0", **message}
        data = json.dumps(frame, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        encoded = data.encode("utf-8")
        limit = self.plugin.max_line_bytes
        if len(encoded) > limit:
            if "id" in message and "method" not in message:
                encoded = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {
                    "code": Codes.COMMAND_FAILED,
                    "message": f"the answer takes {len(encoded)} bytes, over the {limit}-byte line bound",
                    "data": {"kind": "result_too_large", "bytes": len(encoded), "limit": limit},
                }}).encode("utf-8")
            else:
                raise PluginError(f"a {message.get('method')} message over {limit} bytes cannot be sent")
        self.frames.write(encoded + b"\n")
        self.frames.flush()

    def line(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            message = json.loads(raw)
        except ValueError as error:
            self.warn(f"ignoring a line that is not JSON: {error}")
            return
        if not isinstance(message, dict):
            self.warn("ignoring a line that is not a JSON object")
            return
        has_id = message.get("id") is not None
        method = message.get("method")
        if isinstance(method, str):
            if has_id:
                self.request(message)
            else:
                self.notification(message)
        elif has_id:
            self.response(message)

    def spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    def request(self, message: dict[str, Any]) -> None:
        request_id, method = message["id"], message["method"]
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if method == "initialize":
            self.init = params if isinstance(params, dict) else {}
            self.send({"id": request_id, "result": self.plugin.confirmation()})
        elif method == "command/invoke":
            self.spawn(self.invoke(request_id, params))
        else:
            self.send({"id": request_id, "error": {
                "code": Codes.METHOD_NOT_FOUND, "message": f"method not found: {method}"}})

    async def invoke(self, request_id: Any, params: dict[str, Any]) -> None:
        name = params.get("name")
        handler = self.plugin.handlers.get(name) if isinstance(name, str) else None
        if handler is None:
            self.send({"id": request_id, "error": {
                "code": Codes.UNKNOWN_COMMAND, "message": f"unknown command {name}"}})
            return
        args = params.get("args")
        if args is None:
            args = {}
        validate = self.validators.get(str(name))
        if validate is not None:
            violations = validate(args)
            if violations:
                first = violations[0]
                where = f"`{first['instancePath']}`" if first["instancePath"] else "the top level"
                self.send({"id": request_id, "error": {
                    "code": Codes.INVALID_PARAMS,
                    "message": f"invalid args at {where}: {first['message']}",
                    "data": {"violations": violations[: self.plugin.max_reported_violations]},
                }})
                return
        try:
            result = handler(args, self.context())
            if _awaitable(result):
                result = await result
            answer: dict[str, Any] = {"id": request_id, "result": result}
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a failing handler is a failed call, not a crash
            answer = {"id": request_id, "error": _error_object(error)}
        try:
            self.send(answer)
        except (TypeError, ValueError, PluginError) as error:
            self.send({"id": request_id, "error": _error_object(error)})

    def notification(self, message: dict[str, Any]) -> None:
        if message.get("method") != "event/emit":
            return
        params = message.get("params")
        if not isinstance(params, dict):
            return
        handler = self.plugin.event_handlers.get(str(params.get("name")))
        if handler is None:
            return

        async def deliver() -> None:
            try:
                result = handler(params.get("payload"), self.context())
                if _awaitable(result):
                    await result
            except Exception as error:
                self.warn(f"the handler of event {params.get('name')} failed: {error!r}")

        self.spawn(deliver())

    def response(self, message: dict[str, Any]) -> None:
        key = json.dumps(message["id"])
        future = self.pending.pop(key, None)
        if future is None:
            self.warn(f"a response to unknown id {key}")
            return
        if future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(PluginError(
                str(error.get("message", "the host call failed")),
                code=int(error.get("code", Codes.COMMAND_FAILED)),
                data=error.get("data", _NO_DATA),
            ))
        else:
            future.set_result(message.get("result"))

    def context(self) -> Context:
        host = self.init.get("host") or {}
        return Context(
            data_dir=self.init.get("dataDir"),
            project_path=self.init.get("projectPath"),
            config=self.init.get("config"),
            host=Host(host.get("name"), host.get("version"), tuple(host.get("commands") or ())),
            _connection=self,
        )

    async def call(self, name: str, args: Any) -> Any:
        if self.ended:
            raise PluginError(f"cannot call {name}: the host closed the connection")
        request_id = f"c2-sdk-{self.next_call}"
        self.next_call += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[json.dumps(request_id)] = future
        try:
            self.send({"id": request_id, "method": "command/call", "params": {"name": name, "args": args}})
        except BaseException:
            self.pending.pop(json.dumps(request_id), None)
            raise
        return await future

    def emit(self, name: str, payload: Any) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("an event needs a name")
        if name in _RESERVED_EVENTS or name.startswith(_RESERVED_EVENT_PREFIXES):
            raise PluginError(f"{name} is a host event name and would be dropped; name events after the plugin")
        self.send({"method": "event/emit", "params": {"name": name, "payload": payload}})

    def log(self, level: str, message: str) -> None:
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}")
        self.send({"method": "log", "params": {"level": level, "message": _cut(str(message), MAX_LOG_BYTES)}})


# The plain-schema evaluator.

_PLAIN_DRAFTS = {
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
}
_ANNOTATIONS = {"title", "description", "$comment", "default", "examples", "deprecated", "readOnly", "writeOnly"}
_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}
_COUNTS = {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
_BOUNDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_plain_schema(schema: Any, _root: bool = True) -> bool:
    """Whether the built-in evaluator decides ``schema`` on its own: a schema made only of
    type, properties, additionalProperties, items (one schema), required, enum, const, the
    numeric bounds, the length/count bounds, uniqueItems, allOf, anyOf, oneOf, not and
    annotations, with ``$schema`` (draft 6, 7, 2019-09 or 2020-12) at the root only."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "$schema":
            if not _root or value not in _PLAIN_DRAFTS:
                return False
        elif key == "type":
            types = [value] if isinstance(value, str) else value
            if (
                not isinstance(types, list)
                or not types
                or not all(isinstance(t, str) and t in _TYPES for t in types)
                or len(set(types)) != len(types)
            ):
                return False
        elif key == "properties":
            if not isinstance(value, dict) or not all(is_plain_schema(s, False) for s in value.values()):
                return False
        elif key in ("additionalProperties", "items", "not"):
            if not is_plain_schema(value, False):
                return False
        elif key == "required":
            if (
                not isinstance(value, list)
                or not all(isinstance(r, str) for r in value)
                or len(set(value)) != len(value)
            ):
                return False
        elif key == "enum":
            if not isinstance(value, list):
                return False
        elif key == "const":
            pass
        elif key == "uniqueItems":
            if not isinstance(value, bool):
                return False
        elif key in ("allOf", "anyOf", "oneOf"):
            if not isinstance(value, list) or not value or not all(is_plain_schema(s, False) for s in value):
                return False
        elif key in _COUNTS:
            if not _is_count(value):
                return False
        elif key in _BOUNDS:
            if not _is_number(value):
                return False
        else:
            return False
    return True


def _type_matches(kind: str, value: Any) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "number":
        return _is_number(value)
    if kind == "integer":
        return _is_number(value) and float(value).is_integer()
    if kind == "string":
        return isinstance(value, str)
    return False


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def plain_violations(schema: Any, value: Any, _at: str = "", _schema_at: str = "#") -> list[dict[str, str]]:
    """The violations of ``value`` against a plain ``schema``: ``{instancePath, schemaPath,
    message}`` each, as JSON pointers; empty when it is valid."""
    if schema is True:
        return []
    if schema is False:
        return [{"instancePath": _at, "schemaPath": _schema_at, "message": "no value is allowed here"}]
    out: list[dict[str, str]] = []

    def fail(keyword: str, message: str) -> None:
        out.append({"instancePath": _at, "schemaPath": f"{_schema_at}/{keyword}", "message": message})

    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_matches(t, value) for t in types):
            fail("type", f"{_describe(value)} is not of type {' or '.join(repr(t) for t in types)}")
            return out
    if "enum" in schema and not any(_equal(e, value) for e in schema["enum"]):
        fail("enum", f"{_describe(value)} is not one of {_describe(schema['enum'])}")
    if "const" in schema and not _equal(schema["const"], value):
        fail("const", f"{_describe(schema['const'])} was expected")
    if _is_number(value):
        if "minimum" in schema and value < schema["minimum"]:
            fail("minimum", f"{value} is less than the minimum of {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            fail("maximum", f"{value} is greater than the maximum of {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            fail("exclusiveMinimum", f"{value} is less than or equal to the minimum of {schema['exclusiveMinimum']}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            fail("exclusiveMaximum", f"{value} is greater than or equal to the maximum of {schema['exclusiveMaximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            fail("minLength", f"{_describe(value)} is too short")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            fail("maxLength", f"{_describe(value)} is too long")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            fail("minItems", f"the array has fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            fail("maxItems", f"the array has more than {schema['maxItems']} items")
        if schema.get("uniqueItems") is True:
            if any(_equal(value[i], value[j]) for i in range(len(value)) for j in range(i + 1, len(value))):
                fail("uniqueItems", "the array has non-unique elements")
        if "items" in schema:
            for index, item in enumerate(value):
                out.extend(plain_violations(schema["items"], item, f"{_at}/{index}", f"{_schema_at}/items"))
    if isinstance(value, dict):
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            fail("minProperties", f"the object has fewer than {schema['minProperties']} properties")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            fail("maxProperties", f"the object has more than {schema['maxProperties']} properties")
        for name in schema.get("required", []):
            if name not in value:
                fail("required", f"{_describe(name)} is a required property")
        properties = schema.get("properties", {})
        for key, item in value.items():
            at = f"{_at}/{_escape(key)}"
            if key in properties:
                out.extend(plain_violations(properties[key], item, at, f"{_schema_at}/properties/{_escape(key)}"))
            elif schema.get("additionalProperties") is False:
                out.append({
                    "instancePath": at,
                    "schemaPath": f"{_schema_at}/additionalProperties",
                    "message": f"additional properties are not allowed ({_describe(key)} was unexpected)",
                })
            elif "additionalProperties" in schema:
                out.extend(plain_violations(schema["additionalProperties"], item, at, f"{_schema_at}/additionalProperties"))
    for index, sub in enumerate(schema.get("allOf", [])):
        out.extend(plain_violations(sub, value, _at, f"{_schema_at}/allOf/{index}"))
    if "anyOf" in schema and not any(not plain_violations(s, value, _at) for s in schema["anyOf"]):
        fail("anyOf", f"{_describe(value)} is not valid under any of the given schemas")
    if "oneOf" in schema and sum(1 for s in schema["oneOf"] if not plain_violations(s, value, _at)) != 1:
        fail("oneOf", f"{_describe(value)} is not valid under exactly one of the given schemas")
    if "not" in schema and not plain_violations(schema["not"], value, _at):
        fail("not", f"{_describe(value)} should not be valid under {_describe(schema['not'])}")
    return out
