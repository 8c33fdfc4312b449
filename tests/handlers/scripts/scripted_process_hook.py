#!/usr/bin/env python3
"""A process hook for the tests, speaking PicoClaw's JSON-RPC protocol over stdio.

Behaviour comes from the environment and from directives in the tool arguments:

* HOOK_ANSWERS: JSON object, method -> result to send (``{"__error__": msg}`` sends an
  error object instead). Defaults: ``{"action": "continue"}``, approve ``{"approved": true}``.
* HOOK_HELLO: JSON result for hook.hello (default ``{"ok": true, "name": "scripted"}``);
  HOOK_HELLO_SLEEP: seconds to wait before answering it; HOOK_EXIT_ON_START: exit code.
* HOOK_LOG: file that gets one JSON line per message received (with HOOK_TAG as "tag"),
  and ``{"eof": true}`` when stdin closes.
* arguments._sleep: answer after that many seconds (answers may come out of order).
* arguments._gather: N: wait until N such calls have arrived, then answer them in the
  reverse order of their arrival (so a caller that sends one call at a time never gets
  its first answer).
* arguments._crash: exit with that status at once, without answering.
* arguments._noise: before answering, write a non-JSON line, a 2 MiB line, a JSON array,
  an answer for an unknown id, and stderr chatter.
* arguments._echo: answer modify with the arguments plus ``"echoed": true``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

LOCK = threading.Lock()
GATHER = threading.Condition()
ARRIVED: list[object] = []  # ids of _gather calls, in arrival order
ANSWERED: set[object] = set()
ANSWERS = json.loads(os.environ.get("HOOK_ANSWERS") or "{}")
LOG = os.environ.get("HOOK_LOG")
TAG = os.environ.get("HOOK_TAG")


def write(obj: object) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def log(message: dict) -> None:
    if LOG:
        with LOCK, open(LOG, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({**message, "tag": TAG} if TAG else message) + "\n")


def answer(message: dict) -> None:
    method = message.get("method")
    params = message.get("params") or {}
    arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
    if arguments.get("_sleep"):
        time.sleep(float(arguments["_sleep"]))
    if arguments.get("_gather"):
        with GATHER:
            ARRIVED.append(message["id"])
            GATHER.notify_all()
            GATHER.wait_for(lambda: len(ARRIVED) >= int(arguments["_gather"]))
            later = ARRIVED[ARRIVED.index(message["id"]) + 1 :]
            GATHER.wait_for(lambda: ANSWERED.issuperset(later))
    if arguments.get("_noise"):
        with LOCK:
            sys.stdout.write("this is not json\n")
            sys.stdout.write("x" * (2 * 1024 * 1024) + "\n")
            sys.stdout.write("[1, 2, 3]\n")
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": 987654, "result": {}}) + "\n")
            sys.stdout.flush()
        sys.stderr.write("some stderr chatter\n" * 50)
        sys.stderr.flush()
    if arguments.get("_echo"):
        result: object = {
            "action": "modify",
            "call": {"tool": params.get("tool"), "arguments": {**arguments, "echoed": True}},
        }
    elif method in ANSWERS:
        result = ANSWERS[method]
    elif method == "hook.approve_tool":
        result = {"approved": True}
    else:
        result = {"action": "continue"}
    if isinstance(result, dict) and "__error__" in result:
        write({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32000,
                                                                "message": result["__error__"]}})
        return
    write({"jsonrpc": "2.0", "id": message["id"], "result": result})
    if arguments.get("_gather"):
        with GATHER:
            ANSWERED.add(message["id"])
            GATHER.notify_all()


def main() -> int:
    if os.environ.get("HOOK_EXIT_ON_START"):
        return int(os.environ["HOOK_EXIT_ON_START"])
    for raw in sys.stdin:
        line = raw.strip()
        if not line:
            continue
        message = json.loads(line)
        log(message)
        method = message.get("method")
        if "id" not in message:
            continue  # notification
        if method == "hook.hello":
            if os.environ.get("HOOK_HELLO_SLEEP"):
                time.sleep(float(os.environ["HOOK_HELLO_SLEEP"]))
            hello = json.loads(os.environ.get("HOOK_HELLO") or '{"ok": true, "name": "scripted"}')
            write({"jsonrpc": "2.0", "id": message["id"], "result": hello})
            continue
        arguments = (message.get("params") or {}).get("arguments") or {}
        if isinstance(arguments, dict) and arguments.get("_crash"):
            sys.stderr.write("crashing as asked\n")
            sys.stderr.flush()
            os._exit(int(arguments["_crash"]))
        threading.Thread(target=answer, args=(message,), daemon=True).start()
    log({"eof": True})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
