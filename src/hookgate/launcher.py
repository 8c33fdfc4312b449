"""The ``hookgate`` executable's entry point.

``hookgate claude-code`` runs once per Claude Code hook event, so it goes straight to its
own small module (the relay to the warm process, :mod:`hookgate.integrations.claude_code.relay`);
every other command loads the full click CLI (:mod:`hookgate.cli`).
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    from hookgate.integrations.claude_code.basics import is_bridge_call, parse_args

    if is_bridge_call(sys.argv[1:]):
        from hookgate.integrations.claude_code.relay import main as relay_main

        raise SystemExit(relay_main(sys.argv[2:]))
    # Another coding agent's per-event hook call: straight to the bridge, no click CLI.
    if len(sys.argv) >= 2 and sys.argv[1] in ("codex", "gemini"):
        bridge_args = parse_args(sys.argv[2:])
        if bridge_args is not None:
            from hookgate.integrations.agent_bridge import contract_for
            from hookgate.integrations.agent_bridge import main as bridge_main

            raise SystemExit(bridge_main(contract_for(sys.argv[1]), bridge_args.config,
                                         bridge_args.gateway))
    from hookgate.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
