"""The ``hookgate`` executable's entry point.

``hookgate claude-code`` runs once per Claude Code hook event, so it goes straight to its
own small module; every other command loads the full click CLI (:mod:`hookgate.cli`).
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    from hookgate.integrations.claude_code.main import is_bridge_call

    if is_bridge_call(sys.argv[1:]):
        from hookgate.integrations.claude_code.main import main as bridge_main

        raise SystemExit(bridge_main(sys.argv[2:]))
    from hookgate.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
