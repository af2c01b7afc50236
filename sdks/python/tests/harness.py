"""Runs a plugin on this SDK as the host would (a child process on pipes, in its bundle
directory) and speaks the protocol to it."""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

SRC = str(Path(__file__).resolve().parent.parent / "src")


def manifest(commands: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "fixture",
        "version": "1.2.3",
        "extensions": {"dev.codetwo": {
            "standardVersion": "1.2.0",
            "commands": [
                {"id": cid, "title": cid, "description": f"the {cid} command",
                 **({} if schema is None else {"argsSchema": schema})}
                for cid, schema in commands.items()
            ],
            "runtime": {"protocol": "1.0.0", "command": "python3", "args": ["plugin.py"]},
        }},
    }


def bundle(commands: dict[str, Any], source: str) -> Path:
    directory = Path(tempfile.mkdtemp(prefix="c2-sdk-py-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    (directory / "plugin.json").write_text(json.dumps(manifest(commands), indent=2))
    (directory / "plugin.py").write_text(source)
    return directory


class Running:
    def __init__(self, directory: Path, env: dict[str, str] | None = None) -> None:
        environment = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "plugin.py"], cwd=directory, env=environment,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.frames: "queue.Queue[dict[str, Any]]" = queue.Queue()
        self.kept: list[dict[str, Any]] = []
        self.noise: list[str] = []
        self.stderr_chunks: list[bytes] = []
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.frames.put(json.loads(line))
            except ValueError:
                self.noise.append(line.decode(errors="replace"))

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for chunk in iter(lambda: self.process.stderr.read1(65536), b""):
            self.stderr_chunks.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode(errors="replace")

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.process.stdin.flush()

    def next(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for index, frame in enumerate(self.kept):
                if predicate(frame):
                    return self.kept.pop(index)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no matching frame in {timeout} s; stderr:\n{self.stderr}")
            try:
                self.kept.append(self.frames.get(timeout=left))
            except queue.Empty:
                pass

    def request(self, method: str, params: Any) -> dict[str, Any]:
        request_id = self.next_id
        self.next_id += 1
        self.send({"id": request_id, "method": method, "params": params})
        return self.next(lambda f: f.get("id") == request_id and "method" not in f)

    def initialize(self, **extra: Any) -> dict[str, Any]:
        return self.request("initialize", {
            "protocolVersion": "1.0.0",
            "host": {"name": "test", "version": "0.0.0", "commands": ["git.status"]},
            "config": None, "dataDir": "/tmp/data", **extra,
        })

    def invoke(self, name: str, args: Any = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if args is not None:
            params["args"] = args
        return self.request("command/invoke", params)

    def close(self, timeout: float = 10.0) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=timeout)
        time.sleep(0.05)  # let the reader threads take the last bytes
        while True:
            try:
                self.kept.append(self.frames.get_nowait())
            except queue.Empty:
                return code
