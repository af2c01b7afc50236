#!/usr/bin/env python3
"""Plays the plugin side of a recording (conformance/README.md, "Protocol transcripts").

Reads the recording named by C2_TRANSCRIPT (NDJSON: a `c2-plugins-recording` version 1 header,
then one line per frame), walks its frames in order and records its progress in
C2_REPLAY_REPORT after every step, so a runner can tell how far the exchange got even when the
host stops the process. A host frame is read and compared (exactly, or by its members when the
line says `"match": "subset"`; a request's id is the host's own and is never compared); a plugin
frame is written, its id replaced by the live id of the host request it answers; a `raw` line
is written as it is. Standard library only; stdout carries protocol lines only, diagnostics go
to stderr.
"""
import json
import os
import sys


def subset(expected, actual):
    """True when every member of `expected` is in `actual` with an equal value (objects are
    compared member by member, everything else exactly)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and subset(v, actual[k]) for k, v in expected.items()
        )
    return expected == actual


def without_id(message):
    return {k: v for k, v in message.items() if k != "id"} if isinstance(message, dict) else message


def main():
    with open(os.environ["C2_TRANSCRIPT"], encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    report_path = os.environ["C2_REPLAY_REPORT"]
    header, entries = lines[0], lines[1:]
    steps = [e for e in entries if "frame" in e or "raw" in e]
    state = {"steps_done": 0, "total": len(steps), "mismatch": None, "cwd": os.getcwd()}

    def save():
        with open(report_path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(state, f)
        os.replace(report_path + ".tmp", report_path)

    save()
    if header.get("format") != "c2-plugins-recording" or header.get("version") != 1:
        state["mismatch"] = "not a c2-plugins-recording version 1 file"
        save()
        return 3
    out = sys.stdout.buffer
    live_ids = {}
    for index, step in enumerate(steps):
        if step["dir"] == "host->plugin":
            expected = step["frame"]
            line = sys.stdin.buffer.readline()
            if not line:
                state["mismatch"] = f"step {index}: stdin closed while waiting for {expected}"
                save()
                return 3
            try:
                message = json.loads(line)
            except ValueError:
                state["mismatch"] = f"step {index}: the host sent a line that is not JSON: {line[:200]!r}"
                save()
                return 3
            if isinstance(expected, dict) and "method" in expected and "id" in message:
                if "id" in expected:
                    live_ids[json.dumps(expected["id"])] = message["id"]
                expected, compared = without_id(expected), without_id(message)
            else:
                compared = message
            same = subset(expected, compared) if step.get("match") == "subset" else expected == compared
            if not same:
                state["mismatch"] = f"step {index}: expected {step['frame']}, the host sent {message}"
                save()
                return 3
        else:
            # Progress first: a host that stops the process after this line must not lose it.
            state["steps_done"] = index + 1
            save()
            if "raw" in step:
                out.write(step["raw"].encode() + b"\n")
            else:
                frame = step["frame"]
                if isinstance(frame, dict) and "method" not in frame and "id" in frame:
                    frame = dict(frame, id=live_ids.get(json.dumps(frame["id"]), frame["id"]))
                out.write(json.dumps(frame).encode() + b"\n")
            out.flush()
        state["steps_done"] = index + 1
        save()
    # The script is done: behave like a good plugin and leave when stdin closes.
    while sys.stdin.buffer.readline():
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
