#!/usr/bin/env python3
"""A deliberately wrong host for the corpus runner's own test (conformance/README.md).

Usage: flip-one-verdict.py CASE COMMAND... BUNDLE_DIR

Runs the real host command on BUNDLE_DIR and prints its JSON unchanged, except that for the
case named CASE it inverts results[0].valid. `cargo xtask validate` checks that the runner
reports exactly that case.
"""
import json
import os
import subprocess
import sys


def main():
    case, command, bundle = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
    done = subprocess.run(command + [bundle], stdout=subprocess.PIPE, check=False)
    document = json.loads(done.stdout)
    if os.path.basename(os.path.dirname(os.path.abspath(bundle))) == case:
        document["results"][0]["valid"] = not document["results"][0]["valid"]
    sys.stdout.write(json.dumps(document))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
