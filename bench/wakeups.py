#!/usr/bin/env python3
"""Who wakes whom, where, and how fast: a summary of a scheduler trace of the bench.

Record the trace of a bench phase (root, or perf_event_paranoid <= 1), then summarise it:

    perf record -a -g -e sched:sched_waking,sched:sched_switch -o /tmp/wake.data -- \\
        cargo xtask bench --only invoke
    perf script -i /tmp/wake.data -F comm,pid,tid,cpu,time,event,trace,ip,sym \\
        | python3 bench/wakeups.py

For every waker -> wakee pair with at least --min wake-ups it prints: how long the wakee took
from being woken to running (p50, p90), how often it ran on the waker's CPU, how often the CPU
it ran on had been idle (a wake-up from idle, the slow path on a virtual machine), how often the
waker was preempted by it at once, and the kernel function that woke it (`__wake_up_sync_key`
and `__wake_up_sync` are sync wake-ups: the waker says it is about to sleep).
"""

import argparse
import collections
import re
import sys

EVENT = re.compile(
    r"^\s*(?P<comm>\S.*?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+"
    r"(?P<time>[\d.]+):\s+sched:(?P<event>\w+):\s+(?P<rest>.*)$"
)
FIELD = re.compile(r"(\w+)=(\S+)")
# The first of these in a sched_waking call chain names the kind of wake-up.
WAKE_FUNCTIONS = (
    "__wake_up_sync_key",
    "__wake_up_sync",
    "__wake_up_locked_key",
    "__wake_up",
    "complete_signal",
    "hrtimer_wakeup",
    "futex_wake",
)


def read(lines):
    """Yields (event fields, call chain symbols) for every event of `perf script` output."""
    event, chain = None, []
    for line in lines:
        match = EVENT.match(line)
        if match:
            if event:
                yield event, chain
            event, chain = match.groupdict(), []
        elif event and line.strip():
            parts = line.split()
            if len(parts) >= 2:
                chain.append(parts[1])
    if event:
        yield event, chain


def summarise(lines, minimum):
    names = {}
    pending = {}
    pairs = collections.defaultdict(list)
    for event, chain in read(lines):
        tid, cpu, time = int(event["tid"]), int(event["cpu"]), float(event["time"])
        names[tid] = event["comm"]
        fields = dict(FIELD.findall(event["rest"]))
        if event["event"] == "sched_waking":
            wakee = int(fields["pid"])
            names.setdefault(wakee, fields.get("comm", "?"))
            how = next((f for f in chain if f in WAKE_FUNCTIONS), "other")
            pending[wakee] = (time, tid, cpu, how)
        elif event["event"] == "sched_switch":
            nxt, prev = int(fields["next_pid"]), int(fields["prev_pid"])
            if nxt not in pending:
                continue
            woken, waker, waker_cpu, how = pending.pop(nxt)
            pairs[(waker, nxt)].append(
                (
                    (time - woken) * 1e6,
                    waker_cpu == cpu,
                    fields["prev_comm"].startswith("swapper"),
                    prev == waker and fields["prev_state"].startswith("R"),
                    how,
                )
            )
    for (waker, wakee), rows in sorted(pairs.items(), key=lambda kv: -len(kv[1])):
        n = len(rows)
        if n < minimum:
            continue
        latency = sorted(r[0] for r in rows)
        share = lambda i: 100 * sum(1 for r in rows if r[i]) // n
        how = collections.Counter(r[4] for r in rows).most_common(2)
        print(
            f"{names.get(waker)}({waker}) -> {names.get(wakee)}({wakee}): n={n}, "
            f"woken to running p50 {latency[n // 2]:.1f} us, p90 {latency[int(n * 0.9)]:.1f} us; "
            f"on the waker's CPU {share(1)}%, from idle {share(2)}%, waker preempted {share(3)}%; "
            f"via {', '.join(f'{f} {100 * c // n}%' for f, c in how)}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min", type=int, default=50, help="smallest pair to print")
    args = parser.parse_args()
    summarise(sys.stdin, args.min)


if __name__ == "__main__":
    main()
