#!/usr/bin/env python3
"""Plays the plugin side of a protocol transcript (conformance/README.md, "Transcripts").

Reads the transcript named by C2_TRANSCRIPT, walks its `script` in order and records its
progress in C2_REPLAY_REPORT after every step, so a runner can tell how far the exchange got
even when the host stops the process. Standard library only; stdout carries protocol lines
only, diagnostics go to stderr.
"""
import json
import os
import sys
import time


def subset(expected, actual):
    """True when every member of `expected` is in `actual` with an equal value (objects are
    compared member by member, everything else exactly)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and subset(v, actual[k]) for k, v in expected.items()
        )
    return expected == actual


def substitute(value, last_id):
    if value == "$id":
        return last_id
    if isinstance(value, dict):
        return {k: substitute(v, last_id) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, last_id) for v in value]
    return value


def main():
    with open(os.environ["C2_TRANSCRIPT"], encoding="utf-8") as f:
        transcript = json.load(f)
    report_path = os.environ["C2_REPLAY_REPORT"]
    script = transcript["script"]
    state = {"steps_done": 0, "total": len(script), "mismatch": None, "cwd": os.getcwd()}

    def save():
        with open(report_path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(state, f)
        os.replace(report_path + ".tmp", report_path)

    save()
    out = sys.stdout.buffer
    last_id = None
    for index, step in enumerate(script):
        if "expect" in step:
            line = sys.stdin.buffer.readline()
            if not line:
                state["mismatch"] = f"step {index}: stdin closed while waiting for {step['expect']}"
                save()
                return 3
            try:
                message = json.loads(line)
            except ValueError:
                state["mismatch"] = f"step {index}: the host sent a line that is not JSON: {line[:200]!r}"
                save()
                return 3
            if not subset(step["expect"], message):
                state["mismatch"] = f"step {index}: expected {step['expect']}, the host sent {message}"
                save()
                return 3
            last_id = message.get("id", last_id)
        elif "send" in step:
            # Progress first: a host that stops the process after this line must not lose it.
            state["steps_done"] = index + 1
            save()
            out.write(json.dumps(substitute(step["send"], last_id)).encode() + b"\n")
            out.flush()
        elif "send_raw" in step:
            state["steps_done"] = index + 1
            save()
            out.write(step["send_raw"].encode() + b"\n")
            out.flush()
        elif "sleep_ms" in step:
            time.sleep(step["sleep_ms"] / 1000)
        elif "exit" in step:
            state["steps_done"] = index + 1
            save()
            return step["exit"]
        else:
            state["mismatch"] = f"step {index}: unknown step {step}"
            save()
            return 3
        state["steps_done"] = index + 1
        save()
    # The script is done: behave like a good plugin and leave when stdin closes.
    while sys.stdin.buffer.readline():
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
