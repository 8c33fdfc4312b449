"""The ``hookgate`` executable's entry point.

``hookgate claude-code`` (and ``hookgate codex``, ``hookgate gemini``) runs once per hook
event, so it goes straight to its own small module (the relay to the warm process,
:mod:`hookgate.integrations.claude_code.relay`); every other command loads the full click
CLI (:mod:`hookgate.cli`).
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    from hookgate.integrations.claude_code.startup import is_bridge_call, parse_args

    if is_bridge_call(sys.argv[1:]):
        from hookgate.integrations.claude_code.relay import main as relay_main

        raise SystemExit(relay_main(sys.argv[2:]))
    # Another coding agent's per-event hook call: the same relay to the warm process.
    if len(sys.argv) >= 2 and sys.argv[1] in ("codex", "gemini") \
            and parse_args(sys.argv[2:]) is not None:
        from hookgate.integrations.claude_code.relay import main as relay_main

        raise SystemExit(relay_main(sys.argv[2:], agent=sys.argv[1]))
    from hookgate.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
