#!/usr/bin/env python3
"""A minimal PicoClaw process hook for the benchmarks: answers every request at once."""

import json
import sys


def main() -> int:
    write = sys.stdout.write
    flush = sys.stdout.flush
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        if message.get("method") == "hook.hello":
            result = {"ok": True}
        elif message.get("method") == "hook.approve_tool":
            result = {"approved": True}
        else:
            result = {"action": "continue"}
        write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
